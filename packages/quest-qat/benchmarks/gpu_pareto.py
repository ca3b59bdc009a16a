"""Pareto pilot on one GPU: 3 widths x 5 precisions at ~100 tokens per parameter, parameters per memory.

    python packages/quest-qat/benchmarks/gpu_pareto.py --out results/gpu-pareto [--budget-seconds 240]

TinyLlama byte models (2 layers, 2 heads) of widths 32, 64 and 128 (26,624 / 100,352 / 389,120 quantized
parameters) trained on the stdlib bytes for ``100 x N / (batch x seq_len)`` steps each (the paper's 100 tokens
per parameter; the 1.8M-byte split is repeated for the largest width), in BF16 (forward under bfloat16
autocast) and QuEST W8A8, W4A4, W2A2, W1A1 (trust estimator, half Hadamard over blocks of 16), two seeds.
Each (precision, seed) trains its three widths in its own process, all at once on one GPU; the parent kills
what still runs at ``--budget-seconds``. ``summary.json`` holds the losses, the n-gram tables and
:func:`quest.scaling.bits_params_at_equal_loss` (parameters per memory relative to BF16; the paper's official
runs give W4A4 3.18, W2A2 2.2, W8A8 1.98, W1A1 ~1.3).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path
from typing import Any

from icml25_shared.bench import run_jobs

PRECISIONS = ("BF16", "W8A8", "W4A4", "W2A2", "W1A1")


def _parse(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--out", type=Path, required=True)
    p.add_argument("--widths", default="32,64,128")
    p.add_argument("--precisions", default=",".join(PRECISIONS))
    p.add_argument("--tokens-per-param", type=float, default=100.0)
    p.add_argument("--max-steps", type=int, default=100_000, help="cap on the steps of one width")
    p.add_argument("--batch-size", type=int, default=64)
    p.add_argument("--seq-len", type=int, default=256)
    p.add_argument("--lr", type=float, default=3e-3)
    p.add_argument("--seeds", type=int, default=2)
    p.add_argument("--seed", type=int, default=0, help="root seed")
    p.add_argument("--corpus-bytes", type=int, default=2_000_000)
    p.add_argument("--device", default="auto")
    p.add_argument("--budget-seconds", type=float, default=240.0)
    p.add_argument("--workers", type=int, default=-1, help="-1: one process per (precision, seed); 0: in-process")
    p.add_argument("--one", nargs=2, metavar=("PRECISION", "SEED_INDEX"), help=argparse.SUPPRESS)
    return p.parse_args(argv)


def run_one(args: argparse.Namespace, precision: str, index: int) -> dict[str, Any]:
    """Train one precision and seed at every width; write and return its JSON."""
    import torch
    from icml25_shared.random import child_seeds

    from quest import QuestConfig, quantize_
    from quest.lm import TinyLlama, TinyLlamaConfig, stdlib_corpus
    from quest.scaling import SCALING_BITS, _BF16Forward, _quantized_params
    from quest.train import TrainConfig, make_splits, train_lm

    torch.set_num_threads(1)
    device = ("cuda" if torch.cuda.is_available() else "cpu") if args.device == "auto" else args.device
    data_seed, *init_seeds = child_seeds(args.seed, args.seeds + 1)
    train, val = make_splits(stdlib_corpus(args.corpus_bytes))
    rows = []
    for width in (int(w) for w in args.widths.split(",")):
        torch.manual_seed(init_seeds[index])
        model = TinyLlama(TinyLlamaConfig(d_model=width, n_layers=2, n_heads=2, multiple_of=16,
                                          max_seq_len=max(256, args.seq_len)))
        n = _quantized_params(model)
        steps = max(1, min(args.max_steps, round(args.tokens_per_param * n / (args.batch_size * args.seq_len))))
        if precision != "BF16":
            bits = SCALING_BITS[precision]
            quantize_(model, QuestConfig(weight_bits=bits, act_bits=bits, hadamard="half", method="quest", block=16))
        model = model.to(device)
        net = _BF16Forward(model) if precision == "BF16" else model
        start = time.perf_counter()
        result = train_lm(net, train, val, TrainConfig(steps=steps, batch_size=args.batch_size, seq_len=args.seq_len,
                                                      lr=args.lr, eval_every=steps, eval_batches=16,
                                                      random_state=data_seed))
        rows.append({"width": width, "params": n, "steps": steps, "tokens": steps * args.batch_size * args.seq_len,
                     "final_val_loss": result.final_val_loss, "diverged": result.diverged,
                     "seconds": time.perf_counter() - start})
    out = {"precision": precision, "seed_index": index, "device": str(device),
           "device_name": torch.cuda.get_device_name() if device == "cuda" else "cpu", "torch": torch.__version__,
           "widths": rows}
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / f"pareto-{precision}-seed{index}.json").write_text(json.dumps(out, indent=1))
    return out


def summarise(args: argparse.Namespace, status: dict[str, str]) -> dict[str, Any]:
    """Losses per precision, width and seed, the n-gram tables and the equal-loss memory analysis."""
    from quest.scaling import SCALING_BITS, bits_params_at_equal_loss, ngram_baselines

    runs: dict[str, dict[int, list[dict[str, Any]]]] = {}
    for path in sorted(args.out.glob("pareto-*.json")):
        run = json.loads(path.read_text())
        runs.setdefault(run["precision"], {})[run["seed_index"]] = run["widths"]
    summary: dict[str, Any] = {"sizes": {k: str(v) for k, v in vars(args).items() if k != "one"}, "runs": status,
                               "losses": runs, "ngram": ngram_baselines(args.corpus_bytes)}
    complete = {p: [[w["final_val_loss"] for w in by_seed[i]] for i in sorted(by_seed)]
                for p, by_seed in runs.items() if len(by_seed) == args.seeds}
    if "BF16" in complete and "W4A4" in complete and args.seeds >= 1:
        params = [w["params"] for w in next(iter(runs["BF16"].values()))]
        summary["analysis"] = bits_params_at_equal_loss(params, complete, {p: SCALING_BITS[p] for p in complete})
    (args.out / "summary.json").write_text(json.dumps(summary, indent=1, default=str))
    return summary


def main(argv: list[str] | None = None) -> int:
    """Run the pilot (or one process of it with the hidden ``--one``); return 0."""
    args = _parse(argv)
    if args.one:
        run_one(args, args.one[0], int(args.one[1]))
        return 0
    jobs = [(p, i) for p in args.precisions.split(",") for i in range(args.seeds)]
    jobs = list(dict.fromkeys(jobs))  # a configuration named twice would write the same files twice
    args.out.mkdir(parents=True, exist_ok=True)
    passthrough = list(argv if argv is not None else sys.argv[1:])
    commands = {f"{p} seed {i}": [sys.executable, os.path.abspath(__file__), *passthrough, "--one", p, str(i)]
                for p, i in jobs}
    by_name = dict(zip(commands, jobs, strict=True))
    status = run_jobs(commands, workers=args.workers, seconds=args.budget_seconds,
                      inline=lambda name: run_one(args, *by_name[name]))
    summarise(args, status)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
