"""scikit-learn's estimator checks on every classifier (fit without budgets: uniform budgets of 1)."""

import numpy as np
import pytest
import sklearn
from sklearn.datasets import make_blobs
from sklearn.utils.estimator_checks import parametrize_with_checks

from feature_markets import (
    BudgetFeatureClassifier,
    FixedPriceStrategicClassifier,
    MarketAwareClassifier,
    MarketLineSearchClassifier,
    NaiveClassifier,
    make_market_data,
)

if tuple(int(part) for part in sklearn.__version__.split(".")[:2]) < (1, 6):
    pytest.skip("expected_failed_checks needs scikit-learn >= 1.6", allow_module_level=True)

# The market-trained classifiers choose their threshold for accuracy *after* users trade; predict() is the
# pre-market prediction, which that choice deliberately gives up, so the 0.83 training-accuracy bar of
# check_classifiers_train (on predict) does not apply to them.
MARKET_TRAINED = {
    "check_classifiers_train": "trained for post-market accuracy; predict() is the pre-market prediction "
    "that the market-aware threshold gives up"
}
EXPECTED_FAILURES = {
    "MarketLineSearchClassifier": MARKET_TRAINED,
    "FixedPriceStrategicClassifier": MARKET_TRAINED,
    "MarketAwareClassifier": MARKET_TRAINED,
}
# Few epochs keep the ~57 checks per estimator fast; the checks test the interface, not accuracy.
ESTIMATORS = [
    NaiveClassifier(epochs=3),
    BudgetFeatureClassifier(epochs=3),
    MarketLineSearchClassifier(epochs=3),
    FixedPriceStrategicClassifier(epochs=3),
    MarketAwareClassifier(epochs=2),
]


@parametrize_with_checks(ESTIMATORS, expected_failed_checks=lambda est: EXPECTED_FAILURES.get(type(est).__name__, {}))
def test_sklearn_compatible(estimator, check):
    check(estimator)


@pytest.mark.parametrize("cls", [MarketLineSearchClassifier, FixedPriceStrategicClassifier, MarketAwareClassifier])
def test_expected_failure_is_the_market_trade_off(cls):
    """On the blobs of check_classifiers_train with uniform budgets, the naive classifier is accurate before
    the market and not after it; the market-trained ones are at least as accurate after it as naive (the
    reason they are listed), and two of them fall below the check's 0.83 before it."""
    X, y = make_blobs(300, centers=2, random_state=0)
    X -= X.min()
    budgets = np.ones(y.shape[0])
    naive = NaiveClassifier(epochs=3).fit(X, y)
    model = cls(epochs=3).fit(X, y)
    naive_after = float(np.mean(naive.predict_after_market(X, budgets) == y))
    assert float(np.mean(naive.predict(X) == y)) > 0.83 > naive_after
    assert float(np.mean(model.predict_after_market(X, budgets) == y)) >= naive_after
    if cls is not MarketAwareClassifier:
        assert float(np.mean(model.predict(X) == y)) < 0.83


def test_fit_without_budgets_means_uniform_budgets():
    data = make_market_data(200, inequality=2.0**6, label_correlation=0.5, random_state=0)
    implicit = MarketAwareClassifier(epochs=2).fit(data.X, data.y)
    explicit = MarketAwareClassifier(epochs=2).fit(data.X, data.y, budgets=np.ones(200))
    np.testing.assert_array_equal(implicit.coef_, explicit.coef_)
    assert implicit.intercept_ == explicit.intercept_ and implicit.price_ == explicit.price_
    positional = NaiveClassifier(epochs=2).fit(data.X, data.y, data.budgets)  # the explicit form still works
    keyword = NaiveClassifier(epochs=2).fit(data.X, data.y, budgets=data.budgets)
    assert positional.price_ == keyword.price_ > 0
