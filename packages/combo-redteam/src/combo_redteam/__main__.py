"""Command line: ``python -m combo_redteam demo`` and ``python -m combo_redteam reproduce``.

The experiments are imported only when a command runs, so that ``--help`` works in a base install. A
command that needs an extra of this distribution names it in ``requires`` (e.g. ``{"demo": "demo"}``):
without that extra it prints one line naming the ``pip install`` and exits 2.
"""

from __future__ import annotations

from icml25_shared.cli import run_cli

PAPER = "E. Jones, A. Dragan, J. Steinhardt (ICML 2025). Adversaries Can Misuse Combinations of Safe Models."


def main(argv: list[str] | None = None) -> int:
    """Run a command of the ``combo-redteam`` command line.

    Parameters
    ----------
    argv : list of str, optional
        Arguments after the program name (default ``sys.argv[1:]``).

    Returns
    -------
    int
        The exit code: 0 on success, 2 when the command's extra is not installed.
    """
    return run_cli("combo_redteam", demo="combo_redteam.experiments:demo",
                   reproduce="combo_redteam.experiments:reproduce", argv=argv, description=__doc__, paper=PAPER,
                   requires={})


if __name__ == "__main__":
    raise SystemExit(main())
