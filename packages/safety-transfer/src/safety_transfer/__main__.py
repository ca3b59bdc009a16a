"""Command line: ``python -m safety_transfer demo`` and ``python -m safety_transfer reproduce``.

The experiments are imported only when a command runs, so that ``--help`` works in a base install. A
command that needs an extra of this distribution names it in ``requires`` (e.g. ``{"demo": "demo"}``):
without that extra it prints one line naming the ``pip install`` and exits 2.
"""

from __future__ import annotations

from typing import Any

from icml25_shared.cli import run_cli

PAPER = "N. Oozeer, D. Nathawani, N. Prakash, M. Lan, A. Harrasse, A. Abdullah (ICML 2025). Activation Space Interventions Can Be Transferred Between Large Language Models. arXiv:2503.04429."


def _reproduce_options(parser: Any) -> None:
    parser.add_argument("--n-seeds", type=int, default=None, help="seeds (default 3; 1 with --quick)")
    parser.add_argument("--alpha", type=float, default=None,
                        help="fix the steering strength instead of the selection rule (diagnosis runs)")


def main(argv: list[str] | None = None) -> int:
    """Run a command of the ``safety-transfer`` command line.

    Parameters
    ----------
    argv : list of str, optional
        Arguments after the program name (default ``sys.argv[1:]``).

    Returns
    -------
    int
        The exit code: 0 on success, 2 when the command's extra is not installed.
    """
    return run_cli("safety_transfer", demo="safety_transfer.experiments:demo",
                   reproduce="safety_transfer.experiments:reproduce", argv=argv, description=__doc__, paper=PAPER,
                   requires={}, reproduce_options=_reproduce_options)


if __name__ == "__main__":
    raise SystemExit(main())
