"""Estimating K's parameter when it is not given.

Two regimes of the model X = K_X^{1/2} Z Sigma^{1/2}, y = X w + sigma K_noise^{1/2} e
(N = 100, eta_k = k^-1.8, r = 0.3, sigma = 0.3, exponential xi = 100, 10 seeds, fit without intercept,
25 penalties lambda = alpha / T in [1e-5, 10]):

- matched (K_X = K_noise = K, the paper's model): the feature estimate recovers K, so CorrGCV tracks
  the true out-of-sample risk and picks a penalty near the oracle; the ridge-residual estimate sees
  whitened residuals and, like GCV, underestimates the risk more than 10x.
- mismatched (independent rows of X, correlated noise): by rotation invariance the expected risk and
  in-sample error are those of white noise, so GCV (K = I) is right; the feature estimate finds
  K ~ I, while the residual estimate measures the noise's correlation and over-penalises.
- x-only (correlated rows of X, white noise): the feature estimate over-penalises badly; the default
  "both" (weaker of the feature and least-squares-noise estimates) finds K ~ I and chooses like GCV.
"""

import numpy as np
import pytest
import scipy.linalg

from corrgcv import (
    ExponentialCorrelation,
    NearestNeighbourCorrelation,
    PowerLawCorrelation,
    RidgeCorrGCV,
    correlated_factor,
    estimate_correlation_from_features,
    estimate_noise_correlation,
    power_law_problem,
)
from corrgcv.estimate import column_lag1_autocorrelation, expected_lag1_autocorrelation, expected_projected_lag1
from corrgcv.simulate import simulate_estimation

FAMILY_MEMBERS = [
    ExponentialCorrelation(0.3),
    ExponentialCorrelation(5.0),
    ExponentialCorrelation(100.0),
    NearestNeighbourCorrelation(-0.3),
    NearestNeighbourCorrelation(0.45),
    PowerLawCorrelation(0.5),
]


def _dense_expected_lag1(corr, T):
    """The same second-order expansion with dense matrices (the reference for the O(T log T) path)."""
    K = scipy.linalg.toeplitz(corr.acf(np.arange(T, dtype=float)))
    C = np.eye(T) - 1.0 / T
    M = C @ K @ C
    mu2, mu1 = np.trace(M), np.sum(np.diag(M, 1))
    M2 = M @ M
    return mu1 / mu2 - 2 * np.sum(np.diag(M2, 1)) / mu2**2 + mu1 * 2 * np.trace(M2) / mu2**3


@pytest.mark.parametrize("corr", FAMILY_MEMBERS, ids=str)
@pytest.mark.parametrize("T", [2, 7, 150, 601])
def test_expected_lag1_fast_path_equals_dense_formula(corr, T):
    assert expected_lag1_autocorrelation(corr, T) == pytest.approx(_dense_expected_lag1(corr, T), abs=1e-10)


@pytest.mark.parametrize("corr", FAMILY_MEMBERS, ids=str)
def test_expected_lag1_matches_monte_carlo_mean(corr):
    # 20000 Gaussian series of length 150: the Monte Carlo standard error is below 1e-3.
    T = 150
    x = correlated_factor(corr, T) @ np.random.default_rng(0).standard_normal((T, 20000))
    assert column_lag1_autocorrelation(x) == pytest.approx(expected_lag1_autocorrelation(corr, T), abs=3e-3)
    if corr == ExponentialCorrelation(100.0):  # the raw population lag-1 value is far off here
        assert corr.acf(np.array([1.0]))[0] - column_lag1_autocorrelation(x) > 0.04


@pytest.mark.parametrize(
    "corr",
    [
        ExponentialCorrelation(100.0),
        ExponentialCorrelation(5.0),
        NearestNeighbourCorrelation(0.3),
        PowerLawCorrelation(0.5),
    ],
    ids=str,
)
def test_feature_estimate_recovers_parameter(corr):
    T, N = 300, 200
    X = correlated_factor(corr, T) @ np.random.default_rng(1).standard_normal((T, N)) * np.linspace(0.1, 3, N)
    est = estimate_correlation_from_features(type(corr), X)
    lag1 = np.array([1.0])
    # On the lag-1 scale the estimate is sharp; strong exponential correlation is weakly identified in
    # xi itself (xi = 100 and 170 differ by 0.004 in lag-1 correlation), hence the looser xi bound.
    assert est.acf(lag1)[0] == pytest.approx(corr.acf(lag1)[0], abs=0.02)
    assert est.parameter == pytest.approx(corr.parameter, rel=0.25 if corr.parameter < 50 else 0.75)


def test_feature_estimate_of_white_rows_is_near_identity():
    X = np.random.default_rng(2).standard_normal((400, 50))
    est = estimate_correlation_from_features("exponential", X)
    assert est.acf(np.array([1.0]))[0] < 0.05
    assert estimate_correlation_from_features("exponential", -X).xi == est.xi
    # A negative lag-1 autocorrelation clips to the weakest member of the family.
    alternating = np.outer((-1.0) ** np.arange(100), np.ones(3)) + 0.1 * X[:100, :3]
    assert estimate_correlation_from_features("exponential", alternating).acf(np.array([1.0]))[0] < 1e-9


