"""QuEST vs torchao QAT (the peer) in one process: W4A4 layer accuracy, fake-quant speed, INT4
inference, and a short tiny-LM QAT run from the same init and batches. Writes JSON, prints markdown.

    python packages/quest-qat/benchmarks/run.py [--quick] [--out out/quest/benchmark.json]

The peer is torchao's QAT fake quantizer (``pip install torchao``): int4 per-token asymmetric
activations and int4 per-channel symmetric weights, the closest W4A4 configuration torchao offers
(symmetric per-token activations raise NotImplementedError there).
"""

from __future__ import annotations

import argparse
import logging
import math
import platform
from pathlib import Path

import torch
from icml25_shared.bench import BenchmarkReport, compare
from torch import nn

from quest import QuestConfig, QuestLinear, convert_, quantize_
from quest.lm import TinyLlama, TinyLlamaConfig, stdlib_corpus
from quest.train import TrainConfig, make_splits, train_lm

logging.getLogger("torchao").setLevel(logging.ERROR)


def torchao_w4a4():
    from torchao.quantization.qat import IntxFakeQuantizeConfig

    act = IntxFakeQuantizeConfig(torch.int4, "per_token", is_symmetric=False)
    weight = IntxFakeQuantizeConfig(torch.int4, "per_channel", is_symmetric=True)
    return act, weight


def torchao_linear(linear: nn.Linear) -> nn.Module:
    from torchao.quantization.qat import FakeQuantizedLinear

    act, weight = torchao_w4a4()
    return FakeQuantizedLinear.from_linear(linear, activation_config=act, weight_config=weight)


def torchao_quantize(model: nn.Module) -> nn.Module:
    from torchao.quantization import quantize_ as ao_quantize_
    from torchao.quantization.qat import QATConfig

    act, weight = torchao_w4a4()
    ao_quantize_(model, QATConfig(activation_config=act, weight_config=weight, step="prepare"),
                 filter_fn=lambda m, fqn: isinstance(m, nn.Linear) and not fqn.endswith("lm_head"))
    return model


def llm_like(rows: int, cols: int, seed: int) -> torch.Tensor:
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(rows, cols, generator=g)
    x[:, torch.randperm(cols, generator=g)[: cols // 64]] *= 20.0
    return x


def rel_err(out: torch.Tensor, ref: torch.Tensor) -> float:
    return float((out - ref).norm() / ref.norm())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=Path("out/quest/benchmark.json"))
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--quick", action="store_true", help="small sizes and a 20-step training run")
    args = parser.parse_args()
    torch.set_num_threads(1)
    torch.manual_seed(0)
    tokens, k, n = (256, 512, 512) if args.quick else (2048, 1024, 1024)
    report = BenchmarkReport("quest-qat vs torchao QAT (W4A4)", packages=["quest-qat", "torchao", "torch"])

    # 1. accuracy of one W4A4 layer on activations with outlier channels, and on Gaussian ones
    base = nn.Linear(k, n, bias=False)
    ours = QuestLinear.from_linear(base, QuestConfig())
    peer = torchao_linear(nn.Linear(k, n, bias=False))
    peer.weight = base.weight
    for label, x in (("outlier activations", llm_like(tokens, k, 1)),
                     ("Gaussian activations", torch.randn(tokens, k, generator=torch.Generator().manual_seed(2)))):
        with torch.no_grad():
            ref = x @ base.weight.T
            e_ours, e_peer = rel_err(ours(x), ref), rel_err(peer(x), ref)
            row = compare(lambda x=x: ours(x), lambda x=x: peer(x), label=f"W4A4 forward, {label}",
                          ours_name="QuestLinear", peer_name="torchao FakeQuantizedLinear", repeats=args.repeats,
                          sizes={"tokens": tokens, "K": k, "N": n},
                          metrics={"ours_rel_error": e_ours, "peer_rel_error": e_peer})
        report.add(row)

    # 2. fake-quant training step speed (forward + backward)
    x = llm_like(tokens, k, 3).requires_grad_()

    def step(layer):
        def run():
            layer.zero_grad(set_to_none=True)
            layer(x).sum().backward()
        return run

    report.add(compare(step(ours), step(peer), label="fake-quant linear forward+backward", ours_name="QuestLinear",
                       peer_name="torchao FakeQuantizedLinear", repeats=args.repeats,
                       sizes={"tokens": tokens, "K": k, "N": n}))

    # 3. INT4 inference layer vs the fake-quant layer it came from (CPU int32 GEMM reference path)
    model = nn.Sequential(nn.Linear(k, n, bias=False))
    quantize_(model, QuestConfig())
    xs = llm_like(tokens, k, 4)
    with torch.no_grad():
        fake = model(xs)
        fq_layer = model[0]
        conv = convert_(model)
        real = model(xs)
    with torch.no_grad():
        report.add(compare(lambda: model(xs), lambda: fq_layer(xs), label="INT4 layer forward vs fake-quant forward",
                           ours_name="Int4Linear (int32 GEMM, CPU)", peer_name="QuestLinear fake-quant",
                           repeats=args.repeats, sizes={"tokens": tokens, "K": k, "N": n},
                           metrics={"max_rel_diff": float((real - fake).abs().max() / fake.abs().max()),
                                    "weight_bytes_over_fp32": conv.compression}))

    # 4. tiny-LM QAT from the same init and batches
    steps = 20 if args.quick else 150
    train, val = make_splits(stdlib_corpus(300_000 if args.quick else 1_000_000))
    cfg = TrainConfig(steps=steps, batch_size=8, seq_len=64, lr=3e-3, eval_every=steps, eval_batches=4)
    losses = {}

    def run(name, prepare):
        def go():
            torch.manual_seed(0)
            net = prepare(TinyLlama(TinyLlamaConfig(d_model=128, n_layers=2, n_heads=2)))
            res = train_lm(net, train, val, cfg)
            losses[name] = res.final_val_loss if not res.diverged else math.inf
        return go

    run("full precision", lambda m: m)()
    row = compare(run("QuEST W4A4", lambda m: quantize_(m, QuestConfig())), run("torchao W4A4", torchao_quantize),
                  label=f"tiny-LM W4A4 QAT, {steps} steps (time = whole run)", ours_name="QuEST W4A4",
                  peer_name="torchao W4A4", warmup=0, repeats=1,
                  sizes={"steps": steps, "batch": 8, "seq": 64, "d_model": 128, "layers": 2})
    row.metrics.update(fp_val_loss=losses["full precision"], ours_val_loss=losses["QuEST W4A4"],
                       peer_val_loss=losses["torchao W4A4"])
    report.add(row)

    report.write_json(args.out)
    print(f"machine: {platform.machine()} {platform.processor() or ''}, torch threads 1, torch {torch.__version__}")
    print(report.to_markdown())


if __name__ == "__main__":
    main()
