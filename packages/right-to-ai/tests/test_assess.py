"""assess: the fixtures' tiers, monotonicity, case-study placements, warnings, missing answers, errors."""

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from right_to_ai import AnswerError, DataVersionError, assess, load, similar_cases

DATA = load()
IDS = [q.id for q in DATA.questions]
ORDER = {"no": 0, "unknown": 0, "partial": 1, "yes": 2}


def answer_sets():
    return st.fixed_dictionaries({q.id: st.sampled_from(q.accepted) for q in DATA.questions})


def all_no():
    return {qid: "no" for qid in IDS}


@pytest.mark.parametrize("tier", [1, 2, 3, 4])
def test_fixtures_land_on_their_tier(tier, tier_answers):
    a = assess(tier_answers[tier])
    assert a.tier == tier
    assert a.tier_name == DATA.tier(tier).name
    assert DATA.rung(a.arnstein_rung).tier == tier  # the rung lies in the tier's rungs


def test_fixture_rungs_and_scores(tier_answers):
    rungs = [assess(tier_answers[t]).arnstein_rung_name for t in (1, 2, 3, 4)]
    assert rungs == ["Therapy", "Consultation", "Placation", "Delegated power"]
    s = assess(tier_answers[1]).dimension_scores
    assert (s.agency, s.transparency, s.inclusivity) == (1 / 7, 0.0, 0.0)


def test_gates_are_cumulative(tier_answers):
    answers = dict(tier_answers[4], structured_feedback="no")
    a = assess(answers)
    assert a.tier == 1  # binding decisions and a data trust without the lower gates stay at tier 1
    assert a.unmet_indicators == ("structured_feedback",)


@settings(max_examples=2000, deadline=None, derandomize=True)
@given(answers=answer_sets(), question=st.sampled_from(IDS), before=st.sampled_from(["no", "unknown", "partial"]))
def test_turning_an_answer_to_yes_never_lowers_tier_rung_or_scores(answers, question, before):
    accepted = DATA.question(question).accepted
    low = dict(answers, **{question: before if before in accepted else "no"})
    high = dict(answers, **{question: "yes"})
    a, b = assess(low), assess(high)
    assert b.tier >= a.tier and b.arnstein_rung >= a.arnstein_rung
    for dim in ("agency", "transparency", "inclusivity"):
        assert getattr(b.dimension_scores, dim) >= getattr(a.dimension_scores, dim)
    if low[question] == "no":  # a no -> yes flip raises the question's own dimension strictly
        dim = DATA.question(question).dimension
        assert getattr(b.dimension_scores, dim) > getattr(a.dimension_scores, dim)


@settings(max_examples=300, deadline=None, derandomize=True)
@given(answers=answer_sets())
def test_tier_matches_its_definition_by_brute_force(answers):
    a = assess(answers)
    reached = [t.id for t in DATA.tiers if all(answers[q] == "yes" for u in DATA.tiers[: t.id] for q in u.gate)]
    assert a.tier == max(reached)
    eligible = [r.level for r in DATA.rungs if r.tier <= a.tier and all(answers[q] == "yes" for q in r.criteria)]
    assert a.arnstein_rung == max(eligible)
    for dim in ("agency", "transparency", "inclusivity"):
        qs = [q for q in DATA.questions if q.dimension == dim]
        expected = sum({"yes": 1.0, "partial": 0.5}.get(answers[q.id], 0.0) for q in qs) / len(qs)
        assert getattr(a.dimension_scores, dim) == pytest.approx(expected, abs=1e-15)


@pytest.mark.parametrize("case", DATA.case_studies, ids=lambda c: c.id)
def test_case_studies_reproduce_their_recorded_placement(case):
    assert assess(case.answers_dict()).tier == case.placement_tier


def test_case_study_placements_are_ours_and_unverified():
    assert [c.placement_tier for c in DATA.case_studies] == [2, 2, 2, 2, 4, 2, 1, 1, 2]
    assert {c.placement_origin for c in DATA.case_studies} == {"ours"}
    assert [c.candidate for c in DATA.case_studies] == [False] * 6 + [True] * 3
    assert not any(c.verified for c in DATA.case_studies)


def test_participation_washing_iff_consultation_without_decision_rights():
    base = all_no()
    assert "participation_washing" not in assess(base).warning_codes()  # no consultation
    for q in DATA.signals.consultation:
        consulted = dict(base, **{q: "partial" if "partial" in DATA.question(q).accepted else "yes"})
        assert "participation_washing" in assess(consulted).warning_codes(), q
        for d in DATA.signals.decision_rights:  # decision rights remove it
            assert "participation_washing" not in assess(dict(consulted, **{d: "yes"})).warning_codes(), (q, d)
    only_rights = dict(base, binding_decisions="yes")  # decision rights without consultation: no warning
    assert "participation_washing" not in assess(only_rights).warning_codes()


