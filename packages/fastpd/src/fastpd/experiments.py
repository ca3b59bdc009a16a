"""The paper's experiments at CPU scale: the diabetes demo and the consistency study (Liu et al. 2025, Sec. 5)."""

from __future__ import annotations

import logging
import time

import numpy as np
from icml25_shared.cli import RunContext, progress

from fastpd.explainer import FastPD

log = logging.getLogger(__name__)


# ------------------------------------------------------------------------------------ simulations
def simulate_consistency(n: int, rng: np.random.Generator, *, corr: float = 0.3, noise: float = 1.0):
    """The paper's consistency setting: X ~ N(0, [[1, c], [c, 1]]), y = x1 + x2 + 2 x1 x2 + N(0, noise^2).

    Returns X (n, 2) and y (n,).
    """
    x = rng.multivariate_normal([0.0, 0.0], [[1.0, corr], [corr, 1.0]], size=n)
    y = x[:, 0] + x[:, 1] + 2 * x[:, 0] * x[:, 1] + noise * rng.normal(size=n)
    return x, y


def consistency_truth(x: np.ndarray, corr: float = 0.3) -> dict[str, np.ndarray]:
    """Closed-form marginal decomposition and SHAP of f = x1 + x2 + 2 x1 x2 under corr(x1, x2) = c."""
    x1, x2 = x[:, 0], x[:, 1]
    return {"m1": x1 - 2 * corr, "m2": x2 - 2 * corr, "m12": 2 * x1 * x2 + 2 * corr,
            "shap1": x1 + x1 * x2 - corr, "shap2": x2 + x1 * x2 - corr}


def simulate_runtime(n: int, rng: np.random.Generator):
    """The paper's runtime setting (Fig. 4): d = 7, X ~ N(1, 3 I + antidiag / 5),
    y = 3 sin x1 + 2.5 cos(0.3 x2) + 1.12 x3 + sin(x4 x5) + 0.7 x6 x7 + N(0, 0.1^2)."""
    d = 7
    cov = 3 * np.eye(d) + np.fliplr(np.eye(d)) / 5
    x = rng.multivariate_normal(np.ones(d), cov, size=n)
    y = (3 * np.sin(x[:, 0]) + 2.5 * np.cos(0.3 * x[:, 1]) + 1.12 * x[:, 2] + np.sin(x[:, 3] * x[:, 4])
         + 0.7 * x[:, 5] * x[:, 6] + 0.1 * rng.normal(size=n))
    return x, y


def _fit_xgb(x: np.ndarray, y: np.ndarray, seed: int, *, quick: bool):
    """XGBoost with early stopping on a 20% split (the paper tunes by random-search CV instead)."""
    try:
        import xgboost as xgb
    except ImportError as err:  # an extra, not a base dependency
        raise ImportError("the consistency experiment fits XGBoost: pip install 'fastpd[xgboost]'") from err

    rng = np.random.default_rng(seed)
    idx = rng.permutation(len(x))
    cut = int(0.8 * len(x))
    tr, va = idx[:cut], idx[cut:]
    model = xgb.XGBRegressor(n_estimators=150 if quick else 1000, learning_rate=0.1 if quick else 0.05, max_depth=3,
                             early_stopping_rounds=20, n_jobs=1, random_state=seed)
    model.fit(x[tr], y[tr], eval_set=[(x[va], y[va])], verbose=False)
    # refit on all rows with the selected number of rounds, so the background is the training data
    best = model.best_iteration + 1
    final = xgb.XGBRegressor(n_estimators=best, learning_rate=model.learning_rate, max_depth=3, n_jobs=1,
                             random_state=seed)
    return final.fit(x, y)


# ------------------------------------------------------------------------------------------- demo
def demo(ctx: RunContext) -> None:
    """Diabetes (bundled with scikit-learn): SHAP summary, PD plots and the strongest interactions."""
    import matplotlib.pyplot as plt
    from icml25_shared.data import load
    from sklearn.ensemble import GradientBoostingRegressor

    from fastpd import plot

    data = load("diabetes", seed=ctx.seed)
    model = GradientBoostingRegressor(n_estimators=60 if ctx.quick else 200, max_depth=3, learning_rate=0.05,
                                      random_state=ctx.seed).fit(data.X, data.y)
    t0 = time.perf_counter()
    fp = FastPD(model, data.X, feature_names=list(data.feature_names))
    ex = fp.explain(data.X)
    elapsed = time.perf_counter() - t0
    names = fp.feature_names_
    pairs = sorted(ex.decomposition.of_order(2).items(), key=lambda kv: -np.abs(kv[1]).mean())[:5]
    imp = np.abs(ex.shap_values).mean(axis=0)
    top = np.argsort(-imp)[:5]
    rows = ["| rank | feature | mean abs SHAP | pair (order-2 component) | mean abs m_jk |", "|---|---|---|---|---|"]
    for r in range(5):
        s, comp = pairs[r] if r < len(pairs) else ((), np.zeros(1))
        pair = " x ".join(names[j] for j in s) if s else "-"
        rows.append(f"| {r + 1} | {names[top[r]]} | {imp[top[r]]:.2f} | {pair} | {np.abs(comp).mean():.2f} |")
    err = np.abs(ex.decomposition.total() - model.predict(data.X)).max()
    rows += ["", f"{model.n_estimators} trees (depth 3), {len(data.X)} rows explained against a {len(data.X)}-row "
             f"background in {elapsed:.2f} s (augmentation + prediction + SHAP + interactions + all "
             f"{len(ex.decomposition.components)} components). Max |sum of components - prediction| = {err:.1e}; "
             f"intercept {fp.intercept_:.2f} = mean prediction {model.predict(data.X).mean():.2f}."]
    ctx.write_table("\n".join(rows))
    fig, axes = plt.subplots(2, 2, figsize=(11, 8.5))
    plot.shap_summary(ex.shap_values, data.X, feature_names=names, ax=axes[0, 0])
    plot.pd_1d(fp, int(top[0]), ax=axes[0, 1])
    j, k = pairs[0][0] if pairs else (int(top[0]), int(top[1]))
    plot.pd_2d(fp, (j, k), ax=axes[1, 0])
    plot.interaction_heatmap(ex.shap_interaction_values, feature_names=names, diagonal=False, ax=axes[1, 1])
    axes[0, 0].set_title("interventional SHAP (full background)")
    axes[0, 1].set_title(f"PD of {names[top[0]]} with ICE curves")
    axes[1, 0].set_title(f"2-D PD of {names[j]} and {names[k]}")
    axes[1, 1].set_title("SHAP interaction values (off-diagonal)")
    fig.tight_layout()
    ctx.save_figure(fig)
    plt.close(fig)


