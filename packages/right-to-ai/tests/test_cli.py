"""The command line: assess (file and interactive), assess-many, questionnaire export, demo and reproduce."""

import io
import json
import subprocess
import sys

import pytest
import yaml
from icml25_shared.testing import run_command

from right_to_ai import Assessment, load
from right_to_ai.__main__ import PAPER, blank_questionnaire, main

from .conftest import FIXTURES, TIER_FIXTURES

DATA = load()


@pytest.mark.parametrize("tier", [1, 2, 3, 4])
def test_assess_fixture_files_as_json(tier, capsys):
    assert main(["assess", str(FIXTURES / f"{TIER_FIXTURES[tier]}.yaml"), "--format", "json"]) == 0
    result = Assessment.from_json(capsys.readouterr().out)
    assert result.tier == tier


def test_assess_markdown_and_html_files_with_png(tmp_path, capsys):
    path = FIXTURES / "tier2_user_board.yaml"
    assert main(["assess", str(path), "--output", str(tmp_path / "r.md"), "--png", str(tmp_path / "r.png")]) == 0
    md = (tmp_path / "r.md").read_text()
    assert md.startswith("# Right-to-AI assessment: Company integrating structured feedback from a user board")
    assert "Statutory community audits and advisory boards" in md and (tmp_path / "r.png").stat().st_size > 10_000
    assert main(["assess", str(path), "--format", "html", "--high-risk"]) == 0
    page = capsys.readouterr().out
    assert page.startswith("<!DOCTYPE html>") and "high_risk_without_hybrid_control" in page


def test_assess_bad_file_exits_2_naming_question_and_values(tmp_path, capsys):
    bad = tmp_path / "bad.yaml"
    bad.write_text(yaml.safe_dump({"answers": {"feedback_button": "maybe"}}))
    assert main(["assess", str(bad)]) == 2
    assert "question 'feedback_button' accepts yes, no, unknown; got 'maybe'" in capsys.readouterr().err
    assert main(["assess", str(FIXTURES / "tier1_feedback_button.yaml"), "--data-version", "2.0.0"]) == 2
    assert "accepted versions are: 1.0.0" in capsys.readouterr().err


def test_interactive_questionnaire(monkeypatch, capsys):
    replies = ["maybe", "y"] + ["no"] * 3 + ["yes", "yes"] + [""] * (len(DATA.questions) - 6)
    monkeypatch.setattr(sys, "stdin", io.StringIO("\n".join(replies) + "\n"))
    assert main(["assess", "--interactive", "--format", "json"]) == 0
    out = capsys.readouterr()
    result = json.loads(out.out)
    assert result["tier"] == 2 and result["answers"]["feedback_button"] == "yes"
    assert result["answers"]["community_ownership"] == "unknown"
    assert "feedback_button accepts yes, no, unknown" in out.err  # 'maybe' was asked again


def test_questionnaire_export_yaml_round_trip(tmp_path, capsys):
    path = tmp_path / "q.yaml"
    assert main(["questionnaire", "--export", "yaml", "--output", str(path)]) == 0
    doc = yaml.safe_load(path.read_text())
    assert list(doc["answers"]) == [q.id for q in DATA.questions] and set(doc["answers"].values()) == {None}
    assert main(["assess", str(path)]) == 2  # blank answers are missing
    assert "no answer to 19 question(s)" in capsys.readouterr().err
    doc["answers"].update(feedback_button="yes", structured_feedback="yes", feedback_acted_on="yes")
    path.write_text(yaml.safe_dump(doc))
    assert main(["assess", str(path), "--allow-missing", "--format", "json"]) == 0
    result = json.loads(capsys.readouterr().out)
    assert result["tier"] == 2 and result["incomplete"] and len(result["missing"]) == 16


