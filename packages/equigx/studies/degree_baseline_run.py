"""Degree baseline beside every explainer on Decoy Shapes and Shapes (protocol: degree-baseline-protocol.md).

usage: OMP_NUM_THREADS=1 python studies/degree_baseline_run.py [--seeds 3] [--out results/degree-baseline-seed3.json]
Writes the JSON after every seed.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import numpy as np
import torch
from icml25_shared.random import spawn

from equigx.experiments import _mean_ci, run_seed

HERE = Path(__file__).resolve().parents[1]


def render(path: str) -> str:
    """The README's markdown table from the stored JSON: mean [95% t-interval] over seeds, per task."""
    out = json.loads(Path(path).read_text())
    tasks = list(out["tasks"])
    names = list(out["tasks"][tasks[0]]["auroc"])
    head = "| explainer | " + " | ".join(f"{t} AUROC ({len(out['tasks'][t]['runs'])} seeds)" for t in tasks) + " |"
    rows = [head, "|---|" + "---|" * len(tasks)]
    for n in names:
        cells = [f"{out['tasks'][t]['auroc'][n]['mean']:.3f} [{out['tasks'][t]['auroc'][n]['low']:.3f}, "
                 f"{out['tasks'][t]['auroc'][n]['high']:.3f}]" for t in tasks]
        rows.append(f"| {n} | " + " | ".join(cells) + " |")
    acc = " | ".join(f"{out['tasks'][t]['test_accuracy']['mean']:.3f}" for t in tasks)
    rows.append(f"| (test accuracy) | {acc} |")
    return "\n".join(rows)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--root-seed", type=int, default=3)
    parser.add_argument("--out", default=str(HERE / "results/degree-baseline-seed3.json"))
    parser.add_argument("--render", action="store_true", help="print the README table of --out and stop")
    args = parser.parse_args()
    if args.render:
        print(render(args.out))
        return
    torch.set_num_threads(1)
    out: dict = {"protocol": "studies/degree-baseline-protocol.md", "root_seed": args.root_seed, "tasks": {}}
    start = time.perf_counter()
    for task, task_rng in zip(("decoy", "shapes"), spawn(args.root_seed, 2), strict=True):
        runs = []
        for rng in spawn(task_rng, args.seeds):
            runs.append(run_seed(task, rng, quick=True, slow_baselines=False))
            names = list(runs[0]["explainers"])
            out["tasks"][task] = {
                "runs": runs,
                "test_accuracy": _mean_ci([r["test_accuracy"] for r in runs]),
                "auroc": {n: _mean_ci([r["explainers"][n]["auroc"] for r in runs]) for n in names},
            }
            out["seconds"] = time.perf_counter() - start
            Path(args.out).write_text(json.dumps(out, indent=1, default=float) + "\n")
            print(task, len(runs), {n: round(float(np.mean([r["explainers"][n]["auroc"] for r in runs])), 3)
                                    for n in names}, flush=True)


if __name__ == "__main__":
    main()
