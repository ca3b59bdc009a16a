"""Deep trees: FastPD vs shap's interventional TreeExplainer on XGBoost at depth 10 and 12, in one process.

d = 20 features, background 1000 rows, 1000 explained rows. fastpd's time includes the augmentation
(fit) and is split into fit / first 10 rows / the rest; shap is timed on ``--shap-rows`` rows per
depth (its cost is linear in rows: one background pass per row). Writes JSON and prints a table.

    OMP_NUM_THREADS=1 python packages/fastpd/benchmarks/deep.py --out packages/fastpd/results/deep.json
"""

from __future__ import annotations

import argparse
import json
import platform
import time
from pathlib import Path

import numpy as np

from fastpd import FastPD


def _model(depth: int, trees: int, seed: int = 0):
    import xgboost as xgb

    rng = np.random.default_rng(seed)
    x = rng.normal(size=(3000, 20))
    y = x[:, :5].prod(axis=1) + np.sin(x[:, 5:10]).sum(axis=1) + x[:, 10] * x[:, 11] + 0.1 * rng.normal(size=3000)
    model = xgb.XGBRegressor(n_estimators=trees, max_depth=depth, n_jobs=1, random_state=seed).fit(x, y)
    return model, x[:1000], x[1000:2000]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", type=Path, default=Path("out/fastpd/deep.json"))
    parser.add_argument("--cases", nargs="+", default=["10:30", "12:100"], help="depth:trees")
    parser.add_argument("--shap-rows", nargs="+", type=int, default=[1000, 100], help="rows shap explains, per case")
    args = parser.parse_args()
    import shap
    import xgboost

    rows = []
    for case, n_shap in zip(args.cases, args.shap_rows, strict=True):
        depth, trees = (int(v) for v in case.split(":"))
        model, bg, xe = _model(depth, trees)
        t0 = time.perf_counter()
        fp = FastPD(model, bg).fit()
        t1 = time.perf_counter()
        first = fp.shap_values(xe[:10])
        t2 = time.perf_counter()
        rest = fp.shap_values(xe[10:])
        t3 = time.perf_counter()
        ours = np.concatenate([first, rest])
        masker = shap.maskers.Independent(bg, max_samples=len(bg))
        ex = shap.TreeExplainer(model, masker, feature_perturbation="interventional")
        t4 = time.perf_counter()
        ref = ex.shap_values(xe[:n_shap], check_additivity=False)
        t5 = time.perf_counter()
        row = {"depth": depth, "trees": trees, "d": 20, "background": 1000, "rows": 1000, "leaves": fp.n_leaves_,
               "max_path_features": fp.max_path_features_, "fastpd_fit_s": t1 - t0, "fastpd_first10_s": t2 - t1,
               "fastpd_rest_s": t3 - t2, "fastpd_total_s": t3 - t0, "shap_rows": n_shap, "shap_s": t5 - t4,
               "shap_per_row_ms": 1e3 * (t5 - t4) / n_shap,
               "max_abs_diff": float(np.abs(ours[:n_shap] - ref).max())}
        rows.append(row)
        print(json.dumps(row), flush=True)
    meta = {"python": platform.python_version(), "machine": platform.machine(), "shap": shap.__version__,
            "xgboost": xgboost.__version__, "threads": 1}
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps({"meta": meta, "rows": rows}, indent=1) + "\n")
    print("| depth | trees | leaves | fastpd fit | first 10 rows | 1000 rows total | shap rows | shap time |")
    print("|---|---|---|---|---|---|---|---|")
    for r in rows:
        print(f"| {r['depth']} | {r['trees']} | {r['leaves']} | {r['fastpd_fit_s']:.1f} s | {r['fastpd_first10_s']:.1f} s "
              f"| {r['fastpd_total_s']:.1f} s | {r['shap_rows']} | {r['shap_s']:.0f} s |")


if __name__ == "__main__":
    main()
