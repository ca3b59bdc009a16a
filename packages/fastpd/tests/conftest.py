"""Small correlated-Gaussian problems and one fitted model per supported library (session-scoped)."""

from __future__ import annotations

import numpy as np
import pytest

D = 6


def make_data(n: int, seed: int, d: int = D, rho: float = 0.4):
    rng = np.random.default_rng(seed)
    cov = rho * np.ones((d, d)) + (1 - rho) * np.eye(d)
    x = rng.multivariate_normal(np.zeros(d), cov, size=n)
    y = x[:, 0] * x[:, 1] + np.sin(2 * x[:, 2]) + x[:, 3] - 0.5 * x[:, 4] * x[:, 5] + 0.1 * rng.normal(size=n)
    return x, y


@pytest.fixture(scope="session")
def data():
    x, y = make_data(900, seed=0)
    return {"X": x[:300], "y": y[:300], "bg": x[300:800], "Xe": x[800:830], "yb": (y[:300] > 0).astype(int),
            "y3": np.digitize(y[:300], [-0.5, 0.5])}


@pytest.fixture(scope="session")
def models(data):
    """name -> (model, margin function)."""
    import lightgbm as lgb
    import xgboost as xgb
    from sklearn.ensemble import (
        ExtraTreesRegressor,
        GradientBoostingClassifier,
        GradientBoostingRegressor,
        RandomForestClassifier,
        RandomForestRegressor,
    )
    from sklearn.tree import DecisionTreeClassifier

    X, y, yb, y3 = data["X"], data["y"], data["yb"], data["y3"]
    out = {
        "sklearn-gbr": GradientBoostingRegressor(n_estimators=15, max_depth=3, random_state=0).fit(X, y),
        "sklearn-rf": RandomForestRegressor(n_estimators=5, max_depth=4, random_state=0).fit(X, y),
        "sklearn-rfc": RandomForestClassifier(n_estimators=4, max_depth=4, random_state=0).fit(X, y3),
        "sklearn-gbc": GradientBoostingClassifier(n_estimators=10, max_depth=3, random_state=0).fit(X, yb),
        "xgboost": xgb.XGBRegressor(n_estimators=15, max_depth=4, random_state=0, n_jobs=1).fit(X, y),
        "xgboost-binary": xgb.XGBClassifier(n_estimators=10, max_depth=3, random_state=0, n_jobs=1).fit(X, yb),
        "xgboost-multiclass": xgb.XGBClassifier(n_estimators=5, max_depth=3, random_state=0, n_jobs=1).fit(X, y3),
        "lightgbm": lgb.LGBMRegressor(n_estimators=15, num_leaves=10, min_child_samples=5, random_state=0,
                                      n_jobs=1, verbose=-1).fit(X, y),
        "lightgbm-multiclass": lgb.LGBMClassifier(n_estimators=4, num_leaves=6, min_child_samples=5, random_state=0,
                                                  n_jobs=1, verbose=-1).fit(X, y3),
        "sklearn-et": ExtraTreesRegressor(n_estimators=4, max_depth=5, random_state=0).fit(X, y),
        "sklearn-dtc": DecisionTreeClassifier(max_depth=4, random_state=0).fit(X, yb),
        "lightgbm-binary": lgb.LGBMClassifier(n_estimators=10, num_leaves=8, min_child_samples=5, random_state=0,
                                              n_jobs=1, verbose=-1).fit(X, yb),
    }
    return out


def margin(model, X):
    """The raw margin each library reports (log-odds for boosted classifiers)."""
    mod = type(model).__module__
    if mod.startswith("xgboost"):
        return model.predict(X, output_margin=True)
    if mod.startswith("lightgbm"):
        return model.predict(X, raw_score=True)
    if hasattr(model, "decision_function"):
        return model.decision_function(X)
    if hasattr(model, "predict_proba"):
        return model.predict_proba(X)
    return model.predict(X)


