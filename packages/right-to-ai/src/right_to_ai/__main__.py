"""Command line: ``python -m right_to_ai assess|assess-many|questionnaire|demo|reproduce``.

``assess answers.yaml --format md|html|json`` writes a report (``--interactive`` asks the questions on the
terminal instead); ``assess-many table.csv`` assesses one system per row; ``questionnaire --export yaml|csv``
writes a blank questionnaire; ``demo`` and ``reproduce`` write tables, JSON and PNGs.
"""

from __future__ import annotations

import argparse
import importlib.util
import sys
from pathlib import Path
from typing import Any, TextIO

from icml25_shared.cli import ExtraCommand, run_cli

PAPER = "R. Mushkani, H. Berard, A. Cohen, S. Koseki (ICML 2025, position track). The Right to AI. arXiv 2501.17899."


def _strict_loader() -> Any:
    """A YAML safe loader that rejects a key given twice in one mapping (PyYAML keeps the last silently)."""
    import yaml

    class StrictLoader(yaml.SafeLoader):
        def construct_mapping(self, node: Any, deep: bool = False) -> Any:
            seen: dict[Any, int] = {}
            for key_node, _ in node.value:
                key = self.construct_object(key_node, deep=True)
                line = key_node.start_mark.line + 1
                try:
                    if key in seen:
                        raise ValueError(f"{key!r} is answered twice (lines {seen[key]} and {line}); keep one "
                                         "answer per question")
                    seen[key] = line
                except TypeError:  # an unhashable key; the base constructor reports it
                    continue
            return super().construct_mapping(node, deep=deep)

    return StrictLoader


def read_answers(path: Path) -> tuple[dict[str, Any], str | None, bool, str | None]:
    """Answers, system name, high-risk flag and data version from a YAML or JSON file.

    The file is either a flat mapping of question id to answer, or a mapping with ``answers`` and the
    optional keys ``system``, ``high_risk`` and ``data_version`` (the form ``questionnaire --export yaml``
    writes). A key given twice in one mapping is an error.

    Parameters
    ----------
    path : Path
        The file.

    Returns
    -------
    answers : dict
        Question id to raw answer.
    system : str or None
        The system's name when the file gives one.
    high_risk : bool
        The file's ``high_risk`` (False when absent).
    data_version : str or None
        The data version the answers were given for, when the file names one.

    Raises
    ------
    ValueError
        For a file that is not valid YAML or JSON, a key given twice, or keys and values of the wrong kind;
        the message names the file and what is accepted.
    """
    import yaml

    try:
        doc = yaml.load(path.read_text(encoding="utf-8"), Loader=_strict_loader())  # noqa: S506 - a SafeLoader
    except yaml.YAMLError as err:
        raise ValueError(f"{path}: not valid YAML or JSON: {err}") from None
    except ValueError as err:
        raise ValueError(f"{path}: {err}") from None
    if not isinstance(doc, dict):
        raise ValueError(f"{path}: expected a mapping of question id to answer, got {type(doc).__name__}")
    if "answers" not in doc:
        return doc, None, False, None
    extra = set(doc) - {"answers", "system", "high_risk", "data_version"}
    if extra:
        raise ValueError(f"{path}: unknown top-level key(s) {sorted(map(str, extra))}; accepted: answers, system, "
                         "high_risk, data_version")
    answers = doc["answers"] if doc["answers"] is not None else {}
    if not isinstance(answers, dict):
        raise ValueError(f"{path}: answers must be a mapping of question id to answer, got {type(answers).__name__}")
    high_risk = doc.get("high_risk") or False
    if not isinstance(high_risk, bool):
        raise ValueError(f"{path}: high_risk accepts true or false, got {high_risk!r}")
    system = doc.get("system")
    if system is not None and not isinstance(system, str):
        raise ValueError(f"{path}: system accepts a text name, got {system!r}")
    version = doc.get("data_version")
    if version is not None and not isinstance(version, str):
        raise ValueError(f"{path}: data_version accepts a quoted version such as \"1.0.0\", got {version!r}")
    return answers, system or None, high_risk, version


