"""Command line: ``python -m looped_transformers demo`` and ``python -m looped_transformers reproduce``.

The experiments are imported only when a command runs, so that ``--help`` stays fast.
"""

from __future__ import annotations

from typing import Any

from icml25_shared.cli import run_cli

PAPER = ("K. Xu, I. Sato (ICML 2025). On Expressive Power of Looped Transformers: Theoretical Analysis and "
         "Enhancement via Timestep Encoding. PMLR 267:69613-69646.")


def _demo(ctx: Any) -> None:
    from looped_transformers.experiments import demo

    demo(ctx)


def _reproduce(ctx: Any) -> None:
    from looped_transformers.experiments import reproduce

    reproduce(ctx)


def _reproduce_options(parser: Any) -> None:
    parser.add_argument("--protocol", choices=("families", "icl-cpu", "icl-converged", "icl-full", "icl-equal-compute",
                                                 "charlm-converged"), default="families",
                        help="families: ED, ICL and char LM (the quick sizes with --quick); icl-cpu: in-context "
                             "regression past the plateau (2000 steps, 3 seeds, LT r=2, 8, 4, TMLT r=8, LT r=1, "
                             "stopped by a 25 CPU-minute budget); icl-converged: 4000 steps, LT r=2, 8, TMLT "
                             "r=8, LT r=1, 4 (about 30 CPU-minutes); icl-full: 4000 steps, LT r=1..8, TMLT r=8 and "
                             "equal-compute cells (about 40 CPU-minutes on one idle thread); icl-equal-compute: "
                             "LT r=1, 2, 4, 8 at r x steps = 8000, 4 seeds (about 15 CPU-minutes); "
                             "charlm-converged: char LM, LT r=1, 4, TMLT r=4, 3000 steps, 3 seeds, with n-gram "
                             "tables (about 17 CPU-minutes); --quick shrinks any of these to a smoke test")


def main(argv: list[str] | None = None) -> int:
    """Run a command of the ``looped-transformers`` command line.

    Parameters
    ----------
    argv : list of str, optional
        Arguments after the program name (default ``sys.argv[1:]``).

    Returns
    -------
    int
        The exit code: 0 on success.
    """
    return run_cli("looped_transformers", demo=_demo, reproduce=_reproduce, argv=argv, description=__doc__,
                   paper=PAPER, reproduce_options=_reproduce_options)


if __name__ == "__main__":
    raise SystemExit(main())
