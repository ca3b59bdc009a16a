"""Short 3-seed rerun of the tiny-LM comparison, stored in results/reproduce.json.

    OMP_NUM_THREADS=1 python packages/quest-qat/studies/reproduce_seeds.py [--steps 80]

Same model, corpus and optimiser as ``python -m quest reproduce`` but fewer steps and four runs (full
precision, QuEST W4A4, trust W4A4 without Hadamard, STE W4A4 without Hadamard), three seeds drawn with
``child_seeds``; each seed fixes the init and the batches shared by its four runs. Per run: mean and 95% t
interval of the final validation loss, and the paired gap to full precision.
"""

from __future__ import annotations

import argparse
import json
import time
from dataclasses import asdict
from pathlib import Path

import torch
from icml25_shared.random import child_seeds
from icml25_shared.stats import t_interval

from quest import QuestConfig, quantize_
from quest.lm import TinyLlama, TinyLlamaConfig, stdlib_corpus
from quest.train import TrainConfig, make_splits, train_lm

RUNS = {
    "full precision": None,
    "QuEST W4A4": QuestConfig(weight_bits=4, act_bits=4, hadamard="half", method="quest"),
    "trust W4A4 (no Hadamard)": QuestConfig(weight_bits=4, act_bits=4, hadamard=None, method="quest"),
    "STE W4A4 (no Hadamard)": QuestConfig(weight_bits=4, act_bits=4, hadamard=None, method="ste"),
}


def main() -> None:
    """Run the seeds and write the JSON."""
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=80)
    parser.add_argument("--out", type=Path, default=Path(__file__).resolve().parents[1] / "results" / "reproduce.json")
    args = parser.parse_args()
    torch.set_num_threads(1)
    model_cfg = TinyLlamaConfig(d_model=128, n_layers=2, n_heads=2)
    train, val = make_splits(stdlib_corpus(2_000_000))
    seeds = child_seeds(0, 3)
    losses: dict[str, list[float]] = {name: [] for name in RUNS}
    seconds: dict[str, list[float]] = {name: [] for name in RUNS}
    for seed in seeds:
        train_cfg = TrainConfig(steps=args.steps, batch_size=16, seq_len=64, lr=3e-3, eval_every=args.steps,
                                eval_batches=8, random_state=seed)
        for name, cfg in RUNS.items():
            torch.manual_seed(seed)
            model = TinyLlama(model_cfg)
            if cfg is not None:
                quantize_(model, cfg)
            start = time.perf_counter()
            result = train_lm(model, train, val, train_cfg)
            seconds[name].append(time.perf_counter() - start)
            losses[name].append(result.final_val_loss)
            print(f"seed {seed} {name}: {result.final_val_loss:.4f} ({seconds[name][-1]:.0f} s)", flush=True)
    fp = losses["full precision"]
    summary = {}
    for name, values in losses.items():
        gaps = [v - f for v, f in zip(values, fp, strict=True)]
        iv, giv = t_interval(values), (t_interval(gaps) if name != "full precision" else None)
        summary[name] = {"final_val_loss": values, "mean": iv.estimate, "ci95": [iv.low, iv.high],
                         "gap_to_full_precision": gaps,
                         "gap_ci95": None if giv is None else [giv.estimate, giv.low, giv.high],
                         "seconds": seconds[name]}
    out = {"model": asdict(model_cfg), "steps": args.steps, "batch_size": 16, "seq_len": 64, "lr": 3e-3,
           "corpus_bytes": 2_000_000, "seeds": seeds, "torch": torch.__version__, "runs": summary}
    args.out.write_text(json.dumps(out, indent=2) + "\n")
    print(json.dumps({k: (round(v["mean"], 4), v["gap_ci95"]) for k, v in summary.items()}))


if __name__ == "__main__":
    main()
