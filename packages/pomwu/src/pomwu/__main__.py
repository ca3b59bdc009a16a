"""`python -m pomwu demo`, `python -m pomwu reproduce` and `python -m pomwu reproduce --tune-step-size`.

``reproduce --tune-step-size`` runs only the tuned-step-size protocol of the README (every learner at its own
step size, tuned on seeds the test never uses) and writes ``reproduce_tuned.json``, ``.md`` and ``.png``.
"""

from __future__ import annotations

import sys

from icml25_shared.cli import run_cli

from pomwu.experiments import demo, reproduce, reproduce_tuned

TUNE_FLAG = "--tune-step-size"


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    tune = TUNE_FLAG in argv
    if tune:
        argv.remove(TUNE_FLAG)
        if argv[:1] != ["reproduce"]:
            raise SystemExit(f"{TUNE_FLAG} applies to reproduce only")
    return run_cli("pomwu", demo=demo, reproduce=reproduce_tuned if tune else reproduce, argv=argv, description=__doc__)


if __name__ == "__main__":
    raise SystemExit(main())
