"""Context predictors: oracle, noisy oracle (error rate), online logistic regression vs scikit-learn."""

import numpy as np
import pytest
from sklearn.linear_model import LogisticRegression

from pomwu import (
    NoisyOracle,
    OnlineLogisticRegression,
    OracleContext,
    SGDContextPredictor,
    make_covariates,
    predict_contexts,
)


def test_oracle_is_exact_and_checks_range():
    z = np.arange(10) % 3
    np.testing.assert_array_equal(predict_contexts(OracleContext(n_contexts=3), z), z)
    with pytest.raises(ValueError, match=r"outside the declared set \{0, \.\.\., 2\}"):
        OracleContext(n_contexts=3).predict(None, 3)


def test_noisy_oracle_error_rate_and_errors_are_uniform_over_other_contexts():
    z = np.random.default_rng(0).integers(4, size=20000)
    pred = predict_contexts(NoisyOracle(n_contexts=4, error_rate=0.2, random_state=1), z)
    wrong = pred != z
    # Binomial(20000, 0.2): sd 0.0028, so 4 sd is 0.0113.
    assert abs(wrong.mean() - 0.2) < 0.0113
    counts = np.bincount(pred[wrong & (z == 0)], minlength=4)
    assert counts[0] == 0 and counts[1:].min() > 0.8 * counts[1:].mean()
    with pytest.raises(ValueError, match=r"NoisyOracle: error_rate must be a float in \[0, 1\]"):
        NoisyOracle(n_contexts=4, error_rate=1.5).predict(None, 0)


@pytest.fixture(scope="module")
def stream():
    rng = np.random.default_rng(0)
    z = rng.integers(5, size=3000)
    x, model = make_covariates(z, n_contexts=5, dim=4, noise=0.6, rng=rng)
    return z, x, model


def test_online_logistic_regression_reaches_offline_sklearn_accuracy(stream):
    z, x, _ = stream
    pred = predict_contexts(OnlineLogisticRegression(n_contexts=5), z, x)
    online_acc = np.mean(pred[1500:] == z[1500:])  # after warm-up
    offline = LogisticRegression(max_iter=1000).fit(x[:1500], z[:1500])
    offline_acc = offline.score(x[1500:], z[1500:])
    assert 0.7 < offline_acc < 0.99  # covariates are informative but noisy
    assert online_acc >= offline_acc - 0.03


def test_sklearn_sgd_predictor_agrees_with_ours(stream):
    z, x, _ = stream
    z, x = z[:600], x[:600]
    ours = predict_contexts(OnlineLogisticRegression(n_contexts=5), z, x)
    sgd = predict_contexts(SGDContextPredictor(n_contexts=5), z, x)
    assert sgd[0] == 0
    acc_ours, acc_sgd = np.mean(ours[300:] == z[300:]), np.mean(sgd[300:] == z[300:])
    # sklearn's one-vs-rest SGD learns (chance is 0.2); our softmax SGD is at least as accurate.
    assert acc_sgd > 0.4 and acc_ours >= acc_sgd - 0.02


def test_logistic_regression_validates_covariates():
    m = OnlineLogisticRegression(n_contexts=3)
    m.update(np.zeros(2), 1)
    with pytest.raises(ValueError, match="2"):
        m.predict(np.zeros(3))
    with pytest.raises(ValueError, match="covariates"):
        m.predict(None)
    with pytest.raises(ValueError, match="outside the declared set"):
        m.update(np.zeros(2), 5)
