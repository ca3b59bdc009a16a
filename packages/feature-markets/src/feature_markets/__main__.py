"""`python -m feature_markets demo` and `python -m feature_markets reproduce`."""

from __future__ import annotations

from icml25_shared.cli import run_cli

from feature_markets.experiments import demo, reproduce


def main(argv: list[str] | None = None) -> int:
    return run_cli("feature_markets", demo=demo, reproduce=reproduce, argv=argv, description=__doc__)


if __name__ == "__main__":
    raise SystemExit(main())
