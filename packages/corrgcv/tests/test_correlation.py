"""Correlation families: fast eigenvalues against dense ones, cross-correlations, estimation."""

import numpy as np
import pytest

from corrgcv import (
    ExponentialCorrelation,
    NearestNeighbourCorrelation,
    PowerLawCorrelation,
    correlated_factor,
    estimate_correlation,
    k_eigenvalues,
    lag1_autocorrelation,
)

MEMBERS = [
    ExponentialCorrelation(xi=0.5),
    ExponentialCorrelation(xi=100.0),
    NearestNeighbourCorrelation(rho=0.45),
    NearestNeighbourCorrelation(rho=-0.3),
    PowerLawCorrelation(exponent=0.3),
    PowerLawCorrelation(exponent=2.0),
]


@pytest.mark.parametrize("corr", MEMBERS, ids=repr)
@pytest.mark.parametrize("T", [1, 2, 50, 301])
def test_eigenvalues_match_dense_eigvalsh(corr, T):
    K = corr.matrix(T)
    assert K.shape == (T, T) and np.allclose(np.diag(K), 1.0) and np.allclose(K, K.T)
    dense = np.linalg.eigvalsh(K)
    np.testing.assert_allclose(corr.eigenvalues(T), dense, rtol=1e-9, atol=1e-12 * dense.max())
    np.testing.assert_allclose(k_eigenvalues(corr, T), k_eigenvalues(K, T), rtol=1e-9)
    assert dense.min() > 0


def test_matrix_entries_and_cross_correlation():
    corr = ExponentialCorrelation(xi=4.0)
    K = corr.matrix(5)
    assert K[0, 3] == pytest.approx(np.exp(-3 / 4.0))
    c = corr.cross(5, 2)  # test time 4 + 2 = 6; lags 6, 5, 4, 3, 2
    np.testing.assert_allclose(c, np.exp(-np.array([6, 5, 4, 3, 2]) / 4.0))
    np.testing.assert_array_equal(corr.cross(5, np.inf), np.zeros(5))
    # The cross vector is the next column of the longer matrix.
    np.testing.assert_allclose(
        PowerLawCorrelation(exponent=0.7).cross(6, 1), PowerLawCorrelation(exponent=0.7).matrix(7)[:6, 6]
    )
    np.testing.assert_allclose(NearestNeighbourCorrelation(rho=0.2).cross(4, 1), [0, 0, 0, 0.2])


def test_callable_and_eigenvalue_specifications():
    corr = PowerLawCorrelation(exponent=1.0)
    np.testing.assert_allclose(k_eigenvalues(lambda T: corr.matrix(T), 40), corr.eigenvalues(40), rtol=1e-12)
    np.testing.assert_allclose(k_eigenvalues(corr.eigenvalues(40)[::-1], 40), corr.eigenvalues(40))
    np.testing.assert_array_equal(k_eigenvalues(None, 7), np.ones(7))


@pytest.mark.parametrize(
    "corr",
    [ExponentialCorrelation(xi=5.0), NearestNeighbourCorrelation(rho=0.3), PowerLawCorrelation(exponent=0.8)],
    ids=repr,
)
def test_lag1_estimator_recovers_parameter_from_noise(corr):
    T = 2000
    noise = correlated_factor(corr, T) @ np.random.default_rng(0).standard_normal(T)
    est = estimate_correlation(corr.name, noise)
    target = corr.acf(np.array([1.0]))[0]
    assert est.acf(np.array([1.0]))[0] == pytest.approx(target, abs=0.05)
    assert type(est) is type(corr)


def test_lag1_autocorrelation_edge_cases():
    assert lag1_autocorrelation(np.ones(10)) == 0.0
    assert lag1_autocorrelation([1.0]) == 0.0
    x = np.random.default_rng(1).standard_normal(20)
    xc = x - x.mean()
    assert lag1_autocorrelation(x) == pytest.approx(xc[1:] @ xc[:-1] / (xc @ xc))
    assert ExponentialCorrelation.from_lag1(-0.5).acf(np.array([1.0]))[0] < 1e-10
    assert NearestNeighbourCorrelation.from_lag1(0.9).rho == 0.49
