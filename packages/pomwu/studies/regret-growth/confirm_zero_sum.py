"""Confirmatory run of the regret-growth rule where optimism can matter: contextual zero-sum 3x3 games
(protocol: ../regret-growth.md, "Confirmatory run"). One JSON per (seed, predictions, learner) in
``rows-zero-sum/``, then ``../../results/regret_growth_zero_sum.{json,md}``.

Usage: python confirm_zero_sum.py [--summarise]
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
ROWS = HERE / "rows-zero-sum"
RESULTS = HERE.parent.parent / "results"
SEEDS = (40, 41, 42, 43, 44)
CHECKPOINTS = (1_000, 3_000, 10_000, 30_000)
N_CONTEXTS, ETA = 4, 0.25
SOURCES = ("logistic", "oracle")


def run() -> None:
    from icml25_shared.random import spawn

    from pomwu.experiments import LEARNERS
    from pomwu.games import random_zero_sum_games
    from pomwu.predictors import OnlineLogisticRegression, OracleContext, make_covariates
    from pomwu.simulate import play_matrix_game, predict_contexts

    ROWS.mkdir(exist_ok=True)
    T = CHECKPOINTS[-1]
    for seed in SEEDS:
        game_rng, context_rng, covariate_rng = spawn(seed, 3)
        game = random_zero_sum_games(N_CONTEXTS, 3, 3, rng=game_rng)
        contexts = context_rng.integers(N_CONTEXTS, size=T)
        covariates, _ = make_covariates(contexts, n_contexts=N_CONTEXTS, dim=4, noise=0.7, rng=covariate_rng)
        predictions = {
            "logistic": predict_contexts(OnlineLogisticRegression(n_contexts=N_CONTEXTS), contexts, covariates),
            "oracle": predict_contexts(OracleContext(n_contexts=N_CONTEXTS), contexts),
        }
        for source in SOURCES:
            for name in ("POMWU", "cHedge"):
                path = ROWS / f"seed{seed}_{source}_{name}.json"
                if path.exists():
                    continue
                start = time.process_time()
                learner = LEARNERS[name](n_actions=[3, 3], n_contexts=N_CONTEXTS, step_size=ETA)
                res = play_matrix_game(game, learner, contexts, predictions[source], record_curve=True)
                regret = [float(res.regret_curve[t - 1]) for t in CHECKPOINTS]
                path.write_text(json.dumps({
                    "seed": seed, "predictions": source, "learner": name, "eta": ETA,
                    "prediction_accuracy": float(np.mean(predictions[source] == contexts)),
                    "checkpoints": list(CHECKPOINTS), "summed_contextual_regret": regret,
                    "cpu_s": time.process_time() - start}, indent=1))
                print(f"seed {seed} {source} {name}: {np.round(regret, 1).tolist()}", flush=True)


def slope(regret: list[float]) -> float:
    r = np.asarray(regret, dtype=np.float64)
    return float(np.polyfit(np.log(CHECKPOINTS), np.log(r), 1)[0]) if np.all(r > 0) else float("nan")


def summarise() -> dict:
    from icml25_shared.stats import paired_difference

    rows = {(r["seed"], r["predictions"], r["learner"]): r
            for r in (json.loads(p.read_text()) for p in sorted(ROWS.glob("*.json")))}
    out: dict = {"protocol": "studies/regret-growth.md", "checkpoints": list(CHECKPOINTS), "eta": ETA,
                 "n_contexts": N_CONTEXTS, "per_seed": [], "comparison": {}}
    lines = ["| seed | predictions | accuracy | learner | " + " | ".join(f"T = {t:,}" for t in CHECKPOINTS) + " | slope |",
             "|---|---|---|---|" + "---|" * len(CHECKPOINTS) + "---|"]
    for source in SOURCES:
        seeds = [s for s in SEEDS if (s, source, "POMWU") in rows and (s, source, "cHedge") in rows]
        a, b = [], []
        for s in seeds:
            p, c = rows[(s, source, "POMWU")], rows[(s, source, "cHedge")]
            entry = {"seed": s, "predictions": source, "prediction_accuracy": p["prediction_accuracy"],
                     "regret_POMWU": p["summed_contextual_regret"], "regret_cHedge": c["summed_contextual_regret"],
                     "slope_POMWU": slope(p["summed_contextual_regret"]),
                     "slope_cHedge": slope(c["summed_contextual_regret"])}
            out["per_seed"].append(entry)
            a.append(entry["slope_POMWU"])
            b.append(entry["slope_cHedge"])
            for name in ("POMWU", "cHedge"):
                lines.append(f"| {s} | {source} | {entry['prediction_accuracy']:.3f} | {name} | "
                             + " | ".join(f"{v:.1f}" for v in entry[f"regret_{name}"])
                             + f" | {entry[f'slope_{name}']:.3f} |")
        a_, b_ = np.array(a), np.array(b)
        if len(seeds) >= 2 and np.all(np.isfinite(a_)) and np.all(np.isfinite(b_)):
            diff = paired_difference(a_, b_)
            out["comparison"][source] = {
                "seeds": seeds, "mean_slope_POMWU": float(a_.mean()), "mean_slope_cHedge": float(b_.mean()),
                "mean_difference": diff.estimate, "ci95_difference": [diff.low, diff.high],
                "seeds_POMWU_slower_growth": int(np.sum(a_ < b_)), "holds": bool(diff.high < 0)}
        elif seeds:
            out["comparison"][source] = {"seeds": seeds, "holds": False,
                                         "note": "a regret was not positive at a checkpoint: slope undefined"}
    lines.append("")
    for source, c in out["comparison"].items():
        if "ci95_difference" in c:
            lo, hi = c["ci95_difference"]
            lines.append(f"{source} predictions: slope POMWU {c['mean_slope_POMWU']:.3f}, cHedge "
                         f"{c['mean_slope_cHedge']:.3f}; difference {c['mean_difference']:+.3f} [{lo:+.3f}, {hi:+.3f}] "
                         f"(paired 95% t, {len(c['seeds'])} seeds; POMWU slower on {c['seeds_POMWU_slower_growth']}/"
                         f"{len(c['seeds'])}). Rule: {'holds' if c['holds'] else 'not shown'}.")
        else:
            lines.append(f"{source} predictions: {c['note']}; rule not shown.")
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "regret_growth_zero_sum.json").write_text(json.dumps(out, indent=1))
    (RESULTS / "regret_growth_zero_sum.md").write_text("\n".join(lines) + "\n")
    return out


def readme_row(out: dict) -> str:
    """The README claim-table row of this run, from ``regret_growth_zero_sum.json``."""
    parts = []
    for source, c in out["comparison"].items():
        lo, hi = c["ci95_difference"]
        acc = np.mean([r["prediction_accuracy"] for r in out["per_seed"] if r["predictions"] == source])
        parts.append(f"{source} predictions ({acc:.0%} accurate): POMWU {c['mean_slope_POMWU']:.3f}, cHedge "
                     f"{c['mean_slope_cHedge']:.3f}, difference {c['mean_difference']:+.3f} [{lo:+.3f}, {hi:+.3f}] "
                     f"(POMWU lower on {c['seeds_POMWU_slower_growth']}/{len(c['seeds'])})")
    verdict = ", ".join(f"{s}: {'yes' if c['holds'] else 'not shown'}" for s, c in out["comparison"].items())
    seeds = out["comparison"][SOURCES[0]]["seeds"]
    return (f"| the same, where Hedge does not converge: contextual zero-sum 3x3 games | growth exponent of summed "
            f"contextual regret, T = 10^3..3·10^4, m = {out['n_contexts']}, η = {out['eta']:g}, seeds "
            f"{seeds[0]}-{seeds[-1]} ({len(seeds)} seeds, paired 95% t): " + "; ".join(parts) + f" | {verdict} |")


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--summarise", action="store_true")
    if not parser.parse_args().summarise:
        run()
    summarise()
