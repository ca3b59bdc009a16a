"""Public entry points reject a wrong type with TypeError and a wrong value with ValueError, naming it."""

import numpy as np
from icml25_shared.testing import assert_rejects

import corrgcv

RNG = np.random.default_rng(0)
X, Y = RNG.standard_normal((60, 5)), RNG.standard_normal(60)


def test_ridge_corrgcv():
    fit = lambda est: est.fit(X, Y)  # noqa: E731 - validated in fit, as scikit-learn does
    assert_rejects(corrgcv.RidgeCorrGCV, "alphas", wrong_type="many", wrong_value=[-1.0, 1.0], call=fit)


def test_correlations_and_problems():
    assert_rejects(corrgcv.ExponentialCorrelation, "xi", wrong_type="long", wrong_value=-2.0)


def test_power_law_problem():
    assert_rejects(corrgcv.power_law_problem, "n_features", wrong_type=10.5, wrong_value=0)
    assert_rejects(corrgcv.power_law_problem, "capacity", wrong_type="steep", wrong_value=0.0, n_features=10)
    assert_rejects(corrgcv.power_law_problem, "noise_std", wrong_type=None, wrong_value=-0.1, n_features=10)
    assert_rejects(corrgcv.power_law_problem, "source", wrong_type="smooth", wrong_value=float("nan"), n_features=10)
