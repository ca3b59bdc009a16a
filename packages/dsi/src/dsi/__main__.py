"""`python -m dsi demo` and `python -m dsi reproduce`."""

from __future__ import annotations

from icml25_shared.cli import run_cli

from dsi.experiments import demo, reproduce


def main(argv: list[str] | None = None) -> int:
    return run_cli("dsi", demo=demo, reproduce=reproduce, argv=argv, description=__doc__)


if __name__ == "__main__":
    raise SystemExit(main())
