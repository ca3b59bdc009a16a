"""Expected backdoor success over DSI's noise (protocol: ../backdoor-expectation.md).

Usage: python run.py [--seeds 20 21 22] [--draws 20] [--summarise] [--confirmatory]
Writes one JSON per (seed, epsilon) to rows/ as it goes, then ../../results/backdoor_expectation.{json,md}.
``--confirmatory`` (seeds 30-35, fixed in ../backdoor-expectation.md after the first run failed the rule) writes
to rows-confirmatory/ and ../../results/backdoor_expectation_confirmatory.{json,md} instead.
"""

from __future__ import annotations

import argparse
import json
import time
from dataclasses import replace
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
ROWS = HERE / "rows"
CONFIRMATORY_ROWS = HERE / "rows-confirmatory"
CONFIRMATORY_SEEDS = (30, 31, 32, 33, 34, 35)
RESULTS = HERE.parent.parent / "results"
EPSILONS = (8.0, 4.0, 2.0, 1.0)
# (rounds, local steps, lr) per epsilon, fixed before the run
CELLS = {8.0: (30, 5, 0.5), 4.0: (10, 15, 0.5), 2.0: (5, 30, 0.5), 1.0: (5, 30, 0.5)}


def _t_interval(values: np.ndarray) -> tuple[float, float, float]:
    from scipy import stats

    mean = float(values.mean())
    if values.size < 2:
        return mean, float("nan"), float("nan")
    half = float(stats.t.ppf(0.975, values.size - 1) * values.std(ddof=1) / np.sqrt(values.size))
    return mean, mean - half, mean + half


def run(seeds: list[int], draws: int, rows: Path = ROWS) -> None:
    import torch

    from dsi.applications import TaskConfig, backdoor_expectation

    torch.set_num_threads(1)
    rows.mkdir(exist_ok=True)
    for seed in seeds:
        for eps in EPSILONS:
            path = rows / f"seed{seed}_eps{eps:g}.json"
            if path.exists():
                continue
            rounds, steps, lr = CELLS[eps]
            cfg = replace(TaskConfig(), validation=0.2, rounds=rounds, local_steps=steps, lr=lr)
            start = time.process_time()
            res = backdoor_expectation(epsilon=eps, draws=draws, config=cfg, random_state=seed)
            row = {
                "seed": seed,
                "epsilon": eps,
                "cell": {"rounds": rounds, "local_steps": steps, "lr": lr},
                "draws": draws,
                "noise_seeds": list(res.noise_seeds),
                "per_draw_attack_success_rate": res.per_draw_attack_success_rate.tolist(),
                "per_draw_clean_accuracy": res.per_draw_clean_accuracy.tolist(),
                "undefended_attack_success_rate": res.undefended_attack_success_rate,
                "undefended_clean_accuracy": res.undefended_clean_accuracy,
                "cpu_s": time.process_time() - start,
            }
            path.write_text(json.dumps(row, indent=1))
            print(f"seed {seed} eps {eps:g}: E[ASR] {res.attack_success_rate:.3f} (undefended "
                  f"{res.undefended_attack_success_rate:.3f}), amplified {res.amplified_fraction:.2f}, "
                  f"{row['cpu_s']:.0f} CPU s", flush=True)


