"""The paper's experiments at CPU scale: the diabetes demo and the consistency study (Liu et al. 2025, Sec. 5)."""

from __future__ import annotations

import logging
import time
from typing import Any

import numpy as np
from icml25_shared.cli import RunContext, progress
from icml25_shared.random import RandomStateLike, child_seeds, spawn
from icml25_shared.stats import mean_sd
from icml25_shared.tables import markdown_table

from fastpd.explainer import FastPD

log = logging.getLogger(__name__)


# ------------------------------------------------------------------------------------ simulations
def simulate_consistency(n: int, rng: np.random.Generator, *, corr: float = 0.3,
                         noise: float = 1.0) -> tuple[np.ndarray, np.ndarray]:
    """Draw the paper's consistency setting.

    X ~ N(0, [[1, c], [c, 1]]) and y = x1 + x2 + 2 x1 x2 + N(0, noise^2).

    Parameters
    ----------
    n : int
        Rows.
    rng : numpy.random.Generator
        The stream to draw from.
    corr : float, default 0.3
        Correlation c of x1 and x2.
    noise : float, default 1.0
        Standard deviation of the noise.

    Returns
    -------
    X : ndarray of shape (n, 2)
    y : ndarray of shape (n,)
    """
    x = rng.multivariate_normal([0.0, 0.0], [[1.0, corr], [corr, 1.0]], size=n)
    y = x[:, 0] + x[:, 1] + 2 * x[:, 0] * x[:, 1] + noise * rng.normal(size=n)
    return x, y


def consistency_truth(x: np.ndarray, corr: float = 0.3) -> dict[str, np.ndarray]:
    """Closed-form marginal decomposition and SHAP of f = x1 + x2 + 2 x1 x2 under corr(x1, x2) = c.

    Parameters
    ----------
    x : ndarray of shape (n, 2)
        Evaluation points.
    corr : float, default 0.3
        Correlation c of x1 and x2.

    Returns
    -------
    dict of str to ndarray
        ``m1``, ``m2``, ``m12``, ``shap1`` and ``shap2`` at the points, each (n,).
    """
    x1, x2 = x[:, 0], x[:, 1]
    return {"m1": x1 - 2 * corr, "m2": x2 - 2 * corr, "m12": 2 * x1 * x2 + 2 * corr,
            "shap1": x1 + x1 * x2 - corr, "shap2": x2 + x1 * x2 - corr}


