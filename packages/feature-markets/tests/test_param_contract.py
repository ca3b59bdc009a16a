"""Public entry points reject a wrong type with TypeError and a wrong value with ValueError, naming it."""

from icml25_shared.testing import assert_rejects

import feature_markets as fm

DATA = fm.make_market_data(60, random_state=0)


def test_classifiers():
    fit = lambda est: est.fit(DATA.X, DATA.y)  # noqa: E731 - validated in fit, as scikit-learn does
    assert_rejects(fm.NaiveClassifier, "epochs", wrong_type=2.5, wrong_value=0, call=fit)
    assert_rejects(fm.NaiveClassifier, "random_state", wrong_type="seed", wrong_value=-1, call=fit, epochs=1)


def test_data():
    assert_rejects(fm.make_market_data, "n_samples", wrong_type="many", wrong_value=0)


def test_split():
    assert_rejects(DATA.split, "test_size", wrong_type="half", wrong_value=1.0)
    assert_rejects(DATA.split, "random_state", wrong_type="seed", wrong_value=-1)