def brute_pd(model, X, bg, subset):
    """Mean over background rows z of f(x_S, z_{-S}), for every row x of X: one batched predict."""
    z = np.repeat(bg[None], len(X), axis=0)  # (n, n_b, d)
    cols = list(subset)
    z[:, :, cols] = X[:, None, cols]
    f = np.asarray(margin(model, z.reshape(-1, X.shape[1])), dtype=np.float64)
    return f.reshape(len(X), len(bg), *f.shape[1:]).mean(axis=1)


def brute_game(f, X, bg):
    """{bitmask S: v_S(x) = mean over background z of f(x_S, z_-S)} for all 2**d subsets, one batched call."""
    n, d = X.shape
    masks = np.arange(1 << d)
    take = ((masks[:, None] >> np.arange(d)[None]) & 1).astype(bool)  # (2**d, d)
    z = np.where(take[:, None, None, :], X[None, :, None, :], bg[None, None, :, :])  # (2**d, n, n_b, d)
    out = np.asarray(f(z.reshape(-1, d)), dtype=np.float64)
    out = out.reshape(1 << d, n, len(bg), *out.shape[1:]).mean(axis=2)
    return {int(m): out[m] for m in masks}


def brute_shapley(v, d):
    """Shapley values (n, d[, K]) of the games v from :func:`brute_game`."""
    from math import factorial

    phi = np.zeros((d, *v[0].shape))
    for s, vs in v.items():
        size = bin(s).count("1")
        for j in range(d):
            if not s >> j & 1:
                phi[j] += factorial(size) * factorial(d - size - 1) / factorial(d) * (v[s | 1 << j] - vs)
    return np.moveaxis(phi, 0, 1)


def brute_interactions(v, d):
    """SHAP interaction values (n, d, d[, K]): off-diagonal half the Shapley interaction index,
    diagonal the SHAP value minus the row's off-diagonal sum (Lundberg et al. 2020)."""
    from math import factorial

    phi = brute_shapley(v, d)
    out = np.zeros((v[0].shape[0], d, d, *v[0].shape[1:]))
    for j in range(d):
        for k in range(d):
            if j == k:
                continue
            for s, vs in v.items():
                if s >> j & 1 or s >> k & 1:
                    continue
                size = bin(s).count("1")
                w = factorial(size) * factorial(d - size - 2) / factorial(d - 1)
                out[:, j, k] += w * (v[s | 1 << j | 1 << k] - v[s | 1 << j] - v[s | 1 << k] + vs) / 2
    for j in range(d):
        out[:, j, j] = phi[:, j] - (out[:, j].sum(axis=1) - out[:, j, j])
    return out


def assert_exact(fp, f, X, bg, atol=1e-6):
    """SHAP values, interaction values, every PD function and the prediction of FastPD equal brute force."""
    d = X.shape[1]
    v = brute_game(f, X, bg)
    np.testing.assert_allclose(fp.predict(X), v[(1 << d) - 1], rtol=0, atol=atol)
    np.testing.assert_allclose(fp.intercept_, v[0][0], rtol=0, atol=atol)
    np.testing.assert_allclose(fp.shap_values(X), brute_shapley(v, d), rtol=0, atol=atol)
    np.testing.assert_allclose(fp.shap_interaction_values(X), brute_interactions(v, d), rtol=0, atol=atol)
    member = [s for s in v if 0 < s < (1 << d) - 1]
    got = fp.pd_functions(X, max_order=d)
    for s in member:
        key = tuple(j for j in range(d) if s >> j & 1)
        np.testing.assert_allclose(got[key], v[s], rtol=0, atol=atol, err_msg=f"PD of {key}")
    return v


@pytest.fixture(scope="session")
def h():
    """Helpers for test modules (the suite runs in pytest's importlib mode, so no cross-imports)."""
    from types import SimpleNamespace

    return SimpleNamespace(D=D, margin=margin, brute_pd=brute_pd, make_data=make_data, brute_game=brute_game,
                           brute_shapley=brute_shapley, brute_interactions=brute_interactions,
                           assert_exact=assert_exact)
