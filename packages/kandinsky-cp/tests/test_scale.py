"""Thresholds do not depend on the scores' scale or offset; near-tied and tiny scores get the right ranks."""

import math

import numpy as np
import pytest
from sklearn.datasets import load_wine
from sklearn.linear_model import LinearRegression
from sklearn.naive_bayes import GaussianNB

from kandinsky_cp import KandinskyCP, group_quantile_regression
from kandinsky_cp import groups as G


def _designs(n, rng):
    x = rng.uniform(size=n)
    cls = rng.integers(0, 3, size=n)
    return {
        "intercept": np.ones((n, 1)),
        "partition": np.eye(3)[cls],
        "overlapping": np.column_stack([np.ones(n), x > 0.5, (x > 0.3) & (cls == 1)]).astype(float),
    }


@pytest.mark.parametrize("correction", [True, False])
def test_order_statistics_do_not_depend_on_scale_or_offset(correction):
    """Scores * 10^k (k = -12..12) plus offsets of 0, 3 and -50 score units give the same basis rows and the
    same covered calibration points (to rounding); intercept thresholds are the ceil((n+1) tau)-th score bit for bit."""
    rng = np.random.default_rng(11)
    n = 200
    base = rng.exponential(size=n)
    for name, phi in _designs(n, rng).items():
        ref = group_quantile_regression(phi, base, confidence_level=0.9, finite_sample_correction=correction)
        ref_cov = base <= ref.threshold(phi) + 1e-9
        for k in range(-12, 13):
            for offset in (0.0, 3.0, -50.0):
                scores = (base + offset) * 10.0**k
                fit = group_quantile_regression(phi, scores, confidence_level=0.9,
                                                finite_sample_correction=correction)
                assert sorted(fit.basis.tolist()) == sorted(ref.basis.tolist()), (name, k, offset)
                # interpolated rows' thresholds are sums of coefficients: compare at rounding level
                tol = 1e-9 * 10.0**k
                np.testing.assert_array_equal(scores <= fit.threshold(phi) + tol, ref_cov, err_msg=f"{name} {k} {offset}")
                if name == "intercept":
                    rank = math.ceil(round((n + correction) * 0.9, 9))
                    assert fit.beta[0] == np.sort(scores)[rank - 1]


def test_tiny_scores_reproduce_split_cp():
    """The documented failure: exponential scores * 1e-9 covered 0.769 of the calibration points."""
    rng = np.random.default_rng(0)
    scores = rng.exponential(size=1000) * 1e-9
    fit = group_quantile_regression(np.ones((1000, 1)), scores, confidence_level=0.9)
    assert fit.beta[0] == np.sort(scores)[math.ceil(1001 * 0.9) - 1]
    assert np.mean(scores <= fit.beta[0]) == 0.901


def test_split_cp_on_nanoscale_targets_covers_nominal_level():
    """y * 1e-9: split CP (intercept) test coverage 0.9 +- 0.01 over 20 seeds x 1000 test points."""
    cov = []
    for seed in range(20):
        rng = np.random.default_rng(seed)
        X = rng.uniform(size=(2300, 3))
        y = (X @ np.array([1.0, 2.0, 3.0]) + rng.normal(size=2300)) * 1e-9
        reg = LinearRegression().fit(X[:300], y[:300])
        cp = KandinskyCP(reg, groups=G.intercept(), random_state=seed).conformalize(X[300:1300], y[300:1300])
        band = cp.predict_interval(X[1300:])[1][:, :, 0]
        cov.append(np.mean((band[:, 0] <= y[1300:]) & (y[1300:] <= band[:, 1])))
    assert abs(np.mean(cov) - 0.9) <= 0.01, np.mean(cov)


def test_saturated_naive_bayes_aps_on_wine_covers():
    """Gaussian naive Bayes on wine has probabilities within 1e-16 of 1: APS at 0.9 over 200 reshuffles
    (50 train / 80 calibration / 48 test) covers >= 0.88 on average (was 0.753)."""
    X, y = load_wine(return_X_y=True)
    cov = []
    for seed in range(200):
        perm = np.random.default_rng(seed).permutation(len(y))
        tr, ca, te = perm[:50], perm[50:130], perm[130:]
        clf = GaussianNB().fit(X[tr], y[tr])
        cp = KandinskyCP(clf, groups=G.intercept(), score="aps", random_state=seed).conformalize(X[ca], y[ca])
        cov.append(cp.predict_set(X[te])[np.arange(len(te)), y[te]].mean())
    assert np.mean(cov) >= 0.88, np.mean(cov)


def test_solver_reaches_the_lp_optimum_and_warm_starts_agree():
    """Random designs (indicators, fractional, partitions), tied and untied scores at scales 1e-8..1e8:
    the objective equals an independent HiGHS solve of the dual on rescaled scores, and the exact-mode
    warm start (descent from the calibration fit) gives the cold solve's augmented cutoff."""
    from scipy.optimize import linprog

    from kandinsky_cp._lp import InfeasibleQuantileLP, solve_quantile_lp

    def objective(phi, s, tau, beta, c):
        r = s - phi @ beta
        return np.sum(np.where(r > 0, tau * r, (tau - 1) * r)) - tau * c @ beta

    for seed in range(24):
        rng = np.random.default_rng(seed)
        n, d = int(rng.integers(30, 200)), int(rng.integers(1, 6))
        phi = [(rng.uniform(size=(n, d)) < 0.5).astype(float), rng.uniform(size=(n, d)),
               np.eye(d)[rng.integers(0, d, n)]][seed % 3]
        if seed % 3 != 2:
            phi[:, 0] = 1.0
        scale = 10.0 ** rng.integers(-8, 9)
        s = rng.exponential(size=n)
        s = (np.round(s * 4) / 4 if seed % 2 else s) * scale
        tau = float(rng.choice([0.5, 0.8, 0.9]))
        c = phi[rng.integers(0, n)] if seed % 4 == 0 else np.zeros(d)
        fit = solve_quantile_lp(phi, s, tau, phantom=c)
        ref = linprog(-s / scale, A_eq=phi.T, b_eq=-tau * c, bounds=(tau - 1, tau), method="highs")
        assert objective(phi, s, tau, fit.beta, c) <= -ref.fun * scale + 1e-7 * scale * n, seed
        if seed % 3 == 2:
            continue
        start = solve_quantile_lp(phi, s, tau)
        for _ in range(3):
            t = rng.uniform(size=d) if seed % 3 == 1 else (rng.uniform(size=d) < 0.5).astype(float)
            t[0] = 1.0
            try:
                cold = float(t @ solve_quantile_lp(phi, s, tau, phantom=t, tie_direction=t).beta)
            except InfeasibleQuantileLP:
                cold = np.inf
            try:
                warm = float(t @ solve_quantile_lp(phi, s, tau, phantom=t, tie_direction=t, start=start).beta)
            except InfeasibleQuantileLP:
                warm = np.inf
            assert warm == cold or abs(warm - cold) <= 1e-9 * abs(cold), (seed, warm, cold)