@settings(max_examples=400, deadline=None, derandomize=True)
@given(answers=answer_sets())
def test_participation_washing_rule_on_random_answers(answers):
    consulted = any(answers[q] in ("yes", "partial") for q in DATA.signals.consultation)
    decides = any(answers[q] == "yes" for q in DATA.signals.decision_rights)
    assert ("participation_washing" in assess(answers).warning_codes()) == (consulted and not decides)


def test_high_risk_needs_hybrid_expert_and_citizen_control(tier_answers):
    answers = tier_answers[3]
    assert "high_risk_without_hybrid_control" not in assess(answers).warning_codes()  # not high risk
    warned = assess(answers, high_risk=True)
    assert "high_risk_without_hybrid_control" in warned.warning_codes()
    assert "citizen control" in warned.warnings[[w.code for w in warned.warnings].index(
        "high_risk_without_hybrid_control")].message
    hybrid = dict(answers, joint_decisions="yes")
    assert "high_risk_without_hybrid_control" not in assess(hybrid, high_risk=True).warning_codes()
    no_expert = dict(hybrid, expert_oversight="no")
    assert "high_risk_without_hybrid_control" in assess(no_expert, high_risk=True).warning_codes()


def test_unverified_data_warning_lists_what_was_used(tier_answers):
    a = assess(tier_answers[2])
    assert "unverified_data" in a.warning_codes()
    assert {"tier:2", "transition:2->3", "rung:consultation", "signals"} <= set(a.unverified)
    assert sum(k.startswith("question:") for k in a.unverified) == 19
    top = assess(tier_answers[4])
    assert not any(k.startswith("transition:") for k in top.unverified) and top.next_transition is None


def test_next_transition_and_unmet_indicators(tier_answers):
    a = assess(tier_answers[1])
    assert a.next_transition.mechanism == "Structured feedback channels"
    assert a.next_transition.unmet == ("structured_feedback", "feedback_acted_on")
    assert a.unmet_indicators == ("structured_feedback", "feedback_acted_on", "binding_audit", "advisory_board",
                                  "binding_decisions", "data_trust")
    b = assess(tier_answers[3])
    assert (b.next_transition.from_tier, b.next_transition.to_tier) == (3, 4)
    assert b.next_transition.unmet == ("binding_decisions", "data_trust")
    assert assess(tier_answers[4]).unmet_indicators == ()


@settings(max_examples=300, deadline=None, derandomize=True)
@given(answers=answer_sets(), dropped=st.sets(st.sampled_from(IDS), min_size=1))
def test_allow_missing_marks_incomplete_and_never_raises_the_tier(answers, dropped):
    partial = {q: a for q, a in answers.items() if q not in dropped}
    a = assess(partial, allow_missing=True)
    assert a.incomplete and set(a.missing) == dropped and "incomplete" in a.warning_codes()
    assert a.tier <= assess(answers).tier and a.arnstein_rung <= assess(answers).arnstein_rung
    filled_yes = dict(answers, **{q: "yes" for q in dropped})
    assert a.tier <= assess(filled_yes).tier


def test_missing_answer_raises_naming_question_and_values():
    answers = all_no()
    del answers["data_trust"]
    with pytest.raises(AnswerError, match=r"data_trust.*accepts yes, no, partial, unknown.*allow_missing") as err:
        assess(answers)
    assert err.value.question == "data_trust" and err.value.accepted == ("yes", "no", "partial", "unknown")
    answers["data_trust"] = None
    with pytest.raises(AnswerError, match="data_trust"):
        assess(answers)


def test_unknown_question_raises_naming_it_and_the_accepted_ids():
    with pytest.raises(AnswerError, match=r"unknown question 'citizen_jury'.*accepted question ids are: "
                                          r"feedback_button, system_documentation") as err:
        assess(dict(all_no(), citizen_jury="yes"))
    assert err.value.question == "citizen_jury" and "data_trust" in err.value.accepted


