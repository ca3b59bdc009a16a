"""Public entry points reject a wrong type with TypeError and a wrong value with ValueError, naming it."""

from icml25_shared.testing import assert_rejects

import pomwu


def test_learners_and_predictors():
    act = lambda learner: learner.act(0)  # noqa: E731 - validated on first use, as scikit-learn validates in fit
    assert_rejects(pomwu.POMWU, "step_size", wrong_type="big", wrong_value=-1.0, call=act, n_actions=[3, 3],
                   n_contexts=2)
    assert_rejects(pomwu.POMWU, "n_contexts", wrong_type=2.5, wrong_value=0, call=act, n_actions=[3, 3])
