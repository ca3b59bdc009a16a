"""Command line: ``python -m fmg demo`` and ``python -m fmg reproduce``.

The experiments are imported only when a command runs, so that ``--help`` works in a base install. A
command that needs an extra of this distribution names it in ``requires`` (e.g. ``{"demo": "demo"}``):
without that extra it prints one line naming the ``pip install`` and exits 2.
"""

from __future__ import annotations

from typing import Any

from icml25_shared.cli import run_cli

PAPER = "M. Sun, M. Yuan, Y. Liu, W. Matusik, J. Chen (ICML 2025). Foundation Molecular Grammar: Multi-Modal Foundation Models Induce Interpretable Molecular Graph Languages."


def _reproduce_options(parser: Any) -> None:
    parser.add_argument("--judge", choices=("heuristic", "openai"), default="heuristic",
                        help="heuristic: the offline SMARTS judge; openai: an OpenAI-compatible endpoint "
                             "(key from OPENAI_API_KEY)")
    parser.add_argument("--model", default="gpt-4o", help="model name for --judge openai")
    parser.add_argument("--base-url", default=None, help="endpoint root for --judge openai")
    parser.add_argument("--cache-dir", default=None, help="answer cache folder for --judge openai")


def main(argv: list[str] | None = None) -> int:
    """Run a command of the ``fmg-grammar`` command line.

    Parameters
    ----------
    argv : list of str, optional
        Arguments after the program name (default ``sys.argv[1:]``).

    Returns
    -------
    int
        The exit code: 0 on success, 2 when the command's extra is not installed.
    """
    return run_cli("fmg", demo="fmg.experiments:demo",
                   reproduce="fmg.experiments:reproduce", argv=argv, description=__doc__, paper=PAPER,
                   reproduce_options=_reproduce_options, requires={"reproduce": "selfies"})


if __name__ == "__main__":
    raise SystemExit(main())
