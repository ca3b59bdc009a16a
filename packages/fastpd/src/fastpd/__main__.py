"""`python -m fastpd demo` and `python -m fastpd reproduce`.

The experiments are imported inside the commands, and ``reproduce`` imports XGBoost only when it
runs, so that a base install (numpy and scikit-learn) can show ``--help`` and name the extra that
``reproduce`` needs.
"""

from __future__ import annotations

from icml25_shared.cli import run_cli

PAPER = ("Liu, Steensgaard, Wright, Pfister & Hiabu (ICML 2025). "
         "Fast Estimation of Partial Dependence Functions using Trees.")


def main(argv: list[str] | None = None) -> int:
    """Run the ``fastpd`` command line.

    Parameters
    ----------
    argv : list of str, optional
        Arguments (default ``sys.argv[1:]``): ``demo`` or ``reproduce`` with the common options.

    Returns
    -------
    int
        0 on success; 2 when the command needs an extra that is not installed.
    """
    return run_cli("fastpd", demo="fastpd.experiments:demo",
                   reproduce="fastpd.experiments:reproduce", argv=argv, description=__doc__, paper=PAPER,
                   requires={"reproduce": "xgboost"})


if __name__ == "__main__":
    raise SystemExit(main())
