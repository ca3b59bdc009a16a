"""Reports never contradict their own answers: higher tiers whose own gates are met, partial gates, fixtures."""

import pytest

from right_to_ai import assess, load
from right_to_ai.report import to_html, to_markdown

DATA = load()


def profile(**yes):
    answers = {q.id: "no" for q in DATA.questions}
    answers.update(yes)
    return answers


def test_binding_decisions_data_trust_and_ownership_are_not_called_a_consumer_model():
    a = assess(profile(binding_decisions="yes", data_trust="yes", community_ownership="yes"))
    assert a.tier == 1 and a.higher_tiers_met == (4,) and not a.consistent
    assert "inconsistent_profile" in a.warning_codes()
    assert a.highest_rung_met == DATA.rung("delegated_power").level > a.arnstein_rung
    tier1 = DATA.tier(1)
    for report in (to_markdown(a), to_html(a)):
        assert "also meet the own gate of tier 4 (Citizen control)" in report
        assert "not asserted" in report
        # the tier-1 role and structure appear only as what the answers contradict
        assert f"Public role: {tier1.public_role}" not in report and "governance: corporate-internal" not in report
        assert "without the cumulative gates the answers meet Delegated power" in report


def test_statutory_audit_and_board_with_partial_feedback_is_partial_not_therapy():
    a = assess(profile(feedback_button="yes", structured_feedback="yes", feedback_acted_on="partial",
                       binding_audit="yes", advisory_board="yes"))
    gates = {g.tier: g for g in a.gates}
    assert gates[2].state == "partial" and gates[2].partial == ("feedback_acted_on",) and gates[2].unmet == ()
    assert gates[3].state == "met" and gates[4].state == "unmet"
    assert a.tier == 1 and a.higher_tiers_met == (3,)
    assert {"inconsistent_profile", "partial_gate"} <= set(a.warning_codes())
    partial = next(w for w in a.warnings if w.code == "partial_gate")
    assert "answering yes to feedback_acted_on (now partial) would meet the tier-2 gate" in partial.message
    report = to_markdown(a)
    assert "| 2 | `feedback_acted_on` | partial | partial |" in report
    assert "tier 3 (State regulation)" in report and "Public role: passive consumer" not in report
    # one answer completes it, and then the profile is consistent at tier 3
    done = assess({**dict(a.answers), "feedback_acted_on": "yes"})
    assert done.tier == 3 and done.consistent and "inconsistent_profile" not in done.warning_codes()


@pytest.mark.parametrize(("answers", "tier", "own_gate_tier"), [
    (profile(feedback_button="yes"), 1, 1),                                               # feedback button only
    (profile(structured_feedback="yes", feedback_acted_on="yes", public_consultation="yes"), 2, 2),  # user board
    (profile(binding_audit="yes", advisory_board="yes"), 1, 3),                           # statutory audit + board
    (profile(binding_decisions="yes", data_trust="yes", public_consultation="yes"), 1, 4),  # assembly + data trust
])
def test_the_four_fixtures(answers, tier, own_gate_tier):
    a = assess(answers)
    assert a.tier == tier
    assert max((tier, *a.higher_tiers_met)) == own_gate_tier  # the highest tier whose own gate is met
    assert ("inconsistent_profile" in a.warning_codes()) == (own_gate_tier > tier)
    assert a.consistent == (own_gate_tier == tier)


def test_consistent_profiles_keep_their_role_and_json_round_trip():
    a = assess(profile(feedback_button="yes", structured_feedback="yes", feedback_acted_on="yes"))
    assert a.consistent and a.highest_rung_met == a.arnstein_rung
    tier = DATA.tier(2)
    assert f"Public role: {tier.public_role}; governance: {tier.governance_structure}." in to_markdown(a)
    odd = assess(profile(binding_decisions="yes", data_trust="yes"))
    assert type(odd).from_json(odd.to_json()) == odd


def test_portfolio_flags_the_same_inconsistent_profiles_as_assess():
    import numpy as np

    from right_to_ai.portfolio import assess_many

    rng = np.random.default_rng(0)
    rows = []
    for _ in range(300):
        row = {}
        for q in DATA.questions:
            row[q.id] = str(rng.choice(q.accepted))
        rows.append(row)
    portfolio = assess_many(rows)
    for i, row in enumerate(rows):
        a = assess(row)
        assert portfolio.inconsistent_profile[i] == ("inconsistent_profile" in a.warning_codes())
        assert portfolio.highest_own_gate[i] == max((a.tier, *a.higher_tiers_met))
    assert 0 < portfolio.inconsistent_profile.sum() < len(rows)
