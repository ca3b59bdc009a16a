"""Packed-INT4 GEMM (Triton, dequantising epilogue fused) against a bf16 ``torch.matmul``.

    python packages/quest-qat/benchmarks/int4_gemm.py [--out out/quest/int4_gemm.json]
    python packages/quest-qat/benchmarks/int4_gemm.py --interpret   # CPU, tiny shapes, correctness only

On a CUDA device with triton it times, for each (M, K, N): ``int4_gemm`` on packed operands (the GEMM
alone, activations already quantised), the whole INT4 path (per-token step + pack + GEMM), and
``torch.matmul`` of bfloat16 operands, and checks the Triton result against the torch reference bit
for bit. The official repository's README quotes no GEMM timings, so there is no CUTLASS number to
put beside these; its kernels target Ampere/Ada INT4 tensor cores, which Hopper GPUs lack.
``--interpret`` sets ``TRITON_INTERPRET=1`` (before the kernels are defined) and runs tiny shapes on
CPU: the timings then measure the interpreter, only the exactness column means anything.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    """Command-line options."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=Path("out/quest/int4_gemm.json"))
    parser.add_argument("--repeats", type=int, default=20)
    parser.add_argument("--interpret", action="store_true", help="Triton's CPU interpreter on tiny shapes")
    parser.add_argument("--shapes", type=str, default=None,
                        help="comma-separated MxKxN (default: GPU 4096x4096x4096,16384x2560x2560,"
                             "2048x8192x8192; --interpret 16x64x24,33x130x17)")
    return parser.parse_args(argv)


def bench_shape(report, m: int, k: int, n: int, device: str, repeats: int) -> None:
    """Add the two rows of one (M, K, N) problem to ``report``."""
    import torch
    from icml25_shared.bench import compare

    from quest.kernels import find_scale, int4_gemm, quantize_int4

    g = torch.Generator(device=device).manual_seed(0)
    x = torch.randn(m, k, device=device, generator=g)
    w = torch.randn(n, k, device=device, generator=g)
    sx, sw = find_scale(x, backend="torch"), find_scale(w, backend="torch")
    cx, cw = quantize_int4(x, sx, backend="torch"), quantize_int4(w, sw, backend="torch")
    ref = int4_gemm(cx, sx, cw, sw, backend="torch")
    out = int4_gemm(cx, sx, cw, sw, backend="triton")
    xb, wb = x.bfloat16(), w.bfloat16()
    sizes = {"M": m, "K": k, "N": n}
    exact = {"bit_exact_vs_torch": bool(torch.equal(out, ref))}
    report.add(compare(lambda: int4_gemm(cx, sx, cw, sw, backend="triton"), lambda: torch.matmul(xb, wb.T),
                       label="GEMM (packed operands)", ours_name="int4_gemm triton", peer_name="bf16 matmul",
                       repeats=repeats, sizes=sizes, metrics=exact))

    def whole() -> torch.Tensor:
        s = find_scale(x, backend="triton")
        return int4_gemm(quantize_int4(x, s, backend="triton"), s, cw, sw, backend="triton")

    report.add(compare(whole, lambda: torch.matmul(xb, wb.T), label="step + pack + GEMM",
                       ours_name="int4 path triton", peer_name="bf16 matmul", repeats=repeats, sizes=sizes,
                       metrics=exact))


def main(argv: list[str] | None = None) -> dict:
    """Run the benchmark; return the report as a dict (also written to ``--out``)."""
    args = parse_args(argv)
    if args.interpret:
        if "triton" in sys.modules and os.environ.get("TRITON_INTERPRET") != "1":
            raise SystemExit("--interpret must be decided before triton is imported")
        os.environ["TRITON_INTERPRET"] = "1"
    import torch
    from icml25_shared.bench import BenchmarkReport

    from quest._kernels import triton_available

    if args.interpret:
        device, default, repeats = "cpu", "16x64x24,33x130x17", 1
    elif torch.cuda.is_available() and triton_available("cuda"):
        device, default, repeats = "cuda", "4096x4096x4096,16384x2560x2560,2048x8192x8192", args.repeats
    else:
        raise SystemExit("no CUDA device with triton: pass --interpret for the CPU correctness run")
    shapes = [tuple(int(v) for v in s.split("x")) for s in (args.shapes or default).split(",")]
    report = BenchmarkReport(f"packed-INT4 GEMM (Triton, fused epilogue) vs bf16 torch.matmul ({device})",
                             packages=["quest-qat", "triton", "torch"])
    for m, k, n in shapes:
        bench_shape(report, m, k, n, device, repeats)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    report.write_json(args.out)
    print(report.to_markdown())
    return {"shapes": shapes, "bit_exact": all(r.metrics["bit_exact_vs_torch"] for r in report.rows)}


if __name__ == "__main__":
    main()
