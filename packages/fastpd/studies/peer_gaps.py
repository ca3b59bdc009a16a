"""fastpd and shap's interventional TreeExplainer against brute force on the model types added here.

Brute force: all 2**d subsets of d = 5 features, each PD function the mean of the model's own predictions
over the background. Writes results/peer_gaps.json and prints a markdown table.
Run: OMP_NUM_THREADS=1 python packages/fastpd/studies/peer_gaps.py
"""

from __future__ import annotations

import json
import math
import platform
import sys
import traceback
from pathlib import Path

import numpy as np

from fastpd import FastPD

D = 5


def brute_shap(f, x, bg):
    n, d = x.shape
    masks = np.arange(1 << d)
    take = ((masks[:, None] >> np.arange(d)[None]) & 1).astype(bool)
    z = np.where(take[:, None, None, :], x[None, :, None, :], bg[None, None, :, :])
    out = np.asarray(f(z.reshape(-1, d)), dtype=np.float64)
    v = out.reshape(1 << d, n, len(bg), *out.shape[1:]).mean(axis=2)
    phi = np.zeros((n, d, *v.shape[2:]))
    for s in range(1 << d):
        k = bin(s).count("1")
        for j in range(d):
            if not s >> j & 1:
                phi[:, j] += math.factorial(k) * math.factorial(d - k - 1) / math.factorial(d) * (v[s | 1 << j] - v[s])
    return phi


def data(seed, cat=False, nan=0.0, n=400):
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(n + 120, D))
    eff = np.array([0.0, 2.0, -1.0, 3.0, 0.5, -2.0])
    if cat:
        x[:, 0] = rng.integers(0, 6, size=len(x))
    y = x[:, 1] * x[:, 2] + np.sin(2 * x[:, 3]) - 0.5 * x[:, 4] + (eff[x[:, 0].astype(int) % 6] if cat else x[:, 0])
    if nan:
        x[rng.random(x.shape) < nan] = np.nan
    return x[:n], y[:n], x[n : n + 100], x[n + 100 :]


def cases(seed):
    import lightgbm as lgb
    import xgboost as xgb
    from sklearn.ensemble import HistGradientBoostingRegressor, IsolationForest, RandomForestRegressor

    from fastpd._models import average_path_length

    x, y, bg, xe = data(seed)
    m = HistGradientBoostingRegressor(max_iter=20, max_depth=4, random_state=seed).fit(x, y)
    yield "HistGradientBoostingRegressor (numeric)", m, m.predict, bg, xe
    x, y, bg, xe = data(seed, nan=0.15)
    m = HistGradientBoostingRegressor(max_iter=20, max_depth=4, random_state=seed).fit(x, y)
    yield "HistGradientBoostingRegressor (15% NaN)", m, m.predict, bg, xe
    x, y, bg, xe = data(seed, cat=True)
    m = HistGradientBoostingRegressor(max_iter=20, max_depth=4, random_state=seed, categorical_features=[0]).fit(x, y)
    yield "HistGradientBoostingRegressor (categorical)", m, m.predict, bg, xe
    x, y, bg, xe = data(seed, cat=True)
    m = lgb.LGBMRegressor(n_estimators=20, num_leaves=12, min_data_per_group=5, cat_smooth=1.0, max_cat_to_onehot=2,
                          random_state=seed, n_jobs=1, verbose=-1).fit(x, y, categorical_feature=[0])
    yield "LightGBM categorical_feature", m, lambda z: m.predict(z, raw_score=True), bg, xe
    m = xgb.XGBRegressor(n_estimators=20, max_depth=4, feature_types=["c"] + ["q"] * (D - 1), enable_categorical=True,
                         max_cat_to_onehot=1, random_state=seed, n_jobs=1).fit(x, y)
    yield "XGBoost enable_categorical", m, lambda z: m.predict(z, output_margin=True), bg, xe
    x, y, bg, xe = data(seed)
    xm = np.where(np.random.default_rng(seed).random(x.shape) < 0.2, -999.0, x)
    m = xgb.XGBRegressor(n_estimators=20, max_depth=4, missing=-999.0, random_state=seed, n_jobs=1).fit(xm, y)
    bgm = np.where(np.random.default_rng(seed + 7).random(bg.shape) < 0.2, -999.0, bg)
    xem = np.where(np.random.default_rng(seed + 8).random(xe.shape) < 0.2, -999.0, xe)
    yield "XGBoost missing=-999", m, lambda z: m.predict(z, output_margin=True), bgm, xem
    m = IsolationForest(n_estimators=20, max_samples=128, random_state=seed).fit(x)
    c = float(average_path_length(np.array([m.max_samples_]))[0])
    yield "IsolationForest (mean path length)", m, lambda z: -c * np.log2(-m.score_samples(z)), bg, xe
    y2 = np.column_stack([y, x[:, 0] - x[:, 3] ** 2])
    m = RandomForestRegressor(n_estimators=10, max_depth=5, random_state=seed).fit(x, y2)
    yield "RandomForestRegressor (2 outputs)", m, m.predict, bg, xe


def main() -> None:
    import shap

    rows = []
    for seed in (0, 1, 2):
        for name, model, f, bg, xe in cases(seed):
            ref = brute_shap(f, xe, bg)
            ours = np.abs(FastPD(model, bg).shap_values(xe) - ref).max()
            try:
                ex = shap.TreeExplainer(model, shap.maskers.Independent(bg, max_samples=len(bg)))
                sv = np.asarray(ex.shap_values(xe, check_additivity=False))
                if sv.shape != ref.shape and sv.ndim == 3 and sv.shape[0] == ref.shape[-1]:
                    sv = np.moveaxis(sv, 0, -1)
                theirs = float(np.abs(sv - ref).max()) if sv.shape == ref.shape else f"shape {sv.shape}"
            except Exception as err:  # record what shap says
                theirs = f"raises {type(err).__name__}: {str(err).splitlines()[0][:90]}"
                traceback.print_exc(limit=0)
            rows.append({"model": name, "seed": seed, "fastpd_max_abs_err": float(ours), "shap_max_abs_err": theirs})
            print(rows[-1], flush=True)
    import lightgbm
    import sklearn
    import xgboost

    meta = {"python": sys.version.split()[0], "machine": platform.machine(), "shap": shap.__version__,
            "sklearn": sklearn.__version__, "xgboost": xgboost.__version__, "lightgbm": lightgbm.__version__,
            "d": D, "background": 100, "explained_rows": 20}
    out = Path(__file__).resolve().parents[1] / "results" / "peer_gaps.json"
    out.write_text(json.dumps({"meta": meta, "rows": rows}, indent=1) + "\n")
    print("| model | fastpd max abs err | shap max abs err |\n|---|---|---|")
    for name in dict.fromkeys(r["model"] for r in rows):
        rs = [r for r in rows if r["model"] == name]
        o = max(r["fastpd_max_abs_err"] for r in rs)
        t = [r["shap_max_abs_err"] for r in rs]
        t = f"{max(t):.2g}" if all(isinstance(v, float) for v in t) else str(next(v for v in t if isinstance(v, str)))
        print(f"| {name} | {o:.1e} | {t} |")


if __name__ == "__main__":
    main()
