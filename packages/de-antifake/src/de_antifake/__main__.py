"""Command line: ``python -m de_antifake demo``, ``reproduce`` and ``train --data DIR``.

The experiments are imported only when a command runs, so that ``--help`` works in a base install. A
command that needs an extra of this distribution names it in ``requires`` (e.g. ``{"demo": "demo"}``):
without that extra it prints one line naming the ``pip install`` and exits 2.
"""

from __future__ import annotations

from typing import Any

from icml25_shared.cli import ExtraCommand, run_cli

PAPER = "Fan, Chen, Liu, Zhang, Yu (ICML 2025). Rethinking the Protective Perturbations Against Voice Cloning Attacks."


def _demo(ctx: Any) -> None:
    from de_antifake.experiments import demo

    demo(ctx)


def _reproduce(ctx: Any) -> None:
    from de_antifake.experiments import reproduce

    reproduce(ctx)


def _train(argv: list[str]) -> int:
    from de_antifake.retrain import main as train_main

    return train_main(argv)


TRAIN = ExtraCommand(help="retrain stage 1 and the unguided refiner on a folder of recordings (--data DIR)",
                     run=_train)


def main(argv: list[str] | None = None) -> int:
    """Run a command of the ``de-antifake`` command line.

    Parameters
    ----------
    argv : list of str, optional
        Arguments after the program name (default ``sys.argv[1:]``).

    Returns
    -------
    int
        The exit code: 0 on success, 2 when the command's extra is not installed.
    """
    return run_cli("de_antifake", demo=_demo, reproduce=_reproduce, argv=argv, description=__doc__, paper=PAPER,
                   extra_commands={"train": TRAIN}, requires={})


if __name__ == "__main__":
    raise SystemExit(main())
