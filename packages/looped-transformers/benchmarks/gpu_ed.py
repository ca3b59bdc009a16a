"""Edit distance at the full protocol on one GPU: LT and TMLT at r = 2, 4, 8, three seeds, parallel processes.

    python packages/looped-transformers/benchmarks/gpu_ed.py --out results/gpu-ed [--budget-seconds 420]

Sizes (``PROTOCOL["full"]["ed"]`` of ``looped_transformers.experiments``): strings of 4-12 letters over 8,
d=64, 4 heads, one GPT-style block, 5000 steps of 64 problems, AdamW 1e-3 (warmup 30, cosine to 0.1x), answer
accuracy on 1000 fresh problems per seed at r, 2r and 4r loops. Every (model, seed) trains in its own process
(all at once by default: 18 small models share one GPU); the parent kills what is still running at
``--budget-seconds`` and records it as timed out, so the whole script ends within that budget plus start-up.
Baselines on the same test problems: the most frequent answer, and a length-only predictor (the most frequent
distance for the two string lengths, fitted on 50,000 generated problems). Writes one JSON per process and
``summary.json`` (mean and 95% t interval per configuration).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from collections import Counter, defaultdict
from pathlib import Path
from typing import Any

from icml25_shared.bench import run_jobs

CONFIGS = "LT:2,LT:4,LT:8,TMLT:2,TMLT:4,TMLT:8"


def _parse(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--out", type=Path, required=True)
    p.add_argument("--steps", type=int, default=5000)
    p.add_argument("--d", type=int, default=64)
    p.add_argument("--heads", type=int, default=4)
    p.add_argument("--batch", type=int, default=64)
    p.add_argument("--lr", type=float, default=1e-3)
    p.add_argument("--min-length", type=int, default=4)
    p.add_argument("--max-length", type=int, default=12)
    p.add_argument("--alphabet", type=int, default=8)
    p.add_argument("--seeds", type=int, default=3)
    p.add_argument("--test", type=int, default=1000)
    p.add_argument("--configs", default=CONFIGS, help=f"comma-separated KIND:r (default {CONFIGS})")
    p.add_argument("--seed", type=int, default=0, help="root seed")
    p.add_argument("--device", default="auto", help="auto (cuda when available), cuda or cpu")
    p.add_argument("--autocast", choices=("none", "bfloat16"), default="none")
    p.add_argument("--budget-seconds", type=float, default=420.0, help="wall-clock limit of all training")
    p.add_argument("--workers", type=int, default=-1,
                   help="parallel processes (-1: one per run; 0: in this process, one after another)")
    p.add_argument("--one", nargs=3, metavar=("KIND", "R", "SEED_INDEX"), help=argparse.SUPPRESS)
    return p.parse_args(argv)


def _task(args: argparse.Namespace) -> Any:
    from looped_transformers.tasks import DPTask

    return DPTask("ed", min_length=args.min_length, max_length=args.max_length, alphabet=args.alphabet)


def run_one(args: argparse.Namespace, kind: str, r: int, index: int) -> dict[str, Any]:
    """Train and score one (model, seed); write and return its JSON."""
    import torch
    from icml25_shared.random import child_seeds, spawn

    from looped_transformers import LoopedConfig, LoopedForCausalLM
    from looped_transformers.train import TrainConfig, answer_accuracy, train

    torch.set_num_threads(1)
    device = ("cuda" if torch.cuda.is_available() else "cpu") if args.device == "auto" else args.device
    task = _task(args)
    init_seed = child_seeds(args.seed, args.seeds)[index]
    data, test = spawn(spawn(args.seed, args.seeds)[index], 2)
    torch.manual_seed(init_seed)
    model = LoopedForCausalLM(LoopedConfig(vocab_size=task.vocab_size, hidden_size=args.d,
                                           num_attention_heads=args.heads, n_loops=r,
                                           timestep="none" if kind == "LT" else "tmlt",
                                           max_position_embeddings=task.max_sequence_length)).to(device)
    start = time.perf_counter()
    result = train(model, task, TrainConfig(steps=args.steps, batch_size=args.batch, lr=args.lr, warmup_steps=30,
                                            autocast=None if args.autocast == "none" else args.autocast),
                   random_state=data)
    test_seed = int(test.integers(2**31))
    accuracy = {str(rt): answer_accuracy(model, task, n=args.test, n_loops=rt, random_state=test_seed)
                for rt in (r, 2 * r, 4 * r)}
    row = {"model": kind, "r": r, "seed_index": index, "init_seed": init_seed, "test_seed": test_seed,
           "accuracy": accuracy, "final_loss": sum(result.losses[-50:]) / len(result.losses[-50:]),
           "seconds": time.perf_counter() - start, "device": str(device),
           "device_name": torch.cuda.get_device_name() if device == "cuda" else "cpu", "torch": torch.__version__}
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / f"ed-{kind}-r{r}-seed{index}.json").write_text(json.dumps(row, indent=1))
    return row


def _split(tokens: list[str]) -> tuple[int, int]:
    bar, sep = tokens.index("|"), tokens.index("<sep>")
    return bar, sep - bar - 1


def baselines(args: argparse.Namespace) -> dict[str, float]:
    """Majority answer and length-only predictor, scored on each seed's test problems (mean over seeds)."""
    import numpy as np
    from icml25_shared.random import spawn

    task = _task(args)
    fit_rng = np.random.default_rng([args.seed, 99])
    by_lengths: dict[tuple[int, int], Counter[int]] = defaultdict(Counter)
    overall: Counter[int] = Counter()
    for _ in range(50_000 if args.steps >= 1000 else 2_000):
        tokens, answer = task.problem(fit_rng)
        by_lengths[_split(tokens)][answer] += 1
        overall[answer] += 1
    majority = overall.most_common(1)[0][0]
    scores: dict[str, list[float]] = {"majority answer": [], "length-only predictor": []}
    for index in range(args.seeds):
        test = spawn(spawn(args.seed, args.seeds)[index], 2)[1]
        rng = np.random.default_rng(int(test.integers(2**31)))  # the same draws answer_accuracy makes
        problems = [task.problem(rng) for _ in range(args.test)]
        scores["majority answer"].append(float(np.mean([a == majority for _, a in problems])))
        scores["length-only predictor"].append(float(np.mean(
            [a == (by_lengths[_split(t)].most_common(1)[0][0] if by_lengths[_split(t)] else majority)
             for t, a in problems])))
    return {name: float(np.mean(v)) for name, v in scores.items()}


