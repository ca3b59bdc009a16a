"""Command line: ``python -m corrgcv demo`` and ``python -m corrgcv reproduce``.

``demo`` needs the ``demo`` extra (statsmodels' bundled CO2 and sunspot series); without it the command
prints one line naming the ``pip install`` and exits 2. The experiments are imported only when a command
runs, so that a base install can show ``--help`` and that line.
"""

from __future__ import annotations

from icml25_shared.cli import run_cli

PAPER = (
    "A. Atanasov, J. Zavatone-Veth, C. Pehlevan (ICML 2025). "
    "Risk and cross validation in ridge regression with correlated samples."
)


def main(argv: list[str] | None = None) -> int:
    """Run a command of the ``corrgcv`` command line.

    Parameters
    ----------
    argv : list of str, optional
        Arguments after the program name (default ``sys.argv[1:]``).

    Returns
    -------
    int
        The exit code: 0 on success, 2 when the command's extra is not installed.
    """
    return run_cli(
        "corrgcv",
        demo="corrgcv.experiments:demo",
        reproduce="corrgcv.experiments:reproduce",
        argv=argv,
        description=__doc__,
        paper=PAPER,
        requires={"demo": "demo"},
    )


if __name__ == "__main__":
    raise SystemExit(main())
