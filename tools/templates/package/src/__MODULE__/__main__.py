"""`python -m __MODULE__ demo` and `python -m __MODULE__ reproduce`."""

from __future__ import annotations

from icml25_shared.cli import run_cli

from __MODULE__.experiments import demo, reproduce


def main(argv: list[str] | None = None) -> int:
    return run_cli("__MODULE__", demo=demo, reproduce=reproduce, argv=argv, description=__doc__)


if __name__ == "__main__":
    raise SystemExit(main())