# ------------------------------------------------------------------------------------- reproduce
def consistency_experiment(sizes: list[int], reps: int, *, seed: int = 0, corr: float = 0.3, n_eval: int = 1000,
                           quick: bool = False, show_progress: bool = False) -> dict:
    """MSE against the closed-form truth of FastPD (full and 100-row background) and path-dependent
    estimates of m1, m2, m12 and SHAP, for each n, over ``reps`` replications. Returns a JSON-able dict."""
    methods = {"fastpd": {}, "fastpd-100": {"max_background": 100}, "path-dependent": {"method": "path-dependent"}}
    targets = ["m1", "m2", "m12", "shap1", "shap2"]
    raw = {m: {n: {t: [] for t in targets} for n in sizes} for m in methods}
    jobs = [(n, r) for n in sizes for r in range(reps)]
    for n, r in progress(jobs, enabled=show_progress, desc="reproduce"):
        rng = np.random.default_rng([seed, n, r])
        x, y = simulate_consistency(n, rng, corr=corr)
        xe, _ = simulate_consistency(n_eval, rng, corr=corr)
        truth = consistency_truth(xe, corr)
        model = _fit_xgb(x, y, seed=seed + r, quick=quick)
        for name, kw in methods.items():
            fp = FastPD(model, x, random_state=r, **kw)
            dec = fp.decompose(xe)
            sv = fp.shap_values(xe)
            est = {"m1": dec.components.get((0,), 0.0), "m2": dec.components.get((1,), 0.0),
                   "m12": dec.components.get((0, 1), np.zeros(len(xe))), "shap1": sv[:, 0], "shap2": sv[:, 1]}
            for t in targets:
                raw[name][n][t].append(float(np.mean((est[t] - truth[t]) ** 2)))
    summary = {m: {str(n): {t: {"mean": float(np.mean(v)), "se": float(np.std(v) / np.sqrt(len(v)))}
                            for t, v in by_t.items()} for n, by_t in by_n.items()} for m, by_n in raw.items()}
    return {"sizes": sizes, "reps": reps, "corr": corr, "n_eval": n_eval, "targets": targets,
            "mse": summary, "raw": {m: {str(n): v for n, v in by_n.items()} for m, by_n in raw.items()}}


def reproduce(ctx: RunContext) -> None:
    """The paper's consistency experiment: d = 2, correlation 0.3, y = x1 + x2 + 2 x1 x2 + noise."""
    import matplotlib.pyplot as plt

    sizes = [500, 5000]
    reps = 1 if ctx.quick else 20
    t0 = time.perf_counter()
    res = consistency_experiment(sizes, reps, seed=ctx.seed, n_eval=200 if ctx.quick else 1000, quick=ctx.quick,
                                 show_progress=not ctx.quick)
    res["seconds"] = time.perf_counter() - t0
    ctx.write_json(res)
    rows = ["| method | n | MSE m1 | MSE m2 | MSE m12 | MSE SHAP1 | MSE SHAP2 |", "|---|---|---|---|---|---|---|"]
    for m, by_n in res["mse"].items():
        for n, by_t in by_n.items():
            rows.append(f"| {m} | {n} | " + " | ".join(f"{by_t[t]['mean']:.4f} ± {by_t[t]['se']:.4f}"
                                                       for t in res["targets"]) + " |")
    ctx.write_table("\n".join(rows))
    fig, axes = plt.subplots(1, 3, figsize=(12, 3.6), sharey=False)
    for ax, t in zip(axes, ["m1", "m12", "shap1"], strict=True):
        for i, m in enumerate(res["mse"]):
            vals = [res["raw"][m][str(n)][t] for n in sizes]
            pos = np.arange(len(sizes)) + (i - 1) * 0.25
            ax.boxplot(vals, positions=pos, widths=0.2, patch_artist=True,
                       boxprops={"facecolor": f"C{i}", "alpha": 0.6}, medianprops={"color": "k"})
            ax.plot([], [], color=f"C{i}", lw=6, alpha=0.6, label=m)
        ax.set_xticks(range(len(sizes)))
        ax.set_xticklabels([f"n={n}" for n in sizes])
        ax.set_yscale("log")
        ax.set_title(f"MSE of {t} vs closed-form truth")
    axes[0].legend(fontsize=8)
    fig.tight_layout()
    ctx.save_figure(fig)
    plt.close(fig)
