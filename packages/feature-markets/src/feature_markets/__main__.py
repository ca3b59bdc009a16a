"""`python -m feature_markets demo` and `python -m feature_markets reproduce`."""

from __future__ import annotations

from icml25_shared.cli import run_cli

PAPER = "Sommer, Hikri, Amit, Rosenfeld (ICML 2025). Learning Classifiers That Induce Markets."


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
    return run_cli("feature_markets", demo="feature_markets.experiments:demo",
                   reproduce="feature_markets.experiments:reproduce", argv=argv, description=__doc__, paper=PAPER)


if __name__ == "__main__":
    raise SystemExit(main())
