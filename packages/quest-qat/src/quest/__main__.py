"""`python -m quest demo` and `python -m quest reproduce` (the experiments load when a command runs)."""

from __future__ import annotations

import argparse
from typing import Any

from icml25_shared.cli import run_cli

PAPER = ("Panferov, Chen, Tabesh, Castro, Nikdan, Alistarh (ICML 2025). "
         "QuEST: Stable Training of LLMs with 1-Bit Weights and Activations.")


def _demo(ctx: Any) -> None:
    from quest.experiments import demo

    demo(ctx)


def _reproduce(ctx: Any) -> None:
    from quest.experiments import reproduce

    reproduce(ctx)


def reproduce_options(parser: argparse.ArgumentParser) -> None:
    """Add ``--scaling`` and ``--gap`` to the ``reproduce`` sub-parser.

    Parameters
    ----------
    parser : argparse.ArgumentParser
        The ``reproduce`` sub-parser.
    """
    parser.add_argument("--scaling", action="store_true",
                        help="the scaling run instead: 3 widths x W1A1/W2A2/W4A4/W8A8/BF16 x 3 seeds, "
                             "same tokens (~10 min on one idle CPU thread, ~35 min on a loaded one); writes "
                             "scaling.{json,md,png}")
    parser.add_argument("--gap", choices=("cpu", "confirm", "width", "full"), default=None,
                        help="precision gaps past the n-gram tables instead: cpu = d=64, FP32/W4A4/W1A1 then "
                             "W8A8/W2A2, 1000 steps, 3 seeds, stopped by a 20 CPU-minute budget; confirm = d=64, "
                             "FP32/W1A1/W4A4, 2000 steps, 3 seeds (~15 CPU-minutes); width = the same at d=128 "
                             "(~35 CPU-minutes), compared with confirm; full = d 64 and "
                             "128, six precisions, 2000 steps (~95 CPU-minutes); writes gap-<name>.{json,md,png}")


def main(argv: list[str] | None = None) -> int:
    """Run ``demo`` or ``reproduce``.

    Parameters
    ----------
    argv : list of str, optional
        Command-line arguments (default ``sys.argv[1:]``).

    Returns
    -------
    int
        The exit code (0 on success).
    """
    return run_cli("quest", demo=_demo, reproduce=_reproduce, argv=argv, description=__doc__, paper=PAPER,
                   reproduce_options=reproduce_options)


if __name__ == "__main__":
    raise SystemExit(main())
