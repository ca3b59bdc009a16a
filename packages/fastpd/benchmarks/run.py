"""FastPD vs shap's interventional TreeExplainer on the paper's runtime setup (Fig. 4), in one process.

XGBoost, 20 trees, depth 5, d = 7 correlated features; N = n_background = n_explained. Writes JSON
and prints a markdown table.

    python packages/fastpd/benchmarks/run.py --sizes 1000 2000 4000 8000 --shap-max 4000
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np
from icml25_shared.bench import BenchmarkReport, Comparison, time_call

from fastpd import FastPD
from fastpd.experiments import simulate_runtime


def _model(n: int, seed: int):
    import xgboost as xgb

    rng = np.random.default_rng([seed, n])
    x, y = simulate_runtime(n, rng)
    eta = float(rng.uniform(0.01, 0.3))  # the paper draws eta ~ U[0.01, 0.3]
    model = xgb.XGBRegressor(n_estimators=20, max_depth=5, learning_rate=eta, n_jobs=1, random_state=seed)
    return model.fit(x, y), x


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", type=Path, default=Path("out/fastpd/benchmark.json"))
    parser.add_argument("--sizes", type=int, nargs="+", default=[1000, 2000, 4000, 8000])
    parser.add_argument("--shap-max", type=int, default=4000, help="largest N for the (quadratic) shap peer")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()

    import shap

    report = BenchmarkReport("fastpd vs shap interventional TreeExplainer (xgboost, 20 trees, depth 5, d=7)",
                             packages=["fastpd", "shap", "xgboost", "numpy"])
    ours_shap_times = {}
    for n in args.sizes:
        model, x = _model(n, args.seed)
        sizes = {"N": n, "trees": 20, "depth": 5, "d": 7}

        def ours_shap(model=model, x=x):
            return FastPD(model, x).shap_values(x)  # augmentation included

        ours_t = time_call(ours_shap, name="fastpd", warmup=1, repeats=args.repeats)
        ours_shap_times[n] = ours_t.median_s
        ours_vals = ours_shap()
        peer_t, metrics = None, {}
        if n <= args.shap_max:
            holder = {}

            def peer(model=model, x=x, n=n, holder=holder):
                masker = shap.maskers.Independent(x, max_samples=n)
                holder["v"] = shap.TreeExplainer(model, masker, feature_perturbation="interventional").shap_values(x)

            peer_t = time_call(peer, name="shap interventional (full background)", warmup=0, repeats=1)
            metrics["max_abs_diff"] = float(np.abs(holder["v"] - ours_vals).max())
        report.add(Comparison(label="SHAP values, all N rows", ours=ours_t, peer=peer_t, sizes=sizes,
                              metrics=metrics))

        fp = FastPD(model, x).fit()
        report.add(Comparison(label="all PD functions, order <= 2 (28 subsets)",
                              ours=time_call(lambda fp=fp, x=x: fp.pd_functions(x, max_order=2), name="fastpd",
                                             warmup=0, repeats=args.repeats),
                              peer=None, sizes=sizes))
        report.add(Comparison(label="full decomposition, all orders",
                              ours=time_call(lambda fp=fp, x=x: fp.decompose(x), name="fastpd", warmup=0,
                                             repeats=args.repeats),
                              peer=None, sizes=sizes))
        report.add(Comparison(label="SHAP interaction values (n, d, d)",
                              ours=time_call(lambda fp=fp, x=x: fp.shap_interaction_values(x), name="fastpd",
                                             warmup=0, repeats=args.repeats),
                              peer=None, sizes=sizes))
    lo, hi = min(ours_shap_times), max(ours_shap_times)
    report.environment["fastpd_shap_time_ratio"] = {f"{hi}/{lo}": ours_shap_times[hi] / ours_shap_times[lo]}
    report.write_json(args.out)
    print(report.to_markdown())
    print(f"\nfastpd SHAP time({hi}) / time({lo}) = {ours_shap_times[hi] / ours_shap_times[lo]:.2f}")


if __name__ == "__main__":
    main()
