"""Efficiency of the looped model: bytes saved for backward with and without ``checkpoint_loops``, and the time
of a looped forward against transformers' ``LlamaForCausalLM`` with the same number of (unrolled) layers.

    OMP_NUM_THREADS=1 python packages/looped-transformers/benchmarks/run.py [--out results/benchmark.json]

Prints a markdown table and writes JSON. Sizes are in ``SIZES``.
"""

from __future__ import annotations

import argparse
import json
import platform
import time
from pathlib import Path

import torch
import transformers
from transformers import LlamaConfig, LlamaForCausalLM

from looped_transformers import LoopedConfig, LoopedForCausalLM

SIZES = {"memory": {"d": 64, "heads": 4, "loops": 32, "batch": 4, "seq": 64, "vocab": 128},
         "speed": {"d": 256, "heads": 4, "loops": 8, "batch": 8, "seq": 128, "vocab": 256, "repeats": 7}}


def saved_bytes(model: LoopedForCausalLM, ids: torch.Tensor, *, checkpoint_loops: bool) -> int:
    """Bytes of the tensors autograd saves for backward in one training forward (plus loop inputs kept by
    checkpointing), counted with ``torch.autograd.graph.saved_tensors_hooks``."""
    total = 0
    seen: set[int] = set()

    def pack(t: torch.Tensor) -> torch.Tensor:
        nonlocal total
        key = t.untyped_storage().data_ptr()
        if key not in seen:  # a storage saved twice is stored once
            seen.add(key)
            total += t.untyped_storage().nbytes()
        return t

    model.train()
    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        out = model(ids, labels=ids, checkpoint_loops=checkpoint_loops, use_cache=False)
    if checkpoint_loops:  # each checkpointed loop keeps its input state for the recomputation
        b, s = ids.shape
        total += model.config.n_loops * b * s * model.config.hidden_size * 4
    out.loss.backward()
    return total


def memory() -> dict:
    """Saved bytes with and without ``checkpoint_loops`` at ``SIZES['memory']``."""
    p = SIZES["memory"]
    torch.manual_seed(0)
    model = LoopedForCausalLM(LoopedConfig(vocab_size=p["vocab"], hidden_size=p["d"], num_attention_heads=p["heads"],
                                           n_loops=p["loops"], timestep="tmlt", max_position_embeddings=p["seq"]))
    ids = torch.randint(0, p["vocab"], (p["batch"], p["seq"]), generator=torch.Generator().manual_seed(0))
    plain, ckpt = saved_bytes(model, ids, checkpoint_loops=False), saved_bytes(model, ids, checkpoint_loops=True)
    return {**p, "bytes_plain": plain, "bytes_checkpoint": ckpt, "ratio": ckpt / plain}


@torch.no_grad()
def speed() -> dict:
    """Forward time of the looped Llama-style model vs the unrolled ``LlamaForCausalLM`` (best of repeats)."""
    p = SIZES["speed"]
    torch.manual_seed(0)
    looped = LoopedForCausalLM(LoopedConfig(vocab_size=p["vocab"], hidden_size=p["d"], num_attention_heads=p["heads"],
                                            n_loops=p["loops"], block="llama", max_position_embeddings=p["seq"])).eval()
    llama = LlamaForCausalLM(LlamaConfig(vocab_size=p["vocab"], hidden_size=p["d"], num_attention_heads=p["heads"],
                                         num_key_value_heads=p["heads"], intermediate_size=4 * p["d"],
                                         num_hidden_layers=p["loops"], max_position_embeddings=p["seq"])).eval()
    ids = torch.randint(0, p["vocab"], (p["batch"], p["seq"]), generator=torch.Generator().manual_seed(0))
    times = {"looped": [], "llama": []}
    for _ in range(p["repeats"]):  # interleaved, so that load changes hit both
        for name, model in (("looped", looped), ("llama", llama)):
            start = time.perf_counter()
            model(ids, use_cache=False)
            times[name].append(time.perf_counter() - start)
    best = {name: min(v) for name, v in times.items()}
    return {**p, "seconds_looped": best["looped"], "seconds_llama": best["llama"],
            "ratio": best["looped"] / best["llama"]}


@torch.no_grad()
def flops() -> dict:
    """Forward FLOPs (``torch.utils.flop_counter``) of the looped model (none and TMLT) vs the unrolled Llama."""
    from torch.utils.flop_counter import FlopCounterMode

    p = SIZES["speed"]
    torch.manual_seed(0)
    ids = torch.randint(0, p["vocab"], (p["batch"], p["seq"]), generator=torch.Generator().manual_seed(0))
    out = {}
    models = {"llama": LlamaForCausalLM(LlamaConfig(vocab_size=p["vocab"], hidden_size=p["d"],
                                                    num_attention_heads=p["heads"], num_key_value_heads=p["heads"],
                                                    intermediate_size=4 * p["d"], num_hidden_layers=p["loops"],
                                                    max_position_embeddings=p["seq"]))}
    for timestep in ("none", "tmlt"):
        models[f"looped_{timestep}"] = LoopedForCausalLM(LoopedConfig(
            vocab_size=p["vocab"], hidden_size=p["d"], num_attention_heads=p["heads"], n_loops=p["loops"],
            block="llama", timestep=timestep, max_position_embeddings=p["seq"]))
    for name, model in models.items():
        with FlopCounterMode(display=False) as counter:
            model.eval()(ids, use_cache=False)
        out[name] = counter.get_total_flops()
    return {**p, **out, "ratio_none": out["looped_none"] / out["llama"], "ratio_tmlt": out["looped_tmlt"] / out["llama"]}


def main() -> None:
    """Run both measurements, print the table and write JSON."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=Path("out/looped_transformers/benchmark.json"))
    args = parser.parse_args()
    torch.set_num_threads(1)
    result = {"memory": memory(), "speed": speed(), "flops": flops(), "torch": torch.__version__,
              "transformers": transformers.__version__, "machine": platform.machine(),
              "cpu": platform.processor() or "unknown", "threads": 1}
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=2))
    m, s = result["memory"], result["speed"]
    print("| measure | size | without / Llama | with / looped | ratio |")
    print("|---|---|---|---|---|")
    print(f"| bytes saved for backward | r={m['loops']}, d={m['d']}, batch {m['batch']} x {m['seq']} | "
          f"{m['bytes_plain'] / 2**20:.1f} MiB | {m['bytes_checkpoint'] / 2**20:.1f} MiB | {m['ratio']:.3f} |")
    print(f"| forward seconds | r={s['loops']}, d={s['d']}, batch {s['batch']} x {s['seq']} | "
          f"{s['seconds_llama']:.4f} | {s['seconds_looped']:.4f} | {s['ratio']:.3f} |")
    f = result["flops"]
    print(f"| forward FLOPs (TMLT) | r={f['loops']}, d={f['d']}, batch {f['batch']} x {f['seq']} | "
          f"{f['llama']:.3e} | {f['looped_tmlt']:.3e} | {f['ratio_tmlt']:.3f} |")


if __name__ == "__main__":
    main()
