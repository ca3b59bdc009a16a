"""`python -m fastpd demo` and `python -m fastpd reproduce`."""

from __future__ import annotations

from fastpd.experiments import demo, reproduce
from icml25_shared.cli import run_cli


def main(argv: list[str] | None = None) -> int:
    return run_cli("fastpd", demo=demo, reproduce=reproduce, argv=argv, description=__doc__)


if __name__ == "__main__":
    raise SystemExit(main())
