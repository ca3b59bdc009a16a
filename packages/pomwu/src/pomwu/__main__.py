"""`python -m pomwu demo`, `python -m pomwu reproduce` and `python -m pomwu reproduce --tune-step-size`.

``reproduce --tune-step-size`` runs only the tuned-step-size protocol of the README (every learner at its own
step size, tuned on seeds the test never uses) and writes ``reproduce_tuned.json``, ``.md`` and ``.png``.
"""

from __future__ import annotations

import argparse

from icml25_shared.cli import RunContext, run_cli

from pomwu.experiments import demo, reproduce, reproduce_tuned


def _reproduce_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--tune-step-size",
        action="store_true",
        help="run the tuned-step-size protocol instead (each learner's eta tuned on seeds 10-11, tested on 0-4)",
    )


def _reproduce(ctx: RunContext) -> None:
    (reproduce_tuned if ctx.options["tune_step_size"] else reproduce)(ctx)


def main(argv: list[str] | None = None) -> int:
    return run_cli(
        "pomwu",
        demo=demo,
        reproduce=_reproduce,
        argv=argv,
        description=__doc__,
        reproduce_options=_reproduce_options,
    )


if __name__ == "__main__":
    raise SystemExit(main())
