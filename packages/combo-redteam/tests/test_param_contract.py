"""Each public entry point names the parameter in TypeError (wrong type) and ValueError (wrong value)."""

import pytest
from icml25_shared.testing import assert_rejects

from combo_redteam import (
    AnthropicMessagesModel,
    AutomatedDecomposition,
    JudgeGrader,
    LiteLLMModel,
    OpenAICompatibleModel,
    PolicyMonitor,
    RateLimiter,
    SequentialMonitor,
    SingleModel,
    StandInStrong,
    StandInWeak,
    benign_suite,
    run,
)

SUITE = benign_suite(1, random_state=0, variants=("control",))
STRATEGIES = [SingleModel(StandInStrong())]


def test_run():
    for name, wrong_type, wrong_value in (("concurrency", "2", 0), ("max_tokens", 1.5, 0),
                                          ("temperature", "0", -1.0), ("max_error_share", "0.1", 1.5)):
        assert_rejects(run, name, wrong_type=wrong_type, wrong_value=wrong_value, suite=SUITE, strategies=STRATEGIES)
    with pytest.raises(TypeError, match="grader must follow the Grader protocol"):
        run(SUITE, STRATEGIES, grader=object())
    with pytest.raises(TypeError, match="offline"):
        run(SUITE, STRATEGIES, offline="yes")


def test_benign_suite():
    assert_rejects(benign_suite, "n_tasks", wrong_type="3", wrong_value=0)
    assert_rejects(benign_suite, "random_state", wrong_type="0", wrong_value=-1)


def test_stand_ins():
    for entry in (StandInStrong, StandInWeak):
        assert_rejects(entry, "capability", wrong_type=2.5, wrong_value=-1)
        assert_rejects(entry, "refusal_rate", wrong_type="0.1", wrong_value=1.5)
        assert_rejects(entry, "error_rate", wrong_type=None, wrong_value=-0.1)


def test_automated_decomposition():
    assert_rejects(AutomatedDecomposition, "k", wrong_type=2.0, wrong_value=0, weak=StandInWeak(), strong=StandInStrong())


def test_http_clients():
    for entry in (OpenAICompatibleModel, AnthropicMessagesModel):
        valid = {"model": "m", "base_url": "http://127.0.0.1:9/v1"}
        assert_rejects(entry, "max_retries", wrong_type=1.5, wrong_value=-1, **valid)
        assert_rejects(entry, "timeout_s", wrong_type="5", wrong_value=0.0, **valid)
        assert_rejects(entry, "requests_per_minute", wrong_type="60", wrong_value=-1.0, **valid)
        assert_rejects(entry, "base_url", wrong_type=8000, wrong_value="127.0.0.1:8000", model="m")
    assert_rejects(LiteLLMModel, "model", wrong_type=3, wrong_value="")
    assert_rejects(RateLimiter, "requests_per_minute", wrong_type="60", wrong_value=0.0)


def test_monitors():
    assert_rejects(PolicyMonitor, "placement", wrong_type=1, wrong_value="anywhere", patterns=["x"])
    assert_rejects(PolicyMonitor, "action", wrong_type=None, wrong_value="stop", patterns=["x"], placement="episode")
    assert_rejects(SequentialMonitor, "threshold", wrong_type="1.5", wrong_value=float("nan"))


def test_judge_grader():
    assert_rejects(JudgeGrader, "max_tokens", wrong_type=1.5, wrong_value=0, judge=StandInWeak())
    assert_rejects(JudgeGrader, "template", wrong_type=3, wrong_value="no fields", judge=StandInWeak())
