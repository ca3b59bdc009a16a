"""The curriculum rerun with the convolutional tower, stage-0 pre-training and the auxiliary head.

Protocol: ``tower_protocol.md``. One seed per process; the JSON is written when the seed ends.

    OMP_NUM_THREADS=1 nice python packages/wmarkgpt/studies/tower_rerun.py --seed 0
    OMP_NUM_THREADS=1 nice python packages/wmarkgpt/studies/tower_rerun.py --seed 2 --stage2-epochs 16  # diagnosis
    python packages/wmarkgpt/studies/tower_rerun.py --summary   # table of the stored seeds
    python packages/wmarkgpt/studies/tower_rerun.py --summary --seeds 3 4 5   # the confirmatory run alone
    python packages/wmarkgpt/studies/tower_rerun.py --readme    # the README's rule table
"""

from __future__ import annotations

import argparse
import json
import math
import time
from pathlib import Path
from typing import Any

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


def summary(seeds: list[int] | None = None) -> str:
    """The table of the stored seeds (all of them, or ``seeds``: the first run and the confirmatory run apart)."""
    runs = [json.loads(p.read_text()) for p in sorted(OUT.glob("seed*.json"))]
    if seeds is not None:
        runs = [r for r in runs if r["seed"] in seeds]
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


def _per_seed(runs: list[dict], value) -> str:
    values = [value(r) for r in runs]
    return f"{_interval(values)}: {', '.join(f'{v:.3f}' for v in values)}"


def readme_table(first: tuple[int, ...] = (0, 1, 2), confirmatory: tuple[int, ...] = (3, 4, 5)) -> str:
    """The README's rule table: the first run and the confirmatory run side by side, each rule per seed."""
    by_seed = {r["seed"]: r for r in (json.loads(p.read_text()) for p in OUT.glob("seed*.json"))}
    groups = [[by_seed[s] for s in seeds] for seeds in (first, confirmatory)]

    def bleu(r: dict) -> float:
        return r["S3"]["BLEU-1"]

    def acc(r: dict) -> float:
        return r["S3"]["ACC exact"]

    def versus(runs: list[dict], key: str) -> str:
        ours = _interval([r["S3"][key] for r in runs])
        pairs = ", ".join(f"{r['S3'][key]:.3f} {'>' if r['S3'][key] > r['stage3_only'][key] else '<=' } "
                          f"{r['stage3_only'][key]:.3f}" for r in runs)
        return f"{ours} vs {_interval([r['stage3_only'][key] for r in runs])}: {pairs}"

    def held(runs: list[dict], rule) -> str:
        n = sum(bool(rule(r)) for r in runs)
        return f"{'yes' if n == len(runs) else 'no'} ({n} of {len(runs)})"

    def both(r: dict) -> bool:
        return bleu(r) > r["stage3_only"]["BLEU-1"] and acc(r) > r["stage3_only"]["ACC exact"]

    def part(runs: list[dict], key: str) -> str:  # the joint rule, and how many seeds this half of it holds on
        n = sum(r["S3"][key] > r["stage3_only"][key] for r in runs)
        return f"{'yes' if all(both(r) for r in runs) else 'no'} ({key} higher on {n} of {len(runs)})"

    rows: list[tuple[str, Any, str, Any]] = [("stage 1 teaches positions (exact match)", lambda rs: _per_seed(rs, lambda r: r["position_exact_match"]),
             ">= 0.8", lambda r: r["position_exact_match"] >= 0.8),
            ("the visibility score tracks gt_score after S2 (synthetic SRCC; paper, 7B: 0.941)",
             lambda rs: _per_seed(rs, lambda r: r["S2_synthetic_visibility"]["SRCC"]), ">= 0.8",
             lambda r: r["S2_synthetic_visibility"]["SRCC"] >= 0.8),
            ("visibility ACC after S3 (exact; paper, 7B: 0.550 substring)", lambda rs: _per_seed(rs, acc), ">= 0.6",
             lambda r: acc(r) >= 0.6),
            ("curriculum beats stage-3-only: BLEU-1 (S3 vs stage-3 only)", lambda rs: versus(rs, "BLEU-1"),
             "BLEU-1 and ACC both strictly higher on every seed", "BLEU-1"),
            ("curriculum beats stage-3-only: ACC", lambda rs: versus(rs, "ACC exact"), "(same rule)", "ACC exact")]
    seeds = [", ".join(str(s) for s in g) for g in (first, confirmatory)]
    lines = [f"| claim | first run (seeds {seeds[0]}) | confirmatory run (seeds {seeds[1]}) | rule | holds (first / "
             "confirmatory) |", "|---|---|---|---|---|"]
    for claim, cell, rule, holds in rows:
        verdict = [part(g, holds) if isinstance(holds, str) else held(g, holds) for g in groups]
        lines.append(f"| {claim} | {cell(groups[0])} | {cell(groups[1])} | {rule} | {verdict[0]} / {verdict[1]} |")
    return "\n".join(lines)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seed", type=int)
    parser.add_argument("--stage2-epochs", type=int, help="diagnosis: stage 2 for this many epochs")
    parser.add_argument("--summary", action="store_true")
    parser.add_argument("--seeds", type=int, nargs="+", help="with --summary: only these seeds")
    parser.add_argument("--readme", action="store_true", help="print the README's rule table (seeds 0-2 and 3-5)")
    args = parser.parse_args()
    if args.readme:
        print(readme_table())
    elif args.summary:
        print(summary(args.seeds))
    else:
        run(args.seed, args.stage2_epochs)