def ask(data: Any, stdin: TextIO, stdout: TextIO) -> dict[str, str]:
    """Ask every question on a terminal; an empty line means "unknown", an invalid answer is asked again.

    Parameters
    ----------
    data : RightToAIData
        The questionnaire.
    stdin, stdout : text streams
        Where answers come from and prompts go.

    Returns
    -------
    dict of str to str
        Question id to answer.
    """
    answers = {}
    for i, q in enumerate(data.questions, start=1):
        stdout.write(f"\n[{i}/{len(data.questions)}] {q.text}\n  ({q.help})\n")
        while True:
            stdout.write(f"  {' / '.join(q.accepted)} [unknown]: ")
            stdout.flush()
            line = stdin.readline()
            if line == "":
                raise SystemExit("input ended before every question was answered")
            answer = line.strip().lower() or "unknown"
            answer = {"y": "yes", "n": "no", "p": "partial", "u": "unknown"}.get(answer, answer)
            if answer in q.accepted:
                answers[q.id] = answer
                break
            stdout.write(f"  {q.id} accepts {', '.join(q.accepted)}\n")
    return answers


def _write(text: str, output: Path | None) -> None:
    if output is None:
        sys.stdout.write(text)
    else:
        output.parent.mkdir(parents=True, exist_ok=True)
        output.write_text(text, encoding="utf-8")


def _assess(argv: list[str]) -> int:
    from right_to_ai.assess import AnswerError, assess
    from right_to_ai.data import DataVersionError, load
    from right_to_ai.report import FORMATS, plot_assessment, render

    parser = argparse.ArgumentParser(prog="python -m right_to_ai assess", description="Assess one AI system.")
    parser.add_argument("answers", nargs="?", type=Path, help="YAML or JSON answers (omit with --interactive)")
    parser.add_argument("--format", choices=FORMATS, default="md", help="report format (default md)")
    parser.add_argument("--interactive", action="store_true", help="ask the questions on the terminal")
    parser.add_argument("--output", type=Path, default=None, help="write the report here (default stdout)")
    parser.add_argument("--png", type=Path, default=None, help="also write the ladder and dimensions figure here")
    parser.add_argument("--high-risk", action="store_true", help="the system works in a high-risk domain")
    parser.add_argument("--allow-missing", action="store_true", help="score unanswered questions as unknown")
    parser.add_argument("--data-version", default=None, help="data version (default the latest)")
    parser.add_argument("--title", default=None, help="the system's name in the report")
    args = parser.parse_args(argv)
    if (args.answers is None) == (not args.interactive):
        parser.error("give an answers file or --interactive (not both)")
    if args.png is not None and importlib.util.find_spec("matplotlib") is None:
        # checked before anything is written, so a failed run leaves no report behind
        sys.stderr.write('error: --png needs matplotlib: pip install "right-to-ai[cli]"\n')
        return 2
    try:
        version = args.data_version
        if args.interactive:
            data = load(version)
            answers, system, high_risk = ask(data, sys.stdin, sys.stderr), None, False
        else:
            answers, system, high_risk, file_version = read_answers(args.answers)
            if version is not None and file_version is not None and version != file_version:
                raise ValueError(f"{args.answers}: answers given for data {file_version}, --data-version {version}")
            data = load(version or file_version)
        result = assess(answers, data=data, allow_missing=args.allow_missing, high_risk=args.high_risk or high_risk)
    except (AnswerError, DataVersionError, ValueError, OSError) as err:
        hint = " (pass allow_missing=True to score them as unknown)"
        sys.stderr.write(f"error: {str(err).replace(hint, ' (pass --allow-missing to score them as unknown)')}\n")
        return 2
    title = args.title or system or (args.answers.stem if args.answers else "AI system")
    try:
        _write(render(result, args.format, title=title), args.output)
        if args.png is not None:
            plot_assessment(result, args.png, title=title)
    except OSError as err:
        sys.stderr.write(f"error: cannot write the report: {err}\n")
        return 2
    return 0


