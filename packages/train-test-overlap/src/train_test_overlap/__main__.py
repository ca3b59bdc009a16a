"""Command line: ``demo``, ``reproduce``, and ``scan`` / ``presets`` / ``report`` / ``sketch`` on your own scenarios and corpus.

The experiments are imported only when a command runs, so that ``--help`` works in a base install.
"""

from __future__ import annotations

from collections.abc import Callable

from icml25_shared.cli import ExtraCommand, run_cli

PAPER = ("A. K. Zhang, K. Klyman, Y. Mai, Y. Levine, Y. Zhang, R. Bommasani, P. Liang (ICML 2025). "
         "Position: Language model developers should report train-test overlap.")


def _command(name: str) -> Callable[[list[str]], int]:
    def run(argv: list[str]) -> int:
        from train_test_overlap.commands import run_command

        return run_command(name, argv)

    return run


def main(argv: list[str] | None = None) -> int:
    """Run a command of the ``train-test-overlap`` command line.

    Parameters
    ----------
    argv : list of str, optional
        Arguments after the program name (default ``sys.argv[1:]``).

    Returns
    -------
    int
        The exit code: 0 on success, 2 when the command's extra is not installed.
    """
    extra = {"scan": ExtraCommand("count test-set n-grams in a corpus; write HELM's stats, n-gram and metrics files", _command("scan")),
             "presets": ExtraCommand("label instances clean/dirty/ambiguous under developers' rules", _command("presets")),
             "report": ExtraCommand("write the overlap report (methodology card, statistics, rules; Markdown, JSON, PNG)",
                                    _command("report")),
             "sketch": ExtraCommand("build a Bloom sketch of a corpus's n-grams (--corpus) or query one (--load)", _command("sketch"))}
    return run_cli("train_test_overlap", demo="train_test_overlap.experiments:demo",
                   reproduce="train_test_overlap.experiments:reproduce", argv=argv, description=__doc__, paper=PAPER,
                   extra_commands=extra, requires={"demo": "gpt4", "reproduce": "gpt4"})


if __name__ == "__main__":
    raise SystemExit(main())
