"""`python -m dsi demo` and `python -m dsi reproduce`.

The experiments are imported inside the commands, so that a base install (numpy and scipy only) can show
``--help`` and name the extra that ``reproduce`` needs.
"""

from __future__ import annotations

from icml25_shared.cli import run_cli

PAPER = "Xiao, Yang & Suh (ICML 2025). Trustworthy Machine Learning through Data-Specific Indistinguishability."


def main(argv: list[str] | None = None) -> int:
    """Run the ``dsi`` command line.

    Parameters
    ----------
    argv : list of str, optional
        Arguments (default ``sys.argv[1:]``): ``demo`` or ``reproduce`` with the common options.

    Returns
    -------
    int
        0 on success; 2 when the command needs an extra that is not installed.
    """
    return run_cli(
        "dsi",
        demo="dsi.experiments:demo",
        reproduce="dsi.experiments:reproduce",
        argv=argv,
        description=__doc__,
        paper=PAPER,
        requires={"reproduce": "peers"},
    )


if __name__ == "__main__":
    raise SystemExit(main())
