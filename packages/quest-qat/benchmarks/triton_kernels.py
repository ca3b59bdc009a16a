"""Time and check the QuEST Triton kernels against their torch references on a GPU.

    python packages/quest-qat/benchmarks/triton_kernels.py [--out out/quest/triton_kernels.json]

Needs CUDA and triton (``pip install 'quest-qat[triton]'``); with ``TRITON_INTERPRET=1`` it runs a
small correctness-only pass on CPU instead. For each (M, K, N): find_scale, quantize_int4 (pack +
row sums) and the dequantising epilogue, torch vs Triton, plus the whole Int4Linear forward.
"""

from __future__ import annotations

import argparse
from pathlib import Path

import torch
from icml25_shared.bench import BenchmarkReport, compare

from quest._kernels import triton_available, triton_interpret, use_backend
from quest.kernels import dequant_epilogue, find_scale, int_matmul, quantize_int4, unpack_int4


def bench_shape(report: BenchmarkReport, m: int, k: int, n: int, device: str, repeats: int) -> None:
    """Add the four rows for one (M, K, N) problem to ``report``."""
    g = torch.Generator(device=device).manual_seed(0)
    x = torch.randn(m, k, device=device, generator=g)
    w = torch.randn(n, k, device=device, generator=g)
    sizes = {"M": m, "K": k, "N": n}
    s_ref, s_tri = find_scale(x, backend="torch"), find_scale(x, backend="triton")
    report.add(compare(lambda: find_scale(x, backend="triton"), lambda: find_scale(x, backend="torch"),
                       label="find_scale", ours_name="triton", peer_name="torch", repeats=repeats, sizes=sizes,
                       metrics={"max_rel_diff": float(((s_tri - s_ref).abs() / s_ref).max())}))
    c_ref, c_tri = quantize_int4(x, s_ref, backend="torch"), quantize_int4(x, s_ref, backend="triton")
    exact = bool(torch.equal(c_ref.packed, c_tri.packed) and torch.equal(c_ref.row_sum, c_tri.row_sum))
    report.add(compare(lambda: quantize_int4(x, s_ref, backend="triton"),
                       lambda: quantize_int4(x, s_ref, backend="torch"), label="quantize_int4",
                       ours_name="triton", peer_name="torch", repeats=repeats, sizes=sizes,
                       metrics={"bit_exact": exact}))
    sw = find_scale(w, backend="torch")
    cw = quantize_int4(w, sw, backend="torch")
    acc = int_matmul(unpack_int4(c_ref.packed), unpack_int4(cw.packed))
    e_ref = dequant_epilogue(acc, c_ref.row_sum, cw.row_sum, s_ref, sw, k, backend="torch")
    e_tri = dequant_epilogue(acc, c_ref.row_sum, cw.row_sum, s_ref, sw, k, backend="triton")
    report.add(compare(lambda: dequant_epilogue(acc, c_ref.row_sum, cw.row_sum, s_ref, sw, k, backend="triton"),
                       lambda: dequant_epilogue(acc, c_ref.row_sum, cw.row_sum, s_ref, sw, k, backend="torch"),
                       label="dequant_epilogue", ours_name="triton", peer_name="torch", repeats=repeats,
                       sizes=sizes, metrics={"max_rel_diff": float(((e_tri - e_ref).abs()
                                                                    / e_ref.abs().clamp_min(1e-6)).max())}))
    from quest import QuestConfig, convert_, quantize_

    model = quantize_(torch.nn.Sequential(torch.nn.Linear(k, n, bias=False)).to(device), QuestConfig())
    convert_(model)
    with torch.no_grad():
        with use_backend("torch"):
            ref = model(x)
        with use_backend("triton"):
            out = model(x)
        dense = torch.nn.Linear(k, n, bias=False, device=device, dtype=torch.float16)
        xh = x.half()
        report.add(compare(lambda: model(x), lambda: dense(xh), label="Int4Linear forward vs fp16 nn.Linear",
                           ours_name="Int4Linear (auto backend)", peer_name="fp16 nn.Linear", repeats=repeats,
                           sizes=sizes, metrics={"triton_vs_torch_max_abs": float((out - ref).abs().max())}))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=Path("out/quest/triton_kernels.json"))
    parser.add_argument("--repeats", type=int, default=20)
    args = parser.parse_args()
    if torch.cuda.is_available() and triton_available("cuda"):
        device, shapes, repeats = "cuda", [(4096, 4096, 4096), (16384, 2560, 2560), (2048, 8192, 8192)], args.repeats
    elif triton_interpret():
        device, shapes, repeats = "cpu", [(64, 256, 64)], 1
    else:
        raise SystemExit("no CUDA device with triton, and TRITON_INTERPRET=1 is not set: nothing to time")
    report = BenchmarkReport(f"QuEST INT4 kernels, Triton vs torch ({device})", packages=["quest-qat", "triton", "torch"])
    for m, k, n in shapes:
        bench_shape(report, m, k, n, device, repeats)
    report.write_json(args.out)
    print(report.to_markdown())


if __name__ == "__main__":
    main()
