"""RidgeCorrGCV: scikit-learn estimator checks and consistency with the functional API."""

import numpy as np
import pytest
from sklearn.linear_model import Ridge, RidgeCV
from sklearn.utils.estimator_checks import parametrize_with_checks

from corrgcv import ExponentialCorrelation, RidgeCorrGCV, correlated_factor, corrgcv, gcv, power_law_problem


@parametrize_with_checks(
    [RidgeCorrGCV(), RidgeCorrGCV(correlation="power-law", alphas=(0.01, 1.0)), RidgeCorrGCV(correlation=None)]
)
def test_sklearn_estimator_checks(estimator, check):
    check(estimator)


def _series(T=300, xi=30.0, seed=0):
    problem = power_law_problem(40, noise_std=0.3)
    return problem.sample(T, np.random.default_rng(seed), K_factor=correlated_factor(ExponentialCorrelation(xi), T))


ALPHAS = np.logspace(-3, 3, 19)


def test_known_correlation_matches_functional_api_and_sklearn_ridge():
    X, y = _series()
    K = ExponentialCorrelation(xi=30.0)
    model = RidgeCorrGCV(alphas=ALPHAS, correlation="exponential", correlation_param=30.0).fit(X, y)
    path = corrgcv(X, y, ALPHAS, K=K, fit_intercept=True)
    assert model.alpha_ == path.best_alpha
    np.testing.assert_allclose(model.cv_path_.criterion, path.criterion, rtol=1e-12)
    ref = Ridge(alpha=model.alpha_).fit(X, y)
    np.testing.assert_allclose(model.coef_, ref.coef_, rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(model.predict(X[:5]), ref.predict(X[:5]), rtol=1e-9)
    assert model.best_score_ == pytest.approx(path.criterion.min())
    assert model.correlation_ == K


def test_matrix_and_eigenvalue_inputs_agree_with_family():
    X, y = _series(T=120)
    K = ExponentialCorrelation(xi=10.0)
    a = RidgeCorrGCV(alphas=ALPHAS, correlation=K).fit(X, y)
    b = RidgeCorrGCV(alphas=ALPHAS, correlation=K.matrix(120)).fit(X, y)
    c = RidgeCorrGCV(alphas=ALPHAS, correlation=lambda T: K.eigenvalues(T)).fit(X, y)
    np.testing.assert_allclose(a.cv_path_.criterion, b.cv_path_.criterion, rtol=1e-9)
    np.testing.assert_allclose(a.cv_path_.criterion, c.cv_path_.criterion, rtol=1e-12)
    assert b.correlation_ is None and a.correlation_ == K


def test_independent_correlation_is_plain_gcv():
    X, y = _series(T=100)
    model = RidgeCorrGCV(alphas=ALPHAS, correlation="independent").fit(X, y)
    np.testing.assert_allclose(model.cv_path_.criterion, gcv(X, y, ALPHAS, fit_intercept=True).criterion, rtol=1e-12)


def test_estimated_correlation_is_positive_and_picks_larger_penalty_than_loo():
    X, y = _series(T=400, xi=30.0, seed=3)
    model = RidgeCorrGCV(alphas=ALPHAS).fit(X, y)
    assert isinstance(model.correlation_, ExponentialCorrelation)
    assert model.correlation_.xi > 1.0  # clearly correlated residuals detected
    loo = RidgeCV(alphas=ALPHAS).fit(X, y)
    assert model.alpha_ >= loo.alpha_
    assert model.best_score_ > model.gcv_path_.criterion[model.cv_path_.best_index]


@pytest.mark.parametrize("family", ["exponential", "power-law", "nearest-neighbour"])
@pytest.mark.parametrize("estimate", ["features", "residuals"])
def test_random_walk_series_do_not_break_estimation(family, estimate):
    # Lag-1 autocorrelation near 1 (random-walk residuals, or random-walk columns of X) is capped where K
    # stays numerically positive definite.
    rng = np.random.default_rng(0)
    X = rng.standard_normal((2000, 3))
    if estimate == "features":
        X = np.cumsum(X, axis=0)
    y = np.cumsum(rng.standard_normal(2000))
    model = RidgeCorrGCV(alphas=(1.0, 100.0), correlation=family, estimate=estimate).fit(X, y)
    assert np.isfinite(model.best_score_) and model.correlation_.acf(np.array([1.0]))[0] > 0.45


def test_estimate_sources_differ_as_documented():
    # White rows of X, random-walk target: the feature estimate sees K ~ I (plain GCV), the residual
    # estimate sees the target's strong correlation.
    rng = np.random.default_rng(0)
    X = rng.standard_normal((500, 5))
    y = np.cumsum(rng.standard_normal(500))
    feat = RidgeCorrGCV(alphas=ALPHAS).fit(X, y)
    resid = RidgeCorrGCV(alphas=ALPHAS, estimate="residuals").fit(X, y)
    assert feat.correlation_.xi < 0.5 < 10.0 < resid.correlation_.xi
    assert abs(feat.best_score_ / feat.gcv_path_.criterion[feat.cv_path_.best_index] - 1.0) < 0.01


def test_unknown_estimate_is_rejected():
    X, y = _series(T=50)
    with pytest.raises(ValueError, match="estimate must be one of"):
        RidgeCorrGCV(estimate="bogus").fit(X, y)
