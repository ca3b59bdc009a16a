"""Public entry points reject a wrong type with TypeError and a wrong value with ValueError, naming it."""

from icml25_shared.testing import assert_rejects

import pomwu


def test_learners_and_predictors():
    act = lambda learner: learner.act(0)  # noqa: E731 - validated on first use, as scikit-learn validates in fit
    assert_rejects(pomwu.POMWU, "step_size", wrong_type="big", wrong_value=-1.0, call=act, n_actions=[3, 3],
                   n_contexts=2)
    assert_rejects(pomwu.POMWU, "n_contexts", wrong_type=2.5, wrong_value=0, call=act, n_actions=[3, 3])


def test_noisy_oracle():
    predict = lambda oracle: oracle.predict(None, 0)  # noqa: E731 - validated on first use
    assert_rejects(pomwu.NoisyOracle, "error_rate", wrong_type="often", wrong_value=1.5, call=predict, n_contexts=4)
    assert_rejects(pomwu.NoisyOracle, "n_contexts", wrong_type=4.0, wrong_value=0, call=predict, error_rate=0.0)
    assert_rejects(pomwu.NoisyOracle, "random_state", wrong_type="seed", wrong_value=-1, call=predict,
                   n_contexts=4)


def test_online_logistic_regression():
    predict = lambda model: model.predict([0.0, 1.0], 0)  # noqa: E731 - validated on first use
    assert_rejects(pomwu.OnlineLogisticRegression, "step_size", wrong_type="big", wrong_value=0.0, call=predict,
                   n_contexts=3)
    assert_rejects(pomwu.OnlineLogisticRegression, "l2", wrong_type="some", wrong_value=-1.0, call=predict,
                   n_contexts=3)
