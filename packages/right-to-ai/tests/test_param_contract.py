"""Each public entry point names the parameter in TypeError (wrong type) and ValueError (wrong value)."""

import pytest
from icml25_shared.testing import assert_rejects

from right_to_ai import assess, load, similar_cases
from right_to_ai.portfolio import assess_many
from right_to_ai.report import render, to_html, to_markdown

ANSWERS = {q.id: "no" for q in load().questions}
ASSESSMENT = assess(ANSWERS)


def test_assess():
    assert_rejects(assess, "answers", wrong_type=[("feedback_button", "yes")], wrong_value={"feedback_buton": "yes"})
    for name in ("high_risk", "allow_missing"):  # booleans: no wrong value of the right type exists
        with pytest.raises(TypeError, match=name):
            assess(ANSWERS, **{name: "yes"})


def test_similar_cases():
    assert_rejects(similar_cases, "k", wrong_type=1.5, wrong_value=10, answers=ANSWERS)


def test_reports():
    assert_rejects(render, "fmt", wrong_type=3, wrong_value="pdf", assessment=ASSESSMENT)
    for entry in (to_markdown, to_html):
        assert_rejects(entry, "similar", wrong_type="3", wrong_value=-1, assessment=ASSESSMENT)


def test_assess_many():
    with pytest.raises(TypeError, match="table must be"):
        assess_many(42)
    with pytest.raises(TypeError, match="allow_missing"):  # "no" is a truthy string: it allowed missing answers
        assess_many([ANSWERS], allow_missing="no")
