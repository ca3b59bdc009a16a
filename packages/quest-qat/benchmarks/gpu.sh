#!/usr/bin/env bash
# One GPU, under 8 minutes in all (hard timeouts): device tests and the Triton kernels compiled on the GPU
# (bit-exact against the torch reference), the packed-INT4 GEMM against a bf16 matmul at LLM shapes, and the
# 3-width x 5-precision Pareto pilot. Results: $OUT (default results/gpu).
# Run from the repository root:  bash packages/quest-qat/benchmarks/gpu.sh   (needs quest-qat[triton])
set -u
HERE="$(cd "$(dirname "$0")/.." && pwd)"
OUT="${OUT:-$HERE/results/gpu}"
PY="${PYTHON:-python}"
mkdir -p "$OUT"
"$PY" -c "import torch, triton; print('cuda', torch.cuda.is_available(), torch.cuda.get_device_name() if torch.cuda.is_available() else '', 'triton', triton.__version__)" | tee "$OUT/device.txt"
# 1. kernel tests on CUDA (compiled Triton, not the interpreter) and device-following training: ~1 minute
timeout 100 "$PY" -m pytest -q -p no:cacheprovider "$HERE/tests/test_kernels.py" "$HERE/tests/test_hadamard_kernel.py" \
  "$HERE/tests/test_gpu.py" -m "triton or not triton" --junitxml="$OUT/device-tests.xml" 2>&1 | tail -5 | tee "$OUT/device-tests.txt"
# 2. packed-INT4 GEMM vs bf16 torch.matmul at 4096^3, 16384x2560x2560, 2048x8192x8192, bit-exactness: ~1 minute
timeout 100 "$PY" "$HERE/benchmarks/int4_gemm.py" --out "$OUT/int4_gemm.json" | tee "$OUT/int4_gemm.md"
# 3. Pareto pilot: widths 32/64/128 x BF16, W8A8, W4A4, W2A2, W1A1 x 2 seeds at 100 tokens per parameter
timeout 270 "$PY" "$HERE/benchmarks/gpu_pareto.py" --out "$OUT/pareto" --budget-seconds "${PARETO_BUDGET:-240}" "$@"
echo "exit $?" >> "$OUT/device.txt"
