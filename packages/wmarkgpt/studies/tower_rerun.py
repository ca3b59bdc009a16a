"""The curriculum rerun with the convolutional tower, stage-0 pre-training and the auxiliary head.

Protocol: ``tower_protocol.md``. One seed per process; the JSON is written when the seed ends.

    OMP_NUM_THREADS=1 nice python packages/wmarkgpt/studies/tower_rerun.py --seed 0
    OMP_NUM_THREADS=1 nice python packages/wmarkgpt/studies/tower_rerun.py --seed 2 --stage2-epochs 16  # diagnosis
    python packages/wmarkgpt/studies/tower_rerun.py --summary   # table of the stored seeds
"""

from __future__ import annotations

import argparse
import json
import math
import time
from pathlib import Path

import numpy as np

OUT = Path(__file__).resolve().parents[1] / "results" / "tower"


def run(seed: int, stage2_epochs: int | None = None) -> None:
    from dataclasses import replace

    import torch

    from wmarkgpt.experiments import TOWER, run_curriculum

    torch.set_num_threads(1)
    settings, name = TOWER, f"seed{seed}.json"
    if stage2_epochs is not None:  # the stage-2-length diagnosis: only stage 2's epochs change
        settings = replace(TOWER, epochs=(TOWER.epochs[0], stage2_epochs, TOWER.epochs[2]))
        name = f"diagnosis-stage2-{stage2_epochs}epochs-seed{seed}.json"
    t0 = time.process_time()
    res = run_curriculum(settings, seed=seed)
    res["cpu_seconds"] = time.process_time() - t0
    OUT.mkdir(parents=True, exist_ok=True)
    (OUT / name).write_text(json.dumps(res, indent=1))


def _interval(values: list[float]) -> str:
    from scipy.stats import t

    m = float(np.mean(values))
    if len(values) < 2:
        return f"{m:.3f}"
    half = t.ppf(0.975, len(values) - 1) * float(np.std(values, ddof=1)) / math.sqrt(len(values))
    return f"{m:.3f} [{m - half:.3f}, {m + half:.3f}]"


def summary() -> str:
    runs = [json.loads(p.read_text()) for p in sorted(OUT.glob("seed*.json"))]
    seeds = [r["seed"] for r in runs]
    rows = [("stage-0 auxiliary head SRCC (synthetic)", [r["stage0"]["aux_head_synthetic_SRCC"] for r in runs], None),
            ("position exact match (S1)", [r["position_exact_match"] for r in runs], lambda v: v >= 0.8),
            ("synthetic SRCC of visibility_score after S2", [r["S2_synthetic_visibility"]["SRCC"] for r in runs],
             lambda v: v >= 0.8),
            ("stage-3 ACC exact after S3", [r["S3"]["ACC exact"] for r in runs], lambda v: v >= 0.6),
            ("stage-3 ACC exact, stage-3 only", [r["stage3_only"]["ACC exact"] for r in runs], None),
            ("stage-3 BLEU-1 after S1 / S2 / S3", None, None),
            ("stage-3 BLEU-1, stage-3 only", [r["stage3_only"]["BLEU-1"] for r in runs], None)]
    lines = [f"seeds {seeds}", "", "| quantity | mean [95% t-interval] | per seed | rule holds on every seed |",
             "|---|---|---|---|"]
    for name, vals, rule in rows:
        if vals is None:
            per = "; ".join(" / ".join(f"{r[k]['BLEU-1']:.3f}" for k in ("S1", "S2", "S3")) for r in runs)
            lines.append(f"| {name} | | {per} | |")
            continue
        held = "" if rule is None else ("yes" if all(rule(v) for v in vals) else "no")
        lines.append(f"| {name} | {_interval(vals)} | {', '.join(f'{v:.3f}' for v in vals)} | {held} |")
    bleu = all(r["S3"]["BLEU-1"] > r["stage3_only"]["BLEU-1"] for r in runs)
    acc = all(r["S3"]["ACC exact"] > r["stage3_only"]["ACC exact"] for r in runs)
    lines.append(f"| curriculum > stage-3-only, BLEU-1 / ACC | | | {'yes' if bleu else 'no'} / {'yes' if acc else 'no'} |")
    cpu = ", ".join(f"{r.get('cpu_seconds', float('nan')):.0f}" for r in runs)
    lines.append(f"\nCPU seconds per seed: {cpu}")
    return "\n".join(lines)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seed", type=int)
    parser.add_argument("--stage2-epochs", type=int, help="diagnosis: stage 2 for this many epochs")
    parser.add_argument("--summary", action="store_true")
    args = parser.parse_args()
    if args.summary:
        print(summary())
    else:
        run(args.seed, args.stage2_epochs)
