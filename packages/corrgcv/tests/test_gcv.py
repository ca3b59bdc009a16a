"""GCV / LOO / CorrGCV along a penalty grid: identities and exact agreement with scikit-learn."""

import numpy as np
import pytest
import scipy.linalg
from sklearn.linear_model import Ridge, RidgeCV

from corrgcv import ExponentialCorrelation, RidgeSpectrum, corrgcv, gcv, loo, solve_kappa_tilde

ALPHAS = np.logspace(-3, 3, 13)


def _data(T, N, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((T, N)) @ np.diag(np.linspace(0.2, 2.0, N))
    return X, X @ rng.standard_normal(N) + 0.5 * rng.standard_normal(T) + 3.0


@pytest.mark.parametrize("T,N", [(80, 20), (40, 40), (30, 60)])
@pytest.mark.parametrize("fit_intercept", [False, True])
def test_corrgcv_with_identity_equals_gcv_closed_form(T, N, fit_intercept):
    X, y = _data(T, N)
    path = corrgcv(X, y, ALPHAS, K=np.eye(T), fit_intercept=fit_intercept)
    # Closed form from scratch: hat matrix, residual, trace.
    Xc, yc = (X - X.mean(0), y - y.mean()) if fit_intercept else (X, y)
    for a, value in zip(ALPHAS, path.criterion, strict=True):
        # 1 - d from tr(I - H) in primal or dual form, whichever avoids cancellation near d = 1.
        if T >= N:
            resid = yc - Xc @ np.linalg.solve(Xc.T @ Xc + a * np.eye(N), Xc.T @ yc)
            free = (T - fit_intercept - N + a * np.trace(np.linalg.inv(Xc.T @ Xc + a * np.eye(N)))) / T
        else:
            inv = np.linalg.inv(Xc @ Xc.T + a * np.eye(T))
            resid = a * inv @ yc
            free = (a * np.trace(inv) - fit_intercept) / T
        # the dense inverse loses digits near interpolation (condition number ~ s_max / alpha)
        assert value == pytest.approx(np.mean(resid**2) / free**2, rel=1e-10 if a >= 0.1 else 1e-7)
    plain = gcv(X, y, ALPHAS, fit_intercept=fit_intercept)
    np.testing.assert_allclose(path.criterion, plain.criterion, rtol=1e-12, atol=0)
    np.testing.assert_allclose(path.kappa_tilde * path.df + path.df, 1.0, rtol=1e-13)  # kt = (1 - d) / d


@pytest.mark.parametrize("T,N", [(64, 12), (32, 48)])
def test_gcv_equals_sklearn_ridgecv_criterion_on_hadamard_rotated_data(T, N):
    # Golub-Heath-Wahba: GCV is leave-one-out after a rotation Q that makes every hat matrix have a
    # constant diagonal. Q = Hadamard U^T does it (|(Q U)_ij|^2 = 1/T); Q X, Q y give the same ridge fit.
    X, y = _data(T, N, seed=1)
    U = np.linalg.svd(X)[0]
    Q = scipy.linalg.hadamard(T) / np.sqrt(T) @ U.T
    ref = RidgeCV(alphas=ALPHAS, fit_intercept=False, store_cv_results=True).fit(Q @ X, Q @ y)
    ours = gcv(X, y, ALPHAS)
    np.testing.assert_allclose(ours.criterion, ref.cv_results_.mean(axis=0), rtol=1e-9)
    assert ours.best_alpha == ref.alpha_


@pytest.mark.parametrize("T,N", [(60, 15), (25, 40)])
@pytest.mark.parametrize("fit_intercept", [False, True])
def test_loo_equals_sklearn_ridgecv_cv_results(T, N, fit_intercept):
    X, y = _data(T, N, seed=2)
    ref = RidgeCV(alphas=ALPHAS, fit_intercept=fit_intercept, store_cv_results=True).fit(X, y)
    np.testing.assert_allclose(loo(X, y, ALPHAS, fit_intercept=fit_intercept), ref.cv_results_.mean(axis=0), rtol=1e-8)


@pytest.mark.parametrize("T,N", [(50, 10), (20, 35)])
@pytest.mark.parametrize("fit_intercept", [False, True])
def test_coef_equals_sklearn_ridge(T, N, fit_intercept):
    X, y = _data(T, N, seed=3)
    spec = RidgeSpectrum.from_data(X, y, fit_intercept=fit_intercept)
    for a in (0.01, 1.0, 30.0):
        w, b = spec.coef(a)
        ref = Ridge(alpha=a, fit_intercept=fit_intercept).fit(X, y)
        np.testing.assert_allclose(w, ref.coef_, rtol=1e-9, atol=1e-11)
        assert b == pytest.approx(ref.intercept_, rel=1e-9, abs=1e-11)


def test_in_sample_error_and_df_match_a_direct_fit():
    X, y = _data(40, 10, seed=4)
    spec = RidgeSpectrum.from_data(X, y)
    for a in (0.1, 5.0):
        w, _ = spec.coef(a)
        H = X @ np.linalg.solve(X.T @ X + a * np.eye(10), X.T)
        assert spec.in_sample_error(a)[0] == pytest.approx(np.mean((y - X @ w) ** 2), rel=1e-12)
        assert spec.df(a)[0] == pytest.approx(np.trace(H) / 40, rel=1e-12)


def test_kappa_tilde_solves_its_equation_and_duality_holds():
    k = ExponentialCorrelation(xi=20.0).eigenvalues(300)
    d = np.array([1e-4, 0.01, 0.3, 0.7, 0.999])
    kt = solve_kappa_tilde(d, k)
    np.testing.assert_allclose((k[None, :] / (k[None, :] + kt[:, None])).mean(1), d, rtol=1e-13)
    X, y = _data(300, 40, seed=5)
    path = corrgcv(X, y, ALPHAS, K=ExponentialCorrelation(xi=20.0))
    df1_tilde = (k[None, :] / (k[None, :] + path.kappa_tilde[:, None])).mean(1)
    # kappa * kappa_tilde / lambda = 1 / df1_tilde
    np.testing.assert_allclose(path.renormalized_ridge * path.kappa_tilde / path.ridge, 1 / df1_tilde, rtol=1e-12)


def test_corrgcv_exceeds_gcv_under_positive_correlation_and_path_is_vectorised():
    X, y = _data(200, 30, seed=6)
    K = ExponentialCorrelation(xi=10.0)
    path = corrgcv(X, y, ALPHAS, K=K)
    assert np.all(path.criterion > gcv(X, y, ALPHAS).criterion)
    for i, a in enumerate(ALPHAS[::4]):
        assert corrgcv(X, y, a, K=K).criterion[0] == pytest.approx(path.criterion[4 * i], rel=1e-12)


def test_interpolating_fit_gives_infinite_criterion():
    X, y = _data(20, 30, seed=7)
    path = corrgcv(X, y, [0.0, 1.0], K=ExponentialCorrelation(xi=3.0))
    assert np.isinf(path.criterion[0]) and np.isfinite(path.criterion[1])
    assert path.best_alpha == 1.0
