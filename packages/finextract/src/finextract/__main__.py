"""`python -m finextract demo` and `python -m finextract reproduce`."""

from __future__ import annotations

from finextract.experiments import demo, reproduce
from icml25_shared.cli import run_cli


def main(argv: list[str] | None = None) -> int:
    return run_cli("finextract", demo=demo, reproduce=reproduce, argv=argv, description=__doc__)


if __name__ == "__main__":
    raise SystemExit(main())
