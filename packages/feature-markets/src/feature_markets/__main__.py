"""`python -m feature_markets demo` and `python -m feature_markets reproduce`."""

from __future__ import annotations

from typing import Any

from icml25_shared.cli import run_cli

PAPER = "Sommer, Hikri, Amit, Rosenfeld (ICML 2025). Learning Classifiers That Induce Markets."


def _demo(ctx: Any) -> Any:
    from feature_markets.experiments import demo  # on first use: --help loads no torch or scikit-learn

    return demo(ctx)


def _reproduce(ctx: Any) -> Any:
    from feature_markets.experiments import reproduce

    return reproduce(ctx)


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
    return run_cli("feature_markets", demo=_demo, reproduce=_reproduce, argv=argv, description=__doc__, paper=PAPER)


if __name__ == "__main__":
    raise SystemExit(main())
