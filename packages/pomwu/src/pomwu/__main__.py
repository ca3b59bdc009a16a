"""``python -m pomwu demo`` and ``python -m pomwu reproduce``.

``demo`` plays zero-sum 3x3 games with predicted contexts (seconds); ``reproduce`` runs the Sioux
Falls traffic-routing experiment (``--quick`` for a seconds-long check).
"""

from __future__ import annotations

from icml25_shared.cli import run_cli

PAPER = "Capitaine, Boursier, Moulines, Jordan, Durmus (ICML 2025). Prediction-aware Learning in Multi-agent Systems."


def main(argv: list[str] | None = None) -> int:
    """Run the ``pomwu`` command line.

    Parameters
    ----------
    argv : list of str, optional
        Arguments (default ``sys.argv[1:]``), e.g. ``["reproduce", "--quick"]``.

    Returns
    -------
    int
        The exit code.
    """
    return run_cli("pomwu", demo="pomwu.experiments:demo",
                   reproduce="pomwu.experiments:reproduce", argv=argv, description=__doc__, paper=PAPER)


if __name__ == "__main__":
    raise SystemExit(main())
