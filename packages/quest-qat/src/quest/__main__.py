"""`python -m quest demo` and `python -m quest reproduce`."""

from __future__ import annotations

from icml25_shared.cli import run_cli

from quest.experiments import demo, reproduce, reproduce_options

PAPER = ("Panferov, Chen, Tabesh, Castro, Nikdan, Alistarh (ICML 2025). "
         "QuEST: Stable Training of LLMs with 1-Bit Weights and Activations.")


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
    return run_cli("quest", demo=demo, reproduce=reproduce, argv=argv, description=__doc__, paper=PAPER,
                   reproduce_options=reproduce_options)


if __name__ == "__main__":
    raise SystemExit(main())
