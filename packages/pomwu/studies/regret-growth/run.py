"""Growth of summed contextual regret with T on Sioux Falls (protocol: ../regret-growth.md).

Usage: python run.py [--seeds 20 21 22 23 24] [--summarise]
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
ROWS = HERE / "rows"
RESULTS = HERE.parent.parent / "results"
CHECKPOINTS = (1_000, 3_000, 10_000, 30_000)
ETA = 15.0
TRIVIAL_SEED = 20


def run(seeds: list[int]) -> None:
    from pomwu.experiments import run_learner, sioux_falls_setup

    ROWS.mkdir(exist_ok=True)
    for seed in seeds:
        learners = [("POMWU", "predicted"), ("cHedge", "predicted")]
        if seed == TRIVIAL_SEED:
            learners.append(("Hedge", "none"))
        todo = [(n, s) for n, s in learners if not (ROWS / f"seed{seed}_{n}.json").exists()]
        if not todo:
            continue
        setup = sioux_falls_setup(T=CHECKPOINTS[-1], random_state=seed)
        accuracy = float(np.mean(setup.predictions == setup.contexts))
        for name, source in todo:
            start = time.process_time()
            res = run_learner(setup, name, source, eta=ETA, feedback="expected", regret_checkpoints=CHECKPOINTS)
            row = {
                "seed": seed, "learner": name, "contexts": source, "eta": ETA, "feedback": "expected",
                "prediction_accuracy": accuracy, "checkpoints": list(CHECKPOINTS),
                "summed_contextual_regret": res.summed_contextual_regret.tolist(),
                "cpu_s": time.process_time() - start,
            }
            (ROWS / f"seed{seed}_{name}.json").write_text(json.dumps(row, indent=1))
            print(f"seed {seed} {name}: {np.round(res.summed_contextual_regret, 1).tolist()} "
                  f"({row['cpu_s']:.0f} CPU s)", flush=True)


def slope(regret: list[float]) -> float:
    r = np.asarray(regret, dtype=np.float64)
    if np.any(r <= 0):
        return float("nan")
    return float(np.polyfit(np.log(CHECKPOINTS), np.log(r), 1)[0])


def summarise() -> dict:
    from icml25_shared.stats import paired_difference

    rows = {(r["seed"], r["learner"]): r for r in (json.loads(p.read_text()) for p in sorted(ROWS.glob("*.json")))}
    seeds = sorted({s for s, n in rows if (s, "POMWU") in rows and (s, "cHedge") in rows})
    per_seed = []
    for seed in seeds:
        p, c = rows[(seed, "POMWU")], rows[(seed, "cHedge")]
        per_seed.append({
            "seed": seed, "prediction_accuracy": p["prediction_accuracy"],
            "regret_POMWU": p["summed_contextual_regret"], "regret_cHedge": c["summed_contextual_regret"],
            "slope_POMWU": slope(p["summed_contextual_regret"]), "slope_cHedge": slope(c["summed_contextual_regret"]),
        })
    a = np.array([r["slope_POMWU"] for r in per_seed])
    b = np.array([r["slope_cHedge"] for r in per_seed])
    out: dict = {"protocol": "studies/regret-growth.md", "checkpoints": list(CHECKPOINTS), "eta": ETA,
                 "per_seed": per_seed}
    if len(per_seed) >= 2 and np.all(np.isfinite(a)) and np.all(np.isfinite(b)):
        diff = paired_difference(a, b)
        ratio = np.array([r["regret_POMWU"][-1] / r["regret_cHedge"][-1] for r in per_seed])
        out["comparison"] = {
            "mean_slope_POMWU": float(a.mean()), "mean_slope_cHedge": float(b.mean()),
            "mean_difference": diff.estimate, "ci95_difference": [diff.low, diff.high],
            "seeds_POMWU_slower_growth": int(np.sum(a < b)), "n_seeds": len(per_seed),
            "mean_regret_ratio_at_T_max": float(ratio.mean()),
            "holds": bool(diff.high < 0),
        }
    if (TRIVIAL_SEED, "Hedge") in rows:
        h = rows[(TRIVIAL_SEED, "Hedge")]
        out["trivial_reference"] = {"seed": TRIVIAL_SEED, "learner": "Hedge (context-blind)",
                                    "regret": h["summed_contextual_regret"],
                                    "slope": slope(h["summed_contextual_regret"])}
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "regret_growth.json").write_text(json.dumps(out, indent=1))
    lines = ["| seed | accuracy | learner | " + " | ".join(f"T = {t:,}" for t in CHECKPOINTS) + " | slope |",
             "|---|---|---|" + "---|" * len(CHECKPOINTS) + "---|"]
    for r in per_seed:
        for name in ("POMWU", "cHedge"):
            lines.append(f"| {r['seed']} | {r['prediction_accuracy']:.3f} | {name} | "
                         + " | ".join(f"{v:.1f}" for v in r[f"regret_{name}"]) + f" | {r[f'slope_{name}']:.3f} |")
    if "trivial_reference" in out:
        tr = out["trivial_reference"]
        lines.append(f"| {tr['seed']} | - | Hedge (no contexts) | " + " | ".join(f"{v:.1f}" for v in tr["regret"])
                     + f" | {tr['slope']:.3f} |")
    if "comparison" in out:
        c = out["comparison"]
        lo, hi = c["ci95_difference"]
        lines += ["", f"Slope POMWU {c['mean_slope_POMWU']:.3f}, cHedge {c['mean_slope_cHedge']:.3f}; "
                  f"difference {c['mean_difference']:+.3f} [{lo:+.3f}, {hi:+.3f}] (paired 95% t, "
                  f"{c['n_seeds']} seeds; POMWU slower on {c['seeds_POMWU_slower_growth']}/{c['n_seeds']}); "
                  f"regret ratio at T = {CHECKPOINTS[-1]:,}: {c['mean_regret_ratio_at_T_max']:.3f}. "
                  f"Rule (difference < 0, interval excludes 0): {'holds' if c['holds'] else 'not shown'}."]
    (RESULTS / "regret_growth.md").write_text("\n".join(lines) + "\n")
    return out


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--seeds", type=int, nargs="+", default=[20, 21, 22, 23, 24])
    parser.add_argument("--summarise", action="store_true")
    args = parser.parse_args()
    if not args.summarise:
        run(args.seeds)
    summarise()
