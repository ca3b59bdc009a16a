"""Public entry points reject a wrong type with TypeError and a wrong value with ValueError, naming it."""

from icml25_shared.testing import assert_rejects

from fmg import FMG, HeuristicChemJudge


def test_sample():
    model = FMG(HeuristicChemJudge()).fit(["CCO", "CCN"])
    assert_rejects(model.grammar_.sample, "n", wrong_type="3", wrong_value=-1)
    assert_rejects(model.grammar_.sample, "context", wrong_type="deep", wrong_value=2, n=2)
    assert_rejects(model.grammar_.sample, "budget", wrong_type=3, wrong_value="none", n=2)
    assert_rejects(model.grammar_.sample, "weights", wrong_type=1.0, wrong_value="softmax", n=2)
    assert_rejects(model.sample, "rejection", wrong_type=0, wrong_value="rule", n=2)