@pytest.mark.parametrize(("question", "answer", "accepted"), [
    ("feedback_button", "partial", "yes, no, unknown"),
    ("data_trust", "maybe", "yes, no, partial, unknown"),
    ("binding_audit", 1, "yes, no, unknown"),
    ("advisory_board", ["yes"], "yes, no, partial, unknown"),
])
def test_wrong_answer_type_raises_naming_question_and_values(question, answer, accepted):
    with pytest.raises(AnswerError, match=rf"question '{question}' accepts {accepted}; got") as err:
        assess(dict(all_no(), **{question: answer}))
    assert err.value.question == question


def test_answer_spellings_and_yaml_booleans():
    answers = dict(all_no(), structured_feedback=True, feedback_acted_on=" YES ", data_trust="Partial")
    a = assess(answers)
    assert a.tier == 2 and dict(a.answers)["data_trust"] == "partial"


def test_bad_arguments():
    with pytest.raises(TypeError, match="high_risk"):
        assess(all_no(), high_risk="yes")
    with pytest.raises(TypeError, match="mapping"):
        assess([("feedback_button", "yes")])
    with pytest.raises(DataVersionError, match="accepted versions"):
        assess(all_no(), data=load("0.0.1"))


def test_similar_cases_by_jaccard():
    webuildai = DATA.case_study("webuildai").answers_dict()
    top = similar_cases(webuildai, k=3)
    assert top[0].id == "webuildai" and top[0].similarity == 1.0
    assert [s.similarity for s in top] == sorted((s.similarity for s in top), reverse=True)
    # brute force: Jaccard of the (question, answer) sets answered yes or partial
    mine = {(q, v) for q, v in webuildai.items() if v in ("yes", "partial")}
    for s in top[1:]:
        other = {(q, v) for q, v in DATA.case_study(s.id).answers if v in ("yes", "partial")}
        assert s.similarity == len(mine & other) / len(mine | other)
        assert s.lessons == DATA.case_study(s.id).lessons
    assert similar_cases(all_no(), k=9)[0].similarity == 0.0
    with pytest.raises(ValueError, match=r"k must be an int in \[1, 9\]"):
        similar_cases(webuildai, k=10)


def test_edited_rules_take_effect_through_from_documents():
    from right_to_ai.data import from_documents, read_documents

    docs = read_documents()
    docs["questionnaire"]["answer_values"]["partial"] = 0.25
    docs["tiers"]["tiers"][1]["gate"] = ["structured_feedback"]  # tier 2 without feedback_acted_on
    docs["questionnaire"]["questions"][5]["tier_gate"] = None
    edited = from_documents(docs)
    answers = dict(all_no(), structured_feedback="yes", system_documentation="partial")
    a, b = assess(answers), assess(answers, data=edited)
    assert (a.tier, b.tier) == (1, 2)
    assert a.dimension_scores.transparency == 0.5 / 7 and b.dimension_scores.transparency == 0.25 / 7


def test_numpy_booleans_read_like_python_booleans():
    # assess_many accepted numpy booleans (a DataFrame's bool column) while assess rejected them.
    import numpy as np

    answers = dict(all_no(), feedback_button=np.True_, structured_feedback=np.True_, feedback_acted_on=np.True_,
                   data_trust=np.False_)
    assert assess(answers).tier == 2 and dict(assess(answers).answers)["data_trust"] == "no"


def test_data_of_the_wrong_kind_names_what_is_accepted():
    with pytest.raises(TypeError, match=r"data must be a RightToAIData \(from load\(\)\), got str"):
        assess(all_no(), data="1.0.0")
    with pytest.raises(TypeError, match=r"data must be a RightToAIData"):
        similar_cases(all_no(), data="1.0.0")


def test_unknown_answers_are_named_in_a_warning():
    # "unknown" scores like "no"; a report built on unknowns must say which answers could raise it.
    answers = dict(all_no(), structured_feedback="unknown", data_trust="unknown")
    a = assess(answers)
    warning = next(w for w in a.warnings if w.code == "unknown_answers")
    assert warning.questions == ("structured_feedback", "data_trust")
    assert "2 question(s) answered unknown" in warning.message
    assert "unknown_answers" not in assess(all_no()).warning_codes()
    dropped = {k: v for k, v in answers.items() if k != "feedback_button"}
    partial = assess(dropped, allow_missing=True)  # a missing answer is reported as incomplete, not twice
    assert next(w for w in partial.warnings if w.code == "unknown_answers").questions == warning.questions


def test_pandas_missing_value_is_missing_like_none():
    pd = pytest.importorskip("pandas")
    answers = dict(all_no(), data_trust=pd.NA)
    assert assess(answers, allow_missing=True).missing == ("data_trust",)
    with pytest.raises(AnswerError, match="no answer to 1 question"):
        assess(answers)
