"""`python -m kandinsky_cp demo` and `python -m kandinsky_cp reproduce`."""

from __future__ import annotations

from icml25_shared.cli import run_cli

from kandinsky_cp.experiments import demo, reproduce


def main(argv: list[str] | None = None) -> int:
    return run_cli("kandinsky_cp", demo=demo, reproduce=reproduce, argv=argv, description=__doc__)


if __name__ == "__main__":
    raise SystemExit(main())
