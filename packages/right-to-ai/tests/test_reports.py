"""Reports: what every report shows, determinism, the JSON round trip, HTML escaping and the PNG."""

import json
import socket

import pytest
from markupsafe import escape
from pytest_socket import SocketBlockedError

from right_to_ai import Assessment, assess, load, similar_cases
from right_to_ai.report import plot_assessment, render, to_html, to_markdown

DATA = load()


@pytest.mark.parametrize("tier", [1, 2, 3])
def test_reports_below_tier_4_list_unmet_gates_and_the_next_transition(tier, tier_answers):
    a = assess(tier_answers[tier])
    mechanism = DATA.tier(tier).transition.mechanism
    assert a.next_transition.mechanism == mechanism
    for text, esc in ((to_markdown(a), str), (to_html(a), lambda t: str(escape(t)))):
        assert esc(mechanism) in text
        assert "Unmet gate indicators" in text
        for q in a.unmet_indicators:
            assert q in text and esc(DATA.question(q).text) in text
    assert json.loads(a.to_json())["next_transition"]["unmet"] == list(a.next_transition.unmet)


def test_tier_4_report_says_there_is_no_next_tier(tier_answers):
    a = assess(tier_answers[4])
    assert a.next_transition is None
    for text in (to_markdown(a), to_html(a)):
        assert "there is no next tier" in text and "Unmet gate indicators" not in text
    assert json.loads(a.to_json())["next_transition"] is None


@pytest.mark.parametrize("tier", [1, 2, 3, 4])
def test_participation_washing_shows_in_reports_iff_it_applies(tier, tier_answers):
    a = assess(tier_answers[tier])
    expected = tier in (2, 3)  # tier 1: no consultation; tier 4: binding decisions
    assert ("participation_washing" in a.warning_codes()) == expected
    for fmt in ("md", "html", "json"):
        assert ("participation_washing" in render(a, fmt)) == expected, fmt
        assert ("Participation-washing risk" in render(a, fmt)) == expected, fmt


@pytest.mark.parametrize("fmt", ["md", "html", "json"])
def test_every_report_shows_data_version_citation_and_unverified_entries(fmt, tier_answers):
    a = assess(tier_answers[2], high_risk=True)
    text = render(a, fmt)
    assert "1.0.0" in text and DATA.citation in text
    assert "tier:2" in text or "tier 2 (" in text
    assert DATA.tier(2).source in text or fmt == "json"
    if fmt != "json":
        assert "Unverified entries used" in text
        assert "structured_feedback" in text and "(unverified)" in text


def test_same_answers_give_byte_identical_reports(tier_answers):
    answers = tier_answers[3]
    first, second = assess(dict(answers)), assess(dict(reversed(list(answers.items()))))
    assert first == second
    for fmt in ("md", "html", "json"):
        assert render(first, fmt).encode() == render(second, fmt).encode()


@pytest.mark.parametrize("kwargs", [{}, {"high_risk": True}])
@pytest.mark.parametrize("tier", [1, 2, 3, 4])
def test_json_round_trip_gives_an_equal_assessment(tier, kwargs, tier_answers):
    a = assess(tier_answers[tier], **kwargs)
    back = Assessment.from_json(a.to_json())
    assert back == a and back.to_json() == a.to_json()


def test_json_round_trip_of_an_incomplete_assessment(tier_answers):
    answers = {q: v for q, v in tier_answers[3].items() if q not in ("data_trust", "feedback_button")}
    a = assess(answers, allow_missing=True)
    back = Assessment.from_json(a.to_json())
    assert back == a and back.missing == ("feedback_button", "data_trust") and back.incomplete


def test_markdown_marks_incomplete_and_high_risk(tier_answers):
    a = assess({"feedback_button": "yes"}, allow_missing=True, high_risk=True)
    md = to_markdown(a)
    assert "**Incomplete**: 18 unanswered" in md and "high-risk domain" in md
    assert "high_risk_without_hybrid_control" in md


def test_html_escapes_the_title(tier_answers):
    page = to_html(assess(tier_answers[1]), title="<script>x</script>")
    assert "<script>x" not in page and "&lt;script&gt;x&lt;/script&gt;" in page


def test_unknown_format_raises(tier_answers):
    with pytest.raises(ValueError, match="fmt must be one of 'html', 'json', 'md'"):
        render(assess(tier_answers[1]), "pdf")


def test_png_of_the_ladder_and_dimensions(tmp_path, tier_answers):
    path = tmp_path / "a.png"
    plot_assessment(assess(tier_answers[3]), path, title="Transit")
    assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and path.stat().st_size > 10_000


@pytest.mark.filterwarnings("ignore:A test tried to use socket")
def test_sockets_are_disabled_in_this_suite():
    with pytest.raises(SocketBlockedError):
        socket.socket(socket.AF_INET, socket.SOCK_STREAM)


@pytest.mark.parametrize("fmt", ["md", "html"])
def test_no_case_study_is_called_similar_without_a_shared_answer(fmt):
    # An all-"no" system shares no yes/partial answer with any case study (Jaccard 0 for all nine); the
    # report listed the first three in file order as "similar" anyway.
    data = load()
    blank = assess({q.id: "no" for q in data.questions})
    text = render(blank, fmt)
    assert not any(c.name in text for c in data.case_studies)
    assert "no case study shares a yes or partial answer with this system" in text
    one = assess(dict({q.id: "no" for q in data.questions}, feedback_button="yes"))
    listed = [s for s in similar_cases(dict(one.answers), k=3) if s.similarity > 0]
    assert listed and all(s.name in render(one, fmt) for s in listed)