def _assess_many(argv: list[str]) -> int:
    from right_to_ai.assess import AnswerError
    from right_to_ai.data import DataVersionError, load
    from right_to_ai.portfolio import assess_many

    parser = argparse.ArgumentParser(prog="python -m right_to_ai assess-many",
                                     description="Assess one system per row of a CSV file.")
    parser.add_argument("table", type=Path, help="CSV: one column per question id, optional system and high_risk")
    parser.add_argument("--output", type=Path, default=None, help="write the result CSV here (default stdout)")
    parser.add_argument("--allow-missing", action="store_true", help="score empty cells as unknown")
    parser.add_argument("--data-version", default=None, help="data version (default the latest)")
    args = parser.parse_args(argv)
    try:
        result = assess_many(args.table, data=load(args.data_version), allow_missing=args.allow_missing)
    except (AnswerError, DataVersionError, ValueError, OSError) as err:
        sys.stderr.write(f"error: {err}\n")
        return 2
    if args.output is not None:
        try:
            result.to_csv(args.output)
        except OSError as err:
            sys.stderr.write(f"error: cannot write the table: {err}\n")
            return 2
    else:
        import csv

        rows = result.to_rows()
        writer = csv.DictWriter(sys.stdout, fieldnames=list(rows[0]) if rows else ["system"], lineterminator="\n")
        writer.writeheader()
        writer.writerows(rows)
    return 0


def blank_questionnaire(fmt: str, version: str | None = None) -> str:
    """A blank questionnaire: YAML with each question as a comment, or a CSV header for ``assess-many``.

    Parameters
    ----------
    fmt : {"yaml", "csv"}
        The format.
    version : str, optional
        Data version (default: the latest).

    Returns
    -------
    str
        The text.
    """
    from right_to_ai.data import load

    data = load(version)
    if fmt == "csv":
        return ",".join(["system", "high_risk", *(q.id for q in data.questions)]) + "\n"
    if fmt != "yaml":
        raise ValueError(f"unknown export format {fmt!r}; the accepted formats are: yaml, csv")
    lines = [f"# Right-to-AI questionnaire (data {data.version}). {data.citation}",
             "# Answer every question with one of the values in brackets; quote them (\"yes\").",
             "system: \"\"", "high_risk: false", f"data_version: \"{data.version}\"", "answers:"]
    for q in data.questions:
        lines.append(f"  # {q.text} [{' | '.join(q.accepted)}]")
        lines.append(f"  # {q.help}")
        lines.append(f"  {q.id}:")
    return "\n".join(lines) + "\n"


def _questionnaire(argv: list[str]) -> int:
    from right_to_ai.data import DataVersionError

    parser = argparse.ArgumentParser(prog="python -m right_to_ai questionnaire",
                                     description="Write a blank questionnaire.")
    parser.add_argument("--export", choices=("yaml", "csv"), default="yaml", help="format (default yaml)")
    parser.add_argument("--output", type=Path, default=None, help="write it here (default stdout)")
    parser.add_argument("--data-version", default=None, help="data version (default the latest)")
    args = parser.parse_args(argv)
    try:
        text = blank_questionnaire(args.export, args.data_version)
    except DataVersionError as err:
        sys.stderr.write(f"error: {err}\n")
        return 2
    try:
        _write(text, args.output)
    except OSError as err:
        sys.stderr.write(f"error: cannot write the questionnaire: {err}\n")
        return 2
    return 0


COMMANDS = {
    "assess": ExtraCommand("assess one system from a YAML/JSON answers file or --interactive; md, html or json",
                           _assess),
    "assess-many": ExtraCommand("assess one system per row of a CSV file; writes a CSV", _assess_many),
    "questionnaire": ExtraCommand("write a blank questionnaire (--export yaml|csv)", _questionnaire),
}


def main(argv: list[str] | None = None) -> int:
    """Run a command of the ``right-to-ai`` command line.

    Parameters
    ----------
    argv : list of str, optional
        Arguments after the program name (default ``sys.argv[1:]``).

    Returns
    -------
    int
        The exit code: 0 on success, 2 on bad input or when the command's extra is not installed.
    """
    return run_cli("right_to_ai", demo="right_to_ai.experiments:demo",
                   reproduce="right_to_ai.experiments:reproduce", argv=argv, description=__doc__, paper=PAPER,
                   extra_commands=COMMANDS, requires={})


if __name__ == "__main__":
    raise SystemExit(main())