def summarise(args: argparse.Namespace, status: dict[str, str]) -> dict[str, Any]:
    """Mean and 95% t interval per configuration from the stored runs, beside the baselines."""
    from icml25_shared.stats import t_interval

    rows: dict[str, dict[str, list[float]]] = defaultdict(lambda: defaultdict(list))
    for path in sorted(args.out.glob("ed-*.json")):
        run = json.loads(path.read_text())
        for rt, acc in run["accuracy"].items():
            rows[f"{run['model']} r={run['r']}"][rt].append(acc)
    table = {}
    for name, by_rt in rows.items():
        table[name] = {}
        for rt, values in by_rt.items():
            ci = t_interval(values) if len(values) > 1 else None
            table[name][f"r_test={rt}"] = {"values": values, "mean": sum(values) / len(values),
                                           "low": ci.low if ci else None, "high": ci.high if ci else None}
    summary = {"sizes": {k: v for k, v in vars(args).items() if k not in ("out", "one")}, "runs": status,
               "models": table, "baselines": baselines(args)}
    (args.out / "summary.json").write_text(json.dumps(summary, indent=1, default=str))
    return summary


def main(argv: list[str] | None = None) -> int:
    """Run the ED family (or one run with the hidden ``--one``); return 0."""
    args = _parse(argv)
    if args.one:
        run_one(args, args.one[0], int(args.one[1]), int(args.one[2]))
        return 0
    jobs = [(kind, int(r), i) for kind, r in (c.split(":") for c in args.configs.split(",")) for i in range(args.seeds)]
    jobs = list(dict.fromkeys(jobs))  # a configuration named twice would write the same files twice
    args.out.mkdir(parents=True, exist_ok=True)
    passthrough = list(argv if argv is not None else sys.argv[1:])
    commands = {f"{kind} r={r} seed {i}": [sys.executable, os.path.abspath(__file__), *passthrough, "--one", kind,
                                          str(r), str(i)] for kind, r, i in jobs}
    by_name = dict(zip(commands, jobs, strict=True))
    status = run_jobs(commands, workers=args.workers, seconds=args.budget_seconds,
                      inline=lambda name: run_one(args, *by_name[name]))
    summarise(args, status)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
