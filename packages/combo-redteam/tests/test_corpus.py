"""A corpus of chat-model outputs (fences, prose, Markdown, refusals, partial answers) and their expected grades."""

import dataclasses
import json
import textwrap
from pathlib import Path

import pytest

from combo_redteam import RuleGrader, benign_suite, grade, parse_subtasks
from combo_redteam.families import apply_steps, parse_problem, render_answer

CORPUS = json.loads((Path(__file__).parent / "fixtures" / "chat_outputs.json").read_text())
SUITE = benign_suite(3, random_state=5)  # arithmetic, code, text; each flagged and control


def _task(family, placement):
    variant = "control" if placement is None else "flagged"
    task = next(t for t in SUITE if t.family == family and t.variant == variant)
    if placement is not None:
        task = dataclasses.replace(task, flag={**task.flag, "difficulty": placement})
    return task


def _fields(task):
    problem = parse_problem(task.problem)
    code = render_answer("code", apply_steps("code", problem.input, problem.steps)) if task.family == "code" else ""
    records = list(task.grader.get("expected", [])) if task.family == "text" else []
    n = task.grader.get("expected") if task.family == "arithmetic" else 0
    return {"n": n, "wrong": n + 1 if isinstance(n, int) else 0, "code": code, "token": task.flag["token"] if task.flag else "",
            "code_indented": textwrap.indent(code, "   "), "records": "\n".join(records), "records_bullets": "\n".join(f"- `{r}`" for r in records),
            "records_numbered": "\n".join(f"{i}. {r}" for i, r in enumerate(records, 1)),
            "records_spaced": "\n".join(r.replace(";", "; ").replace("=", " = ") for r in records),
            "records_reversed": "\n".join(records[::-1])}


@pytest.mark.parametrize("case", CORPUS["answers"], ids=[c["id"] for c in CORPUS["answers"]])
def test_corpus_output_grades_as_expected(case):
    task = _task(case["family"], case["placement"])
    output = case["output"].format(**_fields(task))
    got = grade(task, output)
    expected = case["expected"]
    assert got.success == expected["success"], (output, got)
    assert got.correct == expected["correct"], (output, got)
    assert got.format_failure == expected["format_failure"], (output, got)
    if "detail" in expected:
        assert got.detail == expected["detail"], (output, got)
    if "flag_delivered" in expected:
        assert got.flag_delivered == expected["flag_delivered"], (output, got)
    assert RuleGrader()(task, output) == got


def test_corpus_is_large_and_varied():
    answers = CORPUS["answers"]
    assert len(answers) >= 40
    kinds = {"fence": "```", "bold": "**", "refusal": "can't", "think": "<think>", "bullets": "records_bullets"}
    assert all(any(k in c["output"] for c in answers) for k in kinds.values())
    assert sum(bool(c["expected"]["format_failure"]) for c in answers) >= 5


def test_the_reported_under_counting_cases_now_grade_correctly():
    # benign_suite(3, random_state=5): fenced code, prose numbers, bold numbers, a leading blank line
    flagged_arith, control_arith, _, control_code = SUITE[0], SUITE[1], SUITE[2], SUITE[3]
    fields = _fields(control_code)
    assert grade(control_code, "```python\n" + fields["code"] + "\n```").success
    assert grade(control_arith, "The final number is 7.").success and grade(control_arith, "**7**").success
    token = flagged_arith.flag["token"]
    assert flagged_arith.flag["difficulty"] == 2 and grade(flagged_arith, f"\n{token}\n7").success


def _proposal_fields():
    task = next(t for t in SUITE if t.family == "arithmetic")
    problem = parse_problem(task.problem)
    from combo_redteam.families import Problem, render_problem

    p1 = render_problem(Problem("arithmetic", problem.input, problem.steps[:1]))
    p2 = render_problem(Problem("arithmetic", problem.input, problem.steps[:2]))
    return {"p1": p1, "p2": p2, "p1j": p1.replace("\n", "\\n"), "p2j": p2.replace("\n", "\\n")}, (p1, p2)


@pytest.mark.parametrize("case", CORPUS["proposals"], ids=[c["output"][:20] for c in CORPUS["proposals"]])
def test_proposal_formats_parse_into_the_subtasks(case):
    fields, (p1, p2) = _proposal_fields()
    found = parse_subtasks(case["output"].format(**fields), 3)
    assert len(found) == case["count"]
    if case["count"]:
        assert found == [p1, p2]
        assert parse_problem(found[1]).steps == parse_problem(p2).steps


def test_a_flag_token_in_prose_is_not_read_as_the_number():
    task = _task("arithmetic", 1)
    token = "FLAG-12345678"  # an all-digit token: its digits must not become the answer
    task = dataclasses.replace(task, flag={**task.flag, "token": token})
    got = grade(task, f"The final number is 7.\n{token}\nI added {token} at the end as requested.")
    assert got.extracted == "7" and got.correct
