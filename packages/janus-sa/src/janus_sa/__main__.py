"""`python -m janus_sa demo` and `python -m janus_sa reproduce`."""

from __future__ import annotations

from icml25_shared.cli import run_cli
from janus_sa.experiments import demo, reproduce


def main(argv: list[str] | None = None) -> int:
    return run_cli("janus_sa", demo=demo, reproduce=reproduce, argv=argv, description=__doc__)


if __name__ == "__main__":
    raise SystemExit(main())