def test_questionnaire_export_csv_feeds_assess_many(tmp_path, capsys):
    header = blank_questionnaire("csv")
    rows = [{"system": c.name, "high_risk": "false", **c.answers_dict()} for c in DATA.case_studies]
    path = tmp_path / "portfolio.csv"
    cols = header.strip().split(",")
    path.write_text(header + "".join(",".join(f'"{r[c]}"' for c in cols) + "\n" for r in rows))
    assert main(["assess-many", str(path), "--output", str(tmp_path / "out.csv")]) == 0
    import csv

    out = list(csv.DictReader((tmp_path / "out.csv").open()))
    assert [int(r["tier"]) for r in out] == [c.placement_tier for c in DATA.case_studies]
    assert main(["assess-many", str(path)]) == 0
    assert capsys.readouterr().out.splitlines()[1].startswith("Collective Constitutional AI,2,")


def test_demo_writes_table_json_and_png(tmp_path):
    run = run_command(main, "demo", tmp_path, expect=("md", "json", "png"))
    assert run.table.startswith("| # | system | tier |")
    rows = run.result["rows"]
    assert len(rows) == 12 and [r["tier"] for r in rows[:3]] == [1, 3, 4]
    assert rows[0]["warnings"] == "high_risk_without_hybrid_control"
    assert run.result["data_version"] == "1.0.0"


def test_reproduce_rebuilds_the_case_study_table(tmp_path):
    run = run_command(main, "reproduce", tmp_path, expect=("md", "json", "png"))
    summary = run.result["summary"]
    assert summary["case_studies"] == 9 and summary["placements_reproduced"] == 9
    assert summary["verified"] == 0 and summary["candidates"] == 3 and summary["placement_origin_paper"] == 0
    assert summary["tier_counts"] == {"1": 2, "2": 6, "3": 0, "4": 1} and summary["participation_washing"] == 6
    assert summary["paper_table_1"] == "not retrieved"
    assert "| Te Hiku Media" in run.table


def test_importing_the_command_line_imports_no_experiment_code():
    code = "import sys, right_to_ai.__main__; assert 'right_to_ai.experiments' not in sys.modules; print('ok')"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.returncode == 0 and done.stdout.strip() == "ok", done.stderr


def test_help_shows_the_paper_and_commands(capsys):
    with pytest.raises(SystemExit):
        main(["--help"])
    out = capsys.readouterr().out
    assert PAPER[:40] in out and "assess-many" in out and "questionnaire" in out


def _answers_text(**override):
    answers = {q.id: "no" for q in DATA.questions}
    answers.update(override)
    return "answers:\n" + "".join(f"  {k}: \"{v}\"\n" for k, v in answers.items())


def test_duplicate_question_in_an_answers_file_is_an_error(tmp_path, capsys):
    # YAML and JSON loaders keep the last of two equal keys; a file that answers a question twice
    # ("no", then "yes") must not be scored with whichever came last.
    path = tmp_path / "dup.yaml"
    path.write_text(_answers_text() + '  feedback_button: "yes"\n')
    assert main(["assess", str(path)]) == 2
    err = capsys.readouterr().err
    assert "'feedback_button' is answered twice" in err and "lines 2 and 21" in err
    dup_json = tmp_path / "dup.json"
    dup_json.write_text('{"feedback_button": "no", "feedback_button": "yes"}')
    assert main(["assess", str(dup_json), "--allow-missing"]) == 2
    assert "'feedback_button' is answered twice" in capsys.readouterr().err


@pytest.mark.parametrize("text, expected", [
    ("answers: [\n", "not valid YAML"),
    ("answers:\n  - yes\n", "answers must be a mapping of question id to answer, got list"),
    ("answers: yes\n", "answers must be a mapping of question id to answer, got bool"),
    ("- feedback_button\n", "expected a mapping of question id to answer, got list"),
    ("system: [1, 2]\nanswers: {}\n", "system accepts a text name, got [1, 2]"),
])
def test_malformed_answers_file_exits_2_with_a_message(tmp_path, capsys, text, expected):
    path = tmp_path / "bad.yaml"
    path.write_text(text)
    assert main(["assess", str(path), "--allow-missing"]) == 2
    err = capsys.readouterr().err
    assert expected in err and "Traceback" not in err


