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
                   paper=PAPER)


if __name__ == "__main__":
    raise SystemExit(main())
