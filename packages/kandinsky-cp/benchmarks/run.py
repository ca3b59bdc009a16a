"""Benchmark kandinsky_cp against MAPIE 1.x and crepes in one process; writes JSON and prints a markdown table.

Rows:
1. covariate groups (n_cal=5000, d=20 overlapping indicators, 2000 test points): KandinskyCP conformalize +
   predict_interval vs MAPIE's ConditionalSplitConformalRegressor (conformalize + predict_interval, its
   default exact=True path); both times and coverages (overall and worst group) are recorded.
2. the same groups on the first --n-test-exact test points: KandinskyCP(exact=True) (augmented fit, one LP per
   distinct Phi(x)) vs the same MAPIE call, with their largest interval difference.
3. intercept: KandinskyCP vs MAPIE SplitConformalRegressor (identical intervals).
4. Mondrian (8 bins): KandinskyCP vs crepes ConformalRegressor (identical intervals).
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np
from icml25_shared.bench import BenchmarkReport, compare
from sklearn.linear_model import LinearRegression

from kandinsky_cp import KandinskyCP
from kandinsky_cp import groups as G
from kandinsky_cp.metrics import covered, group_coverage

THRESHOLDS = (0.25, 0.5, 0.75)


def feature_map(X: np.ndarray) -> np.ndarray:
    """(n, 20): intercept, 1{x_j > t} for 5 features x 3 cut points, and 4 pairwise quadrant indicators."""
    X = np.asarray(X)
    cols = [np.ones(len(X))]
    cols += [X[:, j] > t for j in range(5) for t in THRESHOLDS]
    cols += [(X[:, 0] > 0.5) & (X[:, 1] > 0.5), (X[:, 1] > 0.5) & (X[:, 2] > 0.5),
             (X[:, 2] > 0.5) & (X[:, 3] > 0.5), (X[:, 3] > 0.5) & (X[:, 4] > 0.5)]
    return np.column_stack(cols).astype(float)


def make_data(n_cal: int, n_test: int, seed: int = 0):
    rng = np.random.default_rng(seed)
    n = 1000 + n_cal + n_test
    X = rng.uniform(size=(n, 5))
    y = X @ np.array([2.0, -1.0, 1.0, 0.5, 0.0]) + rng.normal(size=n) * (0.2 + X[:, 0] + 0.5 * X[:, 3])
    reg = LinearRegression().fit(X[:1000], y[:1000])
    cal, test = slice(1000, 1000 + n_cal), slice(1000 + n_cal, n)
    return reg, X[cal], y[cal], X[test], y[test]


def coverage_metrics(intervals: np.ndarray, X: np.ndarray, y: np.ndarray) -> dict[str, float]:
    rep = group_coverage(covered(intervals, y), feature_map(X), confidence_level=0.9)
    return {"coverage": float(rep.coverage[0]), "worst_group_dev": rep.worst_deviation,
            "mean_width": float(np.mean(intervals[:, 1] - intervals[:, 0]))}


def mondrian_metrics(ours: np.ndarray, peer: np.ndarray, bins_cal: np.ndarray, bins_test: np.ndarray) -> dict:
    """Largest difference overall and outside bins where (n_b + 1) * alpha is an integer: there crepes'
    float index int((1 - confidence) * (n_b + 1)) - 1 lands one order statistic higher than split CP's."""
    counts = np.bincount(bins_cal, minlength=bins_test.max() + 1)
    edge = np.isclose(((counts + 1) * 0.1) % 1, 0) | np.isclose(((counts + 1) * 0.1) % 1, 1)
    diff = np.abs(ours - peer).max(axis=1)
    regular = ~edge[bins_test]
    return {"max_abs_diff": float(diff.max()), "max_abs_diff_regular_bins": float(diff[regular].max()),
            "integer_bins": int(edge.sum())}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--out", type=Path, default=Path("out/kandinsky_cp/benchmark.json"))
    parser.add_argument("--repeats", type=int, default=1)
    parser.add_argument("--n-cal", type=int, default=5000)
    parser.add_argument("--n-test", type=int, default=2000)
    parser.add_argument("--n-test-exact", type=int, default=100)
    args = parser.parse_args()
    from crepes import ConformalRegressor
    from mapie.conditional_conformal_prediction import ConditionalSplitConformalRegressor
    from mapie.regression import SplitConformalRegressor

    report = BenchmarkReport("kandinsky-cp", packages=["kandinsky-cp", "mapie", "crepes", "scipy", "cvxpy"])
    reg, Xc, yc, Xt, yt = make_data(args.n_cal, args.n_test)
    groups = G.fractional(lambda X, y: feature_map(X), names=[f"g{j}" for j in range(20)])
    sizes = {"n_cal": args.n_cal, "d": 20, "n_test": args.n_test}

    def ours(exact: bool = False, n_test: int = args.n_test) -> np.ndarray:
        cp = KandinskyCP(reg, groups=groups, exact=exact, random_state=0).conformalize(Xc, yc)
        return cp.predict_interval(Xt[:n_test])[1][:, :, 0]

    def mapie(n_test: int = args.n_test) -> np.ndarray:
        m = ConditionalSplitConformalRegressor(feature_map, estimator=reg, confidence_level=0.9)
        return m.conformalize(Xc, yc).predict_interval(Xt[:n_test])[1][:, :, 0]

    # MAPIE takes minutes here: time it once (the timed call's output is reused for the metrics)
    outputs = {}

    def keep(name, fn):
        def run():
            outputs[name] = fn()
            return outputs[name]
        return run

    row = compare(keep("ours", ours), keep("mapie", mapie),
                  label="covariate groups: KandinskyCP (one LP) vs MAPIE conditional",
                  ours_name="KandinskyCP", peer_name="MAPIE ConditionalSplitConformalRegressor",
                  repeats=args.repeats, warmup=0, sizes=sizes)
    row.metrics.update({f"ours_{k}": v for k, v in coverage_metrics(outputs["ours"], Xt, yt).items()})
    row.metrics.update({f"mapie_{k}": v for k, v in coverage_metrics(outputs["mapie"], Xt, yt).items()})
    report.add(row)
    ne = args.n_test_exact
    row = compare(keep("exact", lambda: ours(True, ne)), keep("mapie_small", lambda: mapie(ne)),
                  label=f"covariate groups, {ne} test points: KandinskyCP(exact=True) vs MAPIE conditional",
                  ours_name="KandinskyCP exact", peer_name="MAPIE ConditionalSplitConformalRegressor",
                  repeats=1, warmup=0, sizes={**sizes, "n_test": ne})
    diff = np.abs(outputs["exact"] - outputs["mapie_small"])
    row.metrics.update({"max_abs_diff_vs_mapie": float(diff.max()), "frac_rows_differing_1e-6": float(
        np.mean(diff.max(axis=1) > 1e-6)), "max_abs_diff_vs_mapie_first_rows_of_row1": float(
        np.max(np.abs(outputs["mapie"][:ne] - outputs["mapie_small"])))})
    report.add(row)

    def ours_split() -> np.ndarray:
        return KandinskyCP(reg, groups=G.intercept(), randomize=False).conformalize(Xc, yc).predict_interval(Xt)[1][:, :, 0]

    def mapie_split() -> np.ndarray:
        m = SplitConformalRegressor(reg, confidence_level=0.9, prefit=True).conformalize(Xc, yc)
        return m.predict_interval(Xt)[1][:, :, 0]

    report.add(compare(ours_split, mapie_split, label="intercept: KandinskyCP vs MAPIE SplitConformalRegressor",
                       ours_name="KandinskyCP", peer_name="MAPIE SplitConformalRegressor", repeats=args.repeats,
                       sizes={"n_cal": args.n_cal, "n_test": args.n_test},
                       metrics={"max_abs_diff": float(np.max(np.abs(ours_split() - mapie_split())))}))

    def taxonomy(X, y=None):
        return (np.asarray(X)[:, :3] > 0.5) @ np.array([1, 2, 4])

    def ours_mondrian() -> np.ndarray:
        cp = KandinskyCP(reg, groups=G.mondrian(taxonomy), randomize=False).conformalize(Xc, yc)
        return cp.predict_interval(Xt)[1][:, :, 0]

    def crepes_mondrian() -> np.ndarray:
        cr = ConformalRegressor().fit(yc - reg.predict(Xc), bins=taxonomy(Xc))
        return cr.predict_int(reg.predict(Xt), bins=taxonomy(Xt), confidence=0.9)

    report.add(compare(ours_mondrian, crepes_mondrian, label="Mondrian (8 bins): KandinskyCP vs crepes",
                       ours_name="KandinskyCP", peer_name="crepes ConformalRegressor", repeats=args.repeats,
                       sizes={"n_cal": args.n_cal, "n_test": args.n_test, "bins": 8},
                       metrics=mondrian_metrics(ours_mondrian(), crepes_mondrian(), taxonomy(Xc), taxonomy(Xt))))
    report.write_json(args.out)
    print(report.to_markdown())


if __name__ == "__main__":
    main()