def summarise(source: Path = ROWS, name: str = "backdoor_expectation") -> dict:
    rows = [json.loads(p.read_text()) for p in sorted(source.glob("seed*_eps*.json"))]
    per_cell, pooled = [], []
    for row in rows:
        asr = np.array(row["per_draw_attack_success_rate"])
        acc = np.array(row["per_draw_clean_accuracy"])
        mean, lo, hi = _t_interval(asr)
        per_cell.append({
            "seed": row["seed"], "epsilon": row["epsilon"], "draws": len(asr),
            "expected_asr": mean, "expected_asr_ci": [lo, hi],
            "undefended_asr": row["undefended_attack_success_rate"],
            "amplified_fraction": float(np.mean(asr > row["undefended_attack_success_rate"])),
            "draws_below_0.1": float(np.mean(asr < 0.1)), "draws_above_0.9": float(np.mean(asr > 0.9)),
            "expected_clean_accuracy": float(acc.mean()),
            "undefended_clean_accuracy": row["undefended_clean_accuracy"],
            "trivial": row["undefended_attack_success_rate"] < 0.5,
        })
    for eps in EPSILONS:
        cells = [c for c in per_cell if c["epsilon"] == eps and not c["trivial"]]
        if not cells:
            continue
        diff = np.array([c["expected_asr"] - c["undefended_asr"] for c in cells])
        ratio = np.array([c["expected_asr"] / c["undefended_asr"] for c in cells])
        acc_cost = np.array([c["expected_clean_accuracy"] - c["undefended_clean_accuracy"] for c in cells])
        d_mean, d_lo, d_hi = _t_interval(diff)
        pooled.append({
            "epsilon": eps, "seeds": [c["seed"] for c in cells],
            "expected_asr": float(np.mean([c["expected_asr"] for c in cells])),
            "undefended_asr": float(np.mean([c["undefended_asr"] for c in cells])),
            "difference": d_mean, "difference_ci": [d_lo, d_hi],
            "ratio": float(ratio.mean()),
            "amplified_fraction": float(np.mean([c["amplified_fraction"] for c in cells])),
            "clean_accuracy_change": float(acc_cost.mean()),
            "weakens": bool(d_hi < 0),
        })
    out = {"protocol": "studies/backdoor-expectation.md", "per_cell": per_cell, "pooled": pooled}
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / f"{name}.json").write_text(json.dumps(out, indent=1))
    lines = [
        "| ε | seeds | E[ASR] under DSI | undefended ASR | difference (95% CI over seeds) | ratio | "
        "draws amplifying | clean accuracy change | weakens? |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for p in pooled:
        lo, hi = p["difference_ci"]
        lines.append(
            f"| {p['epsilon']:g} | {', '.join(map(str, p['seeds']))} | {p['expected_asr']:.3f} | "
            f"{p['undefended_asr']:.3f} | {p['difference']:+.3f} [{lo:+.3f}, {hi:+.3f}] | {p['ratio']:.2f} | "
            f"{p['amplified_fraction']:.0%} | {p['clean_accuracy_change']:+.3f} | {'yes' if p['weakens'] else 'no'} |"
        )
    lines += ["", "| seed | ε | draws | E[ASR] (95% CI over draws) | undefended | amplifying | < 0.1 | > 0.9 | "
              "E[clean acc] |", "|---|---|---|---|---|---|---|---|---|"]
    for c in per_cell:
        lo, hi = c["expected_asr_ci"]
        lines.append(
            f"| {c['seed']} | {c['epsilon']:g} | {c['draws']} | {c['expected_asr']:.3f} [{lo:.3f}, {hi:.3f}] | "
            f"{c['undefended_asr']:.3f} | {c['amplified_fraction']:.0%} | {c['draws_below_0.1']:.0%} | "
            f"{c['draws_above_0.9']:.0%} | {c['expected_clean_accuracy']:.3f} |"
        )
    (RESULTS / f"{name}.md").write_text("\n".join(lines) + "\n")
    return out


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--seeds", type=int, nargs="+", default=[20, 21, 22])
    parser.add_argument("--draws", type=int, default=20)
    parser.add_argument("--summarise", action="store_true")
    parser.add_argument("--confirmatory", action="store_true")
    args = parser.parse_args()
    rows = CONFIRMATORY_ROWS if args.confirmatory else ROWS
    seeds = list(CONFIRMATORY_SEEDS) if args.confirmatory else args.seeds
    if not args.summarise:
        run(seeds, args.draws, rows)
    summarise(rows, "backdoor_expectation_confirmatory" if args.confirmatory else "backdoor_expectation")