def test_answers_file_records_and_checks_its_data_version(tmp_path, capsys):
    exported = yaml.safe_load(blank_questionnaire("yaml"))
    assert exported["data_version"] == DATA.version  # the blank questionnaire says which version it asks
    path = tmp_path / "a.yaml"
    path.write_text(f'data_version: "{DATA.version}"\n' + _answers_text(feedback_button="yes"))
    assert main(["assess", str(path), "--format", "json"]) == 0
    assert json.loads(capsys.readouterr().out)["data_version"] == DATA.version
    future = tmp_path / "future.yaml"
    future.write_text('data_version: "9.0.0"\n' + _answers_text())
    assert main(["assess", str(future)]) == 2
    assert "unknown data version '9.0.0'; the accepted versions are: 1.0.0" in capsys.readouterr().err
    assert main(["assess", str(path), "--data-version", "9.0.0"]) == 2
    capsys.readouterr()


def test_cli_missing_answer_message_names_the_flag(tmp_path, capsys):
    path = tmp_path / "partial.yaml"
    path.write_text("answers:\n  feedback_button: \"yes\"\n")
    assert main(["assess", str(path)]) == 2
    err = capsys.readouterr().err
    assert "question 'system_documentation' accepts yes, no, partial, unknown" in err and "--allow-missing" in err


def test_unquoted_yaml_booleans_read_as_yes_and_no(tmp_path, capsys):
    names = [q.id for q in DATA.questions]
    words = ["yes", "on", "true", "no", "off", "false"]
    path = tmp_path / "bools.yaml"
    path.write_text("answers:\n" + "".join(f"  {q}: {words[i % 6]}\n" for i, q in enumerate(names)))
    assert main(["assess", str(path), "--format", "json"]) == 0
    answers = json.loads(capsys.readouterr().out)["answers"]
    assert [answers[q] for q in names] == ["yes" if i % 6 < 3 else "no" for i in range(len(names))]


@pytest.mark.parametrize("flag", ["--output", "--png"])
def test_unwritable_output_exits_2_with_a_message(tmp_path, capsys, flag):
    blocker = tmp_path / "file"
    blocker.write_text("")
    path = FIXTURES / "tier1_feedback_button.yaml"
    assert main(["assess", str(path), flag, str(blocker / "sub" / "out.x")]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: ") and "Traceback" not in err


@pytest.mark.parametrize("command", [["questionnaire", "--export", "csv"], ["assess-many", "TABLE"]])
def test_unwritable_output_of_other_commands_exits_2(tmp_path, capsys, command):
    blocker = tmp_path / "file"
    blocker.write_text("")
    table = tmp_path / "t.csv"
    table.write_text(blank_questionnaire("csv") + "a,false," + ",".join(["no"] * len(DATA.questions)) + "\n")
    argv = [str(table) if a == "TABLE" else a for a in command] + ["--output", str(blocker / "out.csv")]
    assert main(argv) == 2
    assert capsys.readouterr().err.startswith("error: ")


def test_png_without_matplotlib_exits_2_naming_the_extra_and_writes_nothing(tmp_path, capsys, monkeypatch):
    import sys

    monkeypatch.setitem(sys.modules, "matplotlib", None)  # as in a base install without the cli extra
    report = tmp_path / "r.md"
    path = FIXTURES / "tier1_feedback_button.yaml"
    assert main(["assess", str(path), "--output", str(report), "--png", str(tmp_path / "r.png")]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: ") and 'right-to-ai[cli]' in err and not report.exists()
    from right_to_ai import assess, load
    from right_to_ai.report import plot_assessment

    answers = {q.id: "no" for q in load().questions}
    with pytest.raises(ImportError, match=r"right-to-ai\[cli\]"):
        plot_assessment(assess(answers))
