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


@pytest.fixture(scope="session")
def h():
    """Helpers for test modules (the suite runs in pytest's importlib mode, so no cross-imports)."""
    from types import SimpleNamespace

    return SimpleNamespace(D=D, margin=margin, brute_pd=brute_pd, make_data=make_data)
