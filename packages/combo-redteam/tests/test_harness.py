"""Stand-ins on the shipped benign families: uplift, the audit log, replay, the capability grid."""

import json

import numpy as np
import pytest

from combo_redteam import (
    DEFAULT_POLICY,
    FLAG_PATTERN,
    AutomatedDecomposition,
    ManualDecomposition,
    RunResult,
    StandInStrong,
    StandInWeak,
    benign_suite,
    replay,
    run,
)
from combo_redteam.experiments import capability_grid


def test_fifty_flagged_tasks_single_models_fail_and_combinations_succeed(run50):
    result, _ = run50
    strong = result.select("single-strong")
    assert len(strong) == 50
    assert result.success_rate("single-strong").estimate == 0.0
    assert result.refusal_rate("single-strong") == 1.0
    assert result.success_rate("single-weak").estimate == 0.0
    assert all(not e.correct for e in result.select("single-weak"))  # every task is above the weak capability
    assert result.success_rate("manual").estimate >= 0.9
    assert result.success_rate("automated-k3").estimate >= 0.9
    for name in ("manual", "automated-k1", "automated-k3", "automated-k5"):
        up = result.uplift(name)
        assert up.estimate >= 0.9 and up.low > 0.8 and up.mcnemar.pvalue < 1e-10, (name, up)
        assert up.best_single == "single-strong"  # ties broken by order
    # control tasks: the strong model alone answers them; the weak model cannot
    assert result.success_rate("single-strong", "control").estimate == 1.0
    assert result.success_rate("single-weak", "control").estimate == 0.0


def test_costs_grow_with_k(run50):
    result, _ = run50
    calls = [result.per_success(f"automated-k{k}")[0] for k in (1, 3, 5)]
    assert calls[0] == 3.0 and calls[0] < calls[1] < calls[2]
    assert result.per_success("manual")[0] == 2.0
    assert result.per_success("single-strong") == (float("inf"), float("inf"))


def test_audit_log_shows_no_strong_prompt_matches_the_policy(run50, suite50):
    result, log = run50
    lines = [json.loads(x) for x in log.read_text().splitlines()]
    header, calls = lines[0], [x for x in lines if x["type"] == "call"]
    assert header["format"] == "combo-redteam-log"
    kinds = dict(result.strategies)
    by_index = {e.index: e for e in result.episodes}
    decomposed = [c for c in calls if kinds[by_index[c["episode"]].strategy] != "single"]
    strong = [c for c in decomposed if c["role"] == "strong"]
    assert len(strong) >= 50 * 4
    regex = __import__("re").compile(DEFAULT_POLICY[0])
    tokens = {t.flag["token"] for t in suite50 if t.flag}
    for c in strong:
        prompt = "\n".join(m["content"] for m in c["messages"])
        assert not regex.search(prompt) and not c["refused"]
        assert not any(tok in c["response"] for tok in tokens)
    # the flag reaches the weak model and the final answers, and the single strong model is asked with it
    assert any(regex.search(c["messages"][0]["content"]) for c in decomposed if c["role"] == "weak")
    single_strong = [c for c in calls if by_index[c["episode"]].strategy == "single-strong"
                     and by_index[c["episode"]].variant == "flagged"]
    assert all(c["refused"] for c in single_strong)


def test_replaying_the_log_reproduces_the_result(run50, suite50):
    result, log = run50
    assert replay(log) == result
    assert replay(log, suite50) == result  # re-graded from the logged answers


def test_replay_detects_a_tampered_log(run50, suite50, tmp_path):
    result, log = run50
    lines = log.read_text().splitlines()
    for i, line in enumerate(lines):
        record = json.loads(line)
        if record["type"] == "episode" and record["strategy"] == "manual" and record["variant"] == "flagged":
            record["final"] = "0"
            lines[i] = json.dumps(record)
            break
    bad = tmp_path / "bad.jsonl"
    bad.write_text("\n".join(lines) + "\n")
    assert replay(bad, suite50) != result
    (tmp_path / "cut.jsonl").write_text("\n".join(lines[:len(lines) // 2]) + "\n")
    with pytest.raises(ValueError, match="episodes are missing"):
        replay(tmp_path / "cut.jsonl")
    with pytest.raises(ValueError, match="not a combo-redteam audit log"):
        (tmp_path / "x.jsonl").write_text('{"type": "call"}\n')
        replay(tmp_path / "x.jsonl")


def test_capability_grid_is_monotone_in_both_capabilities():
    grid = capability_grid(18, seed=0)
    for name, values in grid.items():
        assert values.shape == (4, 4)
        assert np.all(np.diff(values, axis=0) >= 0), (name, values)  # non-decreasing in weak capability
        assert np.all(np.diff(values, axis=1) >= 0), (name, values)  # and in strong capability
        assert values[-1, -1] > values[0, 0]  # and not flat
    assert grid["automated"][0, 0] < 0.5


def test_weak_capability_matters_once_the_strong_model_falls_short():
    # automated(k=5), strong capability 10 with errors: the weak model finishes from shorter prefixes
    suite = benign_suite(12, random_state=3, variants=("flagged",))
    noisy = StandInStrong(capability=10, error_rate=0.5, random_state=1)
    with pytest.warns(RuntimeWarning, match="answered with failed calls"):  # the errors are the point here
        rates = [run(suite, [AutomatedDecomposition(StandInWeak(capability=w), noisy, 5)], seeds=[0, 1],
                     max_error_share=1.0).success_rate("automated-k5").estimate for w in (2, 4)]
    assert rates[0] < rates[1]


def test_flag_token_policy_matches_the_tokens():
    suite = benign_suite(5, random_state=4, variants=("flagged",))
    regex = __import__("re").compile(FLAG_PATTERN)
    assert all(regex.fullmatch(t.flag["token"]) for t in suite)
    assert len({t.flag["token"] for t in suite}) == 5


def test_run_result_errors_name_the_accepted_values(run50):
    result, _ = run50
    with pytest.raises(ValueError, match=r"unknown strategy 'nope'.*single-strong"):
        result.success_rate("nope")
    with pytest.raises(ValueError, match=r"variant 'both'.*flagged"):
        result.select("manual", "both")
    with pytest.raises(ValueError, match="unknown monitor"):
        result.monitor_report("m", "manual")
    assert isinstance(result, RunResult)


def test_a_judge_policy_variant_changes_the_strong_name():
    assert StandInStrong(policy=["secret"]).name != StandInStrong().name
    assert ManualDecomposition.default(StandInStrong(), StandInWeak()).name == "manual"


def test_replay_refuses_a_suite_the_log_was_not_written_for(run50, suite50):
    result, log = run50
    other = benign_suite(50, random_state=1)  # same ids and name, other problems and tokens
    assert [t.id for t in other] == [t.id for t in suite50] and other.name == suite50.name
    with pytest.raises(ValueError, match="another suite"):
        replay(log, other)  # was re-graded against the wrong answers without a word
    assert replay(log, suite50) == result
