"""Benchmark: stop-at-layer collection against a full forward, and mapper training memory against shard count.

    OMP_NUM_THREADS=1 python packages/safety-transfer/benchmarks/run.py

Writes ``results/benchmark.json`` (next to this folder) and prints a markdown table with sizes and versions.
"""

from __future__ import annotations

import argparse
import json
import platform
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import torch
import transformers

from safety_transfer import AutoEncoderMapper, byte_tokenizer, collect_activations, collect_pairs, tiny_causal_lm
from safety_transfer.tasks import stdlib_text

HERE = Path(__file__).resolve().parent


def _best(fn, repeats: int) -> float:
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return min(times)


def collection(repeats: int) -> dict:
    tok = byte_tokenizer()
    model = tiny_causal_lm("llama", hidden_size=256, num_layers=8, num_heads=4, random_state=0)
    text = stdlib_text(100_000)
    texts = [text[i:i + 128] for i in range(0, 128 * 64, 128)]
    batch = tok(texts, return_tensors="pt", padding=True, add_special_tokens=False)

    def full():
        with torch.no_grad():
            hs = model(**batch, output_hidden_states=True, use_cache=False).hidden_states
        return hs[3][batch["attention_mask"].bool()]

    def stop():
        return collect_activations(model, tok, texts, 2, batch_size=64).values

    assert torch.equal(full(), stop())
    t_full, t_stop = _best(full, repeats), _best(stop, repeats)
    return {"model": "llama d=256 L=8", "layer": 2, "texts": 64, "chars": 128, "full_s": t_full, "stop_s": t_stop,
            "speedup": t_full / t_stop}


def _fit_child(folder: str) -> None:
    from safety_transfer.activations import ActivationShards

    meta = json.loads((Path(folder) / "index.json").read_text())
    shards = ActivationShards(tuple(Path(folder) / p for p in meta["paths"]), tuple(meta["keys"]), meta["n_rows"],
                              meta["metadata"])
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    AutoEncoderMapper(64, 128, epochs=1, batch_size=256, random_state=0).fit(shards)
    after = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    print(json.dumps({"rss_before_kib": before, "rss_after_kib": after}))


def shard_memory() -> list[dict]:
    tok = byte_tokenizer()
    src = tiny_causal_lm("llama", hidden_size=64, num_layers=2, random_state=0)
    tgt = tiny_causal_lm("qwen2", hidden_size=128, num_layers=4, random_state=1)
    text = stdlib_text(400_000)
    rows = []
    for n_batches in (4, 32):
        texts = [text[i:i + 128] for i in range(0, 128 * 32 * n_batches, 128)]
        with tempfile.TemporaryDirectory() as folder:
            shards = collect_pairs(src, tgt, texts, source_tokenizer=tok, source_layer=1, target_layer=2,
                                   batch_size=32, out=folder)
            size = sum(p.stat().st_size for p in shards.paths)
            done = subprocess.run([sys.executable, __file__, "--fit-child", folder], capture_output=True, text=True,
                                  check=True)
            mem = json.loads(done.stdout.strip().splitlines()[-1])
            rows.append({"shards": len(shards), "rows": shards.n_rows, "bytes_on_disk": size,
                         "peak_rss_mib": mem["rss_after_kib"] / 1024,
                         "rss_growth_mib": (mem["rss_after_kib"] - mem["rss_before_kib"]) / 1024})
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--out", type=Path, default=HERE.parent / "results" / "benchmark.json")
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--fit-child", default=None, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.fit_child:
        _fit_child(args.fit_child)
        return
    torch.set_num_threads(1)
    report = {"torch": torch.__version__, "transformers": transformers.__version__, "python": platform.python_version(),
              "machine": platform.machine(), "threads": 1, "collection": collection(args.repeats),
              "shards": shard_memory()}
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(report, indent=2))
    c = report["collection"]
    print("| measure | size | value |\n|---|---|---|")
    print(f"| full forward with output_hidden_states, s (best of {args.repeats}) | {c['model']}, 64 x 128 tokens "
          f"| {c['full_s']:.4f} |")
    print(f"| collect_activations stopped after layer 2, s | same | {c['stop_s']:.4f} (x{c['speedup']:.2f}) |")
    for r in report["shards"]:
        print(f"| AE fit from {r['shards']} shards: peak RSS / growth, MiB | {r['rows']} pairs, "
              f"{r['bytes_on_disk'] / 2**20:.1f} MiB on disk | {r['peak_rss_mib']:.0f} / {r['rss_growth_mib']:.1f} |")


if __name__ == "__main__":
    main()