PROBLEM = power_law_problem(100, capacity=1.8, source=0.3, noise_std=0.3)


def _regime(T, regime):
    return simulate_estimation(PROBLEM, ExponentialCorrelation(100.0), T, T * np.logspace(-5, 1, 25), regime)


@pytest.mark.parametrize("T", [150, 400])
def test_matched_regime(T):
    res = _regime(T, "matched")
    both, feat, resid, plain = res["both"], res["features"], res["residuals"], res["gcv"]
    # Features: recovers K (truth xi = 100), tracks the risk, picks the oracle penalty.
    assert 40.0 < np.median(res["xi"]["features"]) < 250.0
    assert abs(feat["ratio"].mean() - 1.0) <= 0.15, feat["ratio"].mean()
    assert abs(np.median(feat["index"]) - res["oracle_index"]) <= 1
    assert feat["excess"].mean() <= 1.04 < plain["excess"].mean()
    # Both: the noise estimate from T - N residual dimensions is noisy and errs towards weak correlation,
    # so its risk estimate is lower than the features' (0.39 at T = 150, 0.67 at T = 400) but > 10x
    # closer than GCV's, and its penalties are still better than GCV's.
    assert 10 * plain["ratio"].mean() < both["ratio"].mean() <= feat["ratio"].mean()
    assert both["excess"].mean() <= 1.04 < plain["excess"].mean()
    # Residuals (ridge): whitened residuals, a criterion as far too low as GCV's.
    assert resid["ratio"].mean() < 0.1 and plain["ratio"].mean() < 0.1


@pytest.mark.parametrize("T", [150, 400])
def test_mismatched_regime_white_rows_give_gcv(T):
    res = _regime(T, "mismatched")
    both, feat, resid, plain = res["both"], res["features"], res["residuals"], res["gcv"]
    assert np.max(res["xi"]["features"]) < 0.5  # K ~ I found from white rows
    for rule in (both, feat):
        np.testing.assert_array_equal(rule["index"], plain["index"])  # the same penalties as GCV
    assert abs(feat["ratio"].mean() - 1.0) <= 0.15, feat["ratio"].mean()
    assert abs(np.median(feat["index"]) - res["oracle_index"]) <= 1
    assert feat["excess"].mean() <= 1.02
    assert resid["excess"].mean() > feat["excess"].mean()  # noise correlation from residuals over-penalises


@pytest.mark.parametrize("T", [150, 400])
def test_x_only_regime_features_over_penalise_and_both_does_not(T):
    res = _regime(T, "x-only")
    both, feat = res["both"], res["features"]
    assert np.median(res["xi"]["both"]) < 0.5 < 40.0 < np.median(res["xi"]["features"])  # white noise detected
    assert both["excess"].mean() <= 1.06 and abs(np.median(both["index"]) - res["oracle_index"]) <= 1
    assert feat["excess"].mean() > 2.0  # the documented failure of the features-only rule


def test_noise_lag1_expectation_is_exact_for_projected_noise():
    T, m = 200, 30
    rng = np.random.default_rng(0)
    U = np.linalg.qr(np.column_stack([rng.standard_normal((T, m)), np.ones(T)]))[0]
    corr = ExponentialCorrelation(20.0)
    K = corr.matrix(T)
    P = U @ U.T
    S = (np.eye(T, k=1) + np.eye(T, k=-1)) / 2
    ref = np.trace(S @ (np.eye(T) - P) @ K @ (np.eye(T) - P)) / np.trace((np.eye(T) - P) @ K)
    assert expected_projected_lag1(corr, U) == pytest.approx(ref, abs=1e-12)
    assert expected_projected_lag1(corr, U[:, :0]) == pytest.approx(corr.acf(np.array([1.0]))[0] * (T - 1) / T)
    # Recovery: many noise draws projected off U, pooled via the residual of their sum (still N(0, K)).
    E = correlated_factor(corr, T) @ rng.standard_normal((T, 2000))
    R = E - U @ (U.T @ E)
    pooled = (R[1:] * R[:-1]).sum() / (R * R).sum()
    gap = pooled - expected_projected_lag1(corr, U)
    assert abs(gap) < 0.01
    # One series at a time: median-unbiased-looking but wide (measured quartiles 10.8 and 58 at xi = 20).
    est = [estimate_noise_correlation("exponential", U, R[:, j]).xi for j in range(60)]
    assert 12.0 < np.median(est) < 30.0
    E2 = correlated_factor(ExponentialCorrelation(2.0), T) @ rng.standard_normal((T, 60))
    R2 = E2 - U @ (U.T @ E2)
    assert 1.7 < np.median([estimate_noise_correlation("exponential", U, R2[:, j]).xi for j in range(60)]) < 2.4


def test_both_uses_features_when_too_few_residual_dimensions():
    X, y = power_law_problem(40, noise_std=0.3).sample(45, np.random.default_rng(0))
    model = RidgeCorrGCV(alphas=np.logspace(-2, 2, 5)).fit(X, y)  # T - rank - 1 = 4 < 10
    assert model.noise_correlation_ is None and model.correlation_ == model.feature_correlation_
