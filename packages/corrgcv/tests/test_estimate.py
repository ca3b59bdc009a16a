"""Estimating K's parameter when it is not given (issue 8, acceptance 4 and the estimation rule).

Two regimes of the model X = K_X^{1/2} Z Sigma^{1/2}, y = X w + sigma K_noise^{1/2} e
(N = 100, eta_k = k^-1.8, r = 0.3, sigma = 0.3, exponential xi = 100, 10 seeds, fit without intercept,
25 penalties lambda = alpha / T in [1e-5, 10]):

- matched (K_X = K_noise = K, the paper's model): the feature estimate recovers K, so CorrGCV tracks
  the true out-of-sample risk and picks a penalty near the oracle; the residual estimate sees
  whitened residuals and, like GCV, underestimates the risk more than 10x.
- mismatched (independent rows of X, correlated noise): by rotation invariance the expected risk and
  in-sample error are those of white noise, so GCV (K = I) is right; the feature estimate finds
  K ~ I, while the residual estimate measures the noise's correlation and over-penalises.
"""

import numpy as np
import pytest
import scipy.linalg

from corrgcv import (
    ExponentialCorrelation,
    NearestNeighbourCorrelation,
    PowerLawCorrelation,
    RidgeCorrGCV,
    RidgeSpectrum,
    correlated_factor,
    estimate_correlation_from_features,
    power_law_problem,
)
from corrgcv.estimate import column_lag1_autocorrelation, expected_lag1_autocorrelation

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


def _regime(T, regime, seeds=range(10)):
    """Per seed: (criterion / risk at the chosen penalty, risk at it / min risk, chosen index) for each
    rule, the feature-estimated xi, and the seed-mean risk curve."""
    K = ExponentialCorrelation(100.0)
    L = correlated_factor(K, T)
    alphas = T * np.logspace(-5, 1, 25)
    out = {name: [] for name in ("features", "residuals", "gcv")}
    xis, risks = [], []
    for seed in seeds:
        rng = np.random.default_rng(seed)
        z = rng.standard_normal((T, 100)) * np.sqrt(PROBLEM.spectrum)
        eps = PROBLEM.noise_std * (L @ rng.standard_normal(T))
        if regime == "matched":
            z = L @ z
        X, y = z, z @ PROBLEM.target + eps
        spec = RidgeSpectrum.from_data(X, y)
        risk = PROBLEM.out_of_sample_risk(np.stack([spec.coef(a)[0] for a in alphas]))
        risks.append(risk)
        feat = RidgeCorrGCV(alphas=alphas, fit_intercept=False).fit(X, y)
        resid = RidgeCorrGCV(alphas=alphas, fit_intercept=False, estimate="residuals").fit(X, y)
        xis.append(feat.correlation_.xi)
        for name, path in (("features", feat.cv_path_), ("residuals", resid.cv_path_), ("gcv", spec.gcv(alphas))):
            i = path.best_index
            out[name].append((path.criterion[i] / risk[i], risk[i] / risk.min(), i))
    return {k: np.array(v) for k, v in out.items()}, np.array(xis), np.mean(risks, axis=0)


@pytest.mark.parametrize("T", [150, 400])
def test_matched_regime_feature_estimate_tracks_risk_and_oracle_penalty(T):
    res, xis, mean_risk = _regime(T, "matched")
    feat, resid = res["features"], res["residuals"]
    assert 40.0 < np.median(xis) < 250.0  # truth 100
    assert abs(feat[:, 0].mean() - 1.0) <= 0.25, feat[:, 0].mean()
    assert resid[:, 0].mean() < 0.1  # residual estimate: whitened residuals, criterion far too low
    assert abs(np.median(feat[:, 2]) - np.argmin(mean_risk)) <= 1  # within one grid step of the oracle
    assert feat[:, 1].mean() <= 1.05 and feat[:, 1].mean() <= resid[:, 1].mean()


@pytest.mark.parametrize("T", [150, 400])
def test_mismatched_regime_feature_estimate_is_gcv_and_beats_residual_estimate(T):
    res, xis, mean_risk = _regime(T, "mismatched")
    feat, resid, plain = res["features"], res["residuals"], res["gcv"]
    assert np.max(xis) < 0.5  # K ~ I found from white rows
    np.testing.assert_array_equal(feat[:, 2], plain[:, 2])  # the same penalties as GCV
    assert abs(feat[:, 0].mean() - 1.0) <= 0.15, feat[:, 0].mean()
    assert abs(np.median(feat[:, 2]) - np.argmin(mean_risk)) <= 1
    assert feat[:, 1].mean() <= 1.02
    assert resid[:, 1].mean() > feat[:, 1].mean()  # noise correlation from residuals over-penalises
    assert resid[:, 0].mean() > feat[:, 0].mean()