def simulate_runtime(n: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """Draw the paper's runtime setting (Fig. 4).

    d = 7, X ~ N(1, 3 I + antidiag / 5) and
    y = 3 sin x1 + 2.5 cos(0.3 x2) + 1.12 x3 + sin(x4 x5) + 0.7 x6 x7 + N(0, 0.1^2).

    Parameters
    ----------
    n : int
        Rows.
    rng : numpy.random.Generator
        The stream to draw from.

    Returns
    -------
    X : ndarray of shape (n, 7)
    y : ndarray of shape (n,)
    """
    d = 7
    cov = 3 * np.eye(d) + np.fliplr(np.eye(d)) / 5
    x = rng.multivariate_normal(np.ones(d), cov, size=n)
    y = (3 * np.sin(x[:, 0]) + 2.5 * np.cos(0.3 * x[:, 1]) + 1.12 * x[:, 2] + np.sin(x[:, 3] * x[:, 4])
         + 0.7 * x[:, 5] * x[:, 6] + 0.1 * rng.normal(size=n))
    return x, y


def _fit_xgb(x: np.ndarray, y: np.ndarray, rng: np.random.Generator, seed: int, *, quick: bool) -> Any:
    """XGBoost with early stopping on a 20% split (the paper tunes by random-search CV instead)."""
    try:
        import xgboost as xgb
    except ImportError as err:  # an extra, not a base dependency
        raise ImportError("the consistency experiment fits XGBoost: pip install 'fastpd[xgboost]'") from err

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
    """Explain a gradient-boosting model of the diabetes data bundled with scikit-learn.

    Writes a table of the top features by mean |SHAP| and the strongest pairwise components, and a
    figure with a SHAP beeswarm, a PD plot with ICE curves, a 2-D PD and an interaction heatmap.

    Parameters
    ----------
    ctx : RunContext
        The command's output folder, seed and ``--quick`` flag.
    """
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
    names: list[str] = fp.feature_names_ or [f"x{j}" for j in range(fp.n_features_in_)]
    pairs = sorted(ex.decomposition.of_order(2).items(), key=lambda kv: -np.abs(kv[1]).mean())[:5]
    imp = np.abs(ex.shap_values).mean(axis=0)
    top = np.argsort(-imp)[:5]
    rows = []
    for r in range(5):
        s, comp = pairs[r] if r < len(pairs) else ((), np.zeros(1))
        pair = " x ".join(names[j] for j in s) if s else "-"
        rows.append([r + 1, names[top[r]], f"{imp[top[r]]:.2f}", pair, f"{np.abs(comp).mean():.2f}"])
    err = np.abs(ex.decomposition.total() - model.predict(data.X)).max()
    table = markdown_table(rows, ["rank", "feature", "mean abs SHAP", "pair (order-2 component)", "mean abs m_jk"])
    lines = [table, "", f"{model.n_estimators} trees (depth 3), {len(data.X)} rows explained against a {len(data.X)}-row "
             f"background in {elapsed:.2f} s (augmentation + prediction + SHAP + interactions + all "
             f"{len(ex.decomposition.components)} components). Max |sum of components - prediction| = {err:.1e}; "
             f"intercept {fp.intercept_:.2f} = mean prediction {model.predict(data.X).mean():.2f}."]
    ctx.write_table("\n".join(lines))
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
def consistency_experiment(sizes: list[int], reps: int, *, random_state: RandomStateLike = 0, corr: float = 0.3,
                           n_eval: int = 1000, quick: bool = False, show_progress: bool = False) -> dict:
    """Measure the MSE of FastPD and path-dependent estimates against the closed-form truth.

    For each n and replication, one XGBoost model is fitted and explained by FastPD (full
    background), FastPD on a 100-row background and the path-dependent (cover-weight) method; the
    MSEs of m1, m2, m12, SHAP1 and SHAP2 are taken on ``n_eval`` fresh points.

    Parameters
    ----------
    sizes : list of int
        Training-set sizes n.
    reps : int
        Replications per size.
    random_state : None, int or numpy Generator, default 0
        Root of the independent streams of every (n, replication) job.
    corr : float, default 0.3
        Correlation of the two features.
    n_eval : int, default 1000
        Fresh evaluation points per job.
    quick : bool, default False
        Fewer boosting rounds (with a larger learning rate).
    show_progress : bool, default False
        A progress bar over the jobs.

    Returns
    -------
    dict
        JSON-able: ``mse[method][str(n)][target]`` holds ``mean``, ``sd`` and ``se`` over the
        replications, ``raw`` the per-replication values.
    """
    methods: dict[str, dict[str, Any]] = {"fastpd": {}, "fastpd-100": {"max_background": 100},
                                          "path-dependent": {"method": "path-dependent"}}
    targets = ["m1", "m2", "m12", "shap1", "shap2"]
    raw: dict[str, dict[int, dict[str, list[float]]]] = {m: {n: {t: [] for t in targets} for n in sizes}
                                                         for m in methods}
    jobs = [n for n in sizes for _ in range(reps)]
    streams = spawn(random_state, len(jobs))
    for n, rng in progress(list(zip(jobs, streams, strict=True)), enabled=show_progress, desc="reproduce"):
        x, y = simulate_consistency(n, rng, corr=corr)
        xe, _ = simulate_consistency(n_eval, rng, corr=corr)
        truth = consistency_truth(xe, corr)
        model_seed, background_seed = child_seeds(rng, 2)
        model = _fit_xgb(x, y, rng, seed=model_seed % 2**31, quick=quick)
        for name, kw in methods.items():
            fp = FastPD(model, x, random_state=background_seed, **kw)
            dec = fp.decompose(xe)
            sv = fp.shap_values(xe)
            est = {"m1": dec.components.get((0,), 0.0), "m2": dec.components.get((1,), 0.0),
                   "m12": dec.components.get((0, 1), np.zeros(len(xe))), "shap1": sv[:, 0], "shap2": sv[:, 1]}
            for t in targets:
                raw[name][n][t].append(float(np.mean((est[t] - truth[t]) ** 2)))
    summary: dict[str, dict[str, dict[str, dict[str, Any]]]] = {}
    for m, by_n in raw.items():
        summary[m] = {}
        for n, by_t in by_n.items():
            cells = {}
            for t, v in by_t.items():
                ms = mean_sd(v)
                cells[t] = {"mean": ms.mean, "sd": ms.sd, "se": ms.sd / np.sqrt(ms.n)}
            summary[m][str(n)] = cells
    return {"sizes": sizes, "reps": reps, "corr": corr, "n_eval": n_eval, "targets": targets,
            "mse": summary, "raw": {m: {str(n): v for n, v in by_n.items()} for m, by_n in raw.items()}}


def reproduce_figure(result: dict[str, Any]) -> Any:
    """The reproduce figure, drawn from its JSON (``results/reproduce.json``) alone.

    Parameters
    ----------
    result : dict
        What :func:`consistency_experiment` returns: ``sizes``, ``reps``, ``mse`` and the per-replication
        ``raw`` MSEs by method, size and target.

    Returns
    -------
    matplotlib.figure.Figure
        Three panels (m1, m12, SHAP of x1): box plots of the per-replication MSE against the closed-form
        truth, one box per method and training size.
    """
    import matplotlib.pyplot as plt

    sizes = result["sizes"]
    methods = list(result["mse"])
    fig, axes = plt.subplots(1, 3, figsize=(12, 3.9), sharey=False, layout="constrained")
    for ax, t in zip(axes, ["m1", "m12", "shap1"], strict=True):
        for i, m in enumerate(methods):
            vals = [result["raw"][m][str(n)][t] for n in sizes]
            pos = np.arange(len(sizes)) + (i - (len(methods) - 1) / 2) * 0.25
            ax.boxplot(vals, positions=pos, widths=0.2, patch_artist=True,
                       boxprops={"facecolor": f"C{i}", "alpha": 0.6}, medianprops={"color": "k"})
            ax.plot([], [], color=f"C{i}", lw=6, alpha=0.6, label=m)
        ax.set_xticks(range(len(sizes)))
        ax.set_xticklabels([f"n={n}" for n in sizes])
        ax.set_yscale("log")
        ax.set_xlabel("training rows")
        ax.set_ylabel("MSE (log scale)")
        ax.set_title(f"MSE of {t} vs closed-form truth")
    axes[0].legend(fontsize=8)
    fig.suptitle(f"{result['reps']} replications per box (d = 2, correlation {result['corr']})", fontsize=9)
    return fig


def reproduce(ctx: RunContext) -> None:
    """Run the paper's consistency experiment: d = 2, correlation 0.3, y = x1 + x2 + 2 x1 x2 + noise.

    Writes the JSON of :func:`consistency_experiment`, a table of MSE (mean ± standard error) and
    box plots of the per-replication MSEs.

    Parameters
    ----------
    ctx : RunContext
        The command's output folder, seed and ``--quick`` flag (1 replication instead of 20).
    """
    import matplotlib.pyplot as plt

    sizes = [500, 5000]
    reps = 1 if ctx.quick else 20
    t0 = time.perf_counter()
    res = consistency_experiment(sizes, reps, random_state=ctx.seed, n_eval=200 if ctx.quick else 1000, quick=ctx.quick,
                                 show_progress=not ctx.quick)
    res["seconds"] = time.perf_counter() - t0
    ctx.write_json(res)
    rows = [[m, n] + [f"{by_t[t]['mean']:.4f} ± {by_t[t]['se']:.4f}" for t in res["targets"]]
            for m, by_n in res["mse"].items() for n, by_t in by_n.items()]
    ctx.write_table(rows, headers=["method", "n", "MSE m1", "MSE m2", "MSE m12", "MSE SHAP1", "MSE SHAP2"])
    fig = reproduce_figure(res)
    ctx.save_figure(fig)
    plt.close(fig)
