"""A fresh explainer on few rows: FastPD against shap's interventional TreeExplainer and sklearn, one process.

Each call starts from the fitted model (explainer construction, model parsing and augmentation
included), as a user explaining one prediction does. Model: XGBoost regressor, 100 trees,
depth 6 or 10, d = 10 features, trained on 6000 rows (seed 0); background N = 1000 or 4000 rows;
1, 10, 100 and 1000 explained rows. shap gets the full background
(``shap.maskers.Independent(bg, max_samples=N)``); its time grows linearly in the rows, so above
``--shap-rows-max`` (10) rows it is timed on 10 rows and scaled (marked ``extrapolated``). The 1-D PD curve: 50 grid
points (scikit-learn's percentile grid) against ``partial_dependence(method="brute")``.
Timings: fastpd and the peer are called alternately; cells of at most 10 rows (and the PD curve) take
the median of ``--repeats`` calls per side, larger cells the median of ``--repeats`` calls below 1 s,
else one call. Writes JSON after each case.

    OMP_NUM_THREADS=1 python packages/fastpd/benchmarks/few_rows.py --out packages/fastpd/results/few_rows.json
"""

from __future__ import annotations

import argparse
import json
import platform
import statistics
import time
from pathlib import Path

import numpy as np

from fastpd import FastPD


def _data(d: int = 10, n: int = 6000, seed: int = 0):
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(n, d))
    y = x[:, 0] * x[:, 1] + np.sin(2 * x[:, 2]) + x[:, 3] - 0.5 * x[:, 4] * x[:, 5] + 0.2 * x[:, 6:].sum(axis=1)
    return x, y + 0.3 * rng.normal(size=n)


def _time_pair(ours, peer, repeats: int, *, always: bool) -> tuple[float, float]:
    """Medians of alternate calls; one call each when not ``always`` and a first call takes over 1 s."""
    times: tuple[list[float], list[float]] = ([], [])
    for i in range(max(1, repeats)):
        for fn, out in ((ours, times[0]), (peer, times[1])):
            t0 = time.perf_counter()
            fn()
            out.append(time.perf_counter() - t0)
        if i == 0 and not always and max(times[0][0], times[1][0]) > 1.0:
            break
    return statistics.median(times[0]), statistics.median(times[1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", type=Path, default=Path("out/fastpd/few_rows.json"))
    parser.add_argument("--depths", type=int, nargs="+", default=[6, 10])
    parser.add_argument("--backgrounds", type=int, nargs="+", default=[1000, 4000])
    parser.add_argument("--rows", type=int, nargs="+", default=[1, 10, 100, 1000])
    parser.add_argument("--trees", type=int, default=100)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--shap-rows-max", type=int, default=10, help="larger row counts are extrapolated")
    args = parser.parse_args()

    import shap
    import sklearn
    import xgboost as xgb
    from sklearn.inspection import partial_dependence

    x, y = _data()
    report: dict = {"title": "fresh explainer on few rows: fastpd vs shap interventional and sklearn brute PD",
                    "versions": {"shap": shap.__version__, "xgboost": xgb.__version__, "sklearn": sklearn.__version__,
                                 "numpy": np.__version__, "python": platform.python_version()},
                    "machine": platform.processor() or platform.machine(), "model": {"trees": args.trees, "d": 10},
                    "shap_rows_max": args.shap_rows_max, "repeats": args.repeats,
                    "cases": []}
    args.out.parent.mkdir(parents=True, exist_ok=True)
    for depth in args.depths:
        model = xgb.XGBRegressor(n_estimators=args.trees, max_depth=depth, n_jobs=1, random_state=0).fit(x, y)
        for n_b in args.backgrounds:
            bg, xe = x[:n_b], x[-1000:]
            for rows in args.rows:
                ours_vals = FastPD(model, bg).shap_values(xe[:rows])
                peer_rows = min(rows, args.shap_rows_max)
                holder = {}

                def peer(m=model, x=xe[:peer_rows], bg=bg, holder=holder):
                    masker = shap.maskers.Independent(bg, max_samples=len(bg))
                    holder["v"] = shap.TreeExplainer(m, masker, feature_perturbation="interventional").shap_values(x)

                t_ours, t_peer = _time_pair(lambda m=model, bg=bg, x=xe[:rows]: FastPD(m, bg).shap_values(x), peer,
                                            args.repeats, always=rows <= 10)
                t_peer *= rows / peer_rows
                diff = float(np.abs(holder["v"] - ours_vals[:peer_rows]).max())
                report["cases"].append({"case": "shap_values", "depth": depth, "N": n_b, "rows": rows,
                                        "fastpd_s": t_ours, "peer": "shap interventional", "peer_s": t_peer,
                                        "peer_extrapolated": peer_rows != rows, "speedup": t_peer / t_ours,
                                        "max_abs_diff": diff})
                print(json.dumps(report["cases"][-1]), flush=True)
                args.out.write_text(json.dumps(report, indent=1))
            res = partial_dependence(model, bg, [0], method="brute", grid_resolution=50)
            grid = np.zeros((len(res["grid_values"][0]), x.shape[1]))
            grid[:, 0] = res["grid_values"][0]
            diff = float(np.abs(FastPD(model, bg).pd_function(grid, 0) - res["average"][0]).max())
            t_ours, t_peer = _time_pair(
                lambda m=model, bg=bg, grid=grid: FastPD(m, bg).pd_function(grid, 0),
                lambda m=model, bg=bg: partial_dependence(m, bg, [0], method="brute", grid_resolution=50),
                args.repeats, always=True)
            report["cases"].append({"case": "pd_curve_50", "depth": depth, "N": n_b, "rows": len(grid),
                                    "fastpd_s": t_ours, "peer": "sklearn partial_dependence brute", "peer_s": t_peer,
                                    "peer_extrapolated": False, "speedup": t_peer / t_ours, "max_abs_diff": diff})
            print(json.dumps(report["cases"][-1]), flush=True)
            args.out.write_text(json.dumps(report, indent=1))


if __name__ == "__main__":
    main()
