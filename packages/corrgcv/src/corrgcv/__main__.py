"""`python -m corrgcv demo` and `python -m corrgcv reproduce`."""

from __future__ import annotations

from icml25_shared.cli import run_cli

from corrgcv.experiments import demo, reproduce


def main(argv: list[str] | None = None) -> int:
    return run_cli("corrgcv", demo=demo, reproduce=reproduce, argv=argv, description=__doc__)


if __name__ == "__main__":
    raise SystemExit(main())
