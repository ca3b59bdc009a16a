"""Split and Mondrian CP, the special cases with disjoint groups: KandinskyCP against crepes and MAPIE.

One process; each call starts from the fitted linear model and the calibration and test rows
(``conformalize`` + ``predict_interval`` for KandinskyCP and MAPIE, residuals + ``fit`` +
``predict_int`` for crepes, model predictions included on every side). Synthetic heteroscedastic
regression (benchmarks/run.py's ``make_data``, seed 0), n_cal = 5000, n_test = 2000, 90 % level;
KandinskyCP with its defaults (``randomize=True``, ``random_state=0``). Mondrian: 8 bins from the
signs of the first three features. Timing: ours and the peer called alternately ``--repeats`` times
after one warm-up each (so a changing load on a shared machine hits both alike); medians per side.

    OMP_NUM_THREADS=1 python packages/kandinsky-cp/benchmarks/special_cases.py \\
        --out packages/kandinsky-cp/results/special_cases.json
"""

from __future__ import annotations

import argparse
import json
import platform
import statistics
import sys
import time
from pathlib import Path

import numpy as np

from kandinsky_cp import KandinskyCP
from kandinsky_cp import groups as G

sys.path.insert(0, str(Path(__file__).resolve().parent))
from run import make_data  # noqa: E402


def _time_pair(ours, peer, repeats: int) -> tuple[float, float]:
    ours(), peer()
    times: tuple[list[float], list[float]] = ([], [])
    for _ in range(repeats):
        for fn, out in ((ours, times[0]), (peer, times[1])):
            t0 = time.perf_counter()
            fn()
            out.append(time.perf_counter() - t0)
    return statistics.median(times[0]), statistics.median(times[1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", type=Path, default=Path("out/kandinsky_cp/special_cases.json"))
    parser.add_argument("--n-cal", type=int, default=5000)
    parser.add_argument("--n-test", type=int, default=2000)
    parser.add_argument("--repeats", type=int, default=201)
    args = parser.parse_args()

    import crepes
    import mapie
    from crepes import ConformalRegressor
    from mapie.regression import SplitConformalRegressor

    reg, Xc, yc, Xt, _ = make_data(args.n_cal, args.n_test)

    def taxonomy(X):
        return (np.asarray(X)[:, :3] > 0.5) @ np.array([1, 2, 4])

    cases = {
        "split CP": {
            "ours": lambda: KandinskyCP(reg, groups=G.intercept(), random_state=0).conformalize(Xc, yc)
            .predict_interval(Xt)[1][:, :, 0],
            "crepes ConformalRegressor": lambda: ConformalRegressor().fit(yc - reg.predict(Xc))
            .predict_int(reg.predict(Xt), confidence=0.9),
            "MAPIE SplitConformalRegressor": lambda: SplitConformalRegressor(
                reg, confidence_level=0.9, prefit=True).conformalize(Xc, yc).predict_interval(Xt)[1][:, :, 0],
        },
        "Mondrian CP, 8 bins": {
            "ours": lambda: KandinskyCP(reg, groups=G.mondrian(lambda X, y: taxonomy(X)), random_state=0)
            .conformalize(Xc, yc).predict_interval(Xt)[1][:, :, 0],
            "crepes ConformalRegressor": lambda: ConformalRegressor().fit(yc - reg.predict(Xc), bins=taxonomy(Xc))
            .predict_int(reg.predict(Xt), bins=taxonomy(Xt), confidence=0.9),
        },
    }
    report: dict = {"title": "kandinsky-cp special cases vs crepes and MAPIE",
                    "sizes": {"n_cal": args.n_cal, "n_test": args.n_test, "level": 0.9},
                    "versions": {"crepes": crepes.__version__, "mapie": mapie.__version__, "numpy": np.__version__,
                                 "python": platform.python_version()},
                    "repeats": args.repeats, "rows": []}
    args.out.parent.mkdir(parents=True, exist_ok=True)
    for case, fns in cases.items():
        ours = fns["ours"]()
        for peer, fn in fns.items():
            if peer == "ours":
                continue
            ref = fn()
            t_ours, t_peer = _time_pair(fns["ours"], fn, args.repeats)
            row = {"case": case, "peer": peer, "ours_s": t_ours, "peer_s": t_peer, "ratio_ours_over_peer":
                   t_ours / t_peer, "max_abs_diff": float(np.max(np.abs(ours - ref)))}
            report["rows"].append(row)
            print(json.dumps(row), flush=True)
            args.out.write_text(json.dumps(report, indent=1))


if __name__ == "__main__":
    main()
