#!/usr/bin/env bash
# One GPU, under 8 minutes in all (hard timeouts): the suite's device tests on CUDA, then the ED family at the
# full protocol (benchmarks/gpu_ed.py, 18 runs as parallel processes). Results: $OUT (default results/gpu).
# Run from the repository root:  bash packages/looped-transformers/benchmarks/gpu.sh
set -u
HERE="$(cd "$(dirname "$0")/.." && pwd)"
OUT="${OUT:-$HERE/results/gpu}"
PY="${PYTHON:-python}"
mkdir -p "$OUT"
"$PY" -c "import torch; print('cuda', torch.cuda.is_available(), torch.cuda.get_device_name() if torch.cuda.is_available() else '')" | tee "$OUT/device.txt"
# 1. device-sensitive tests (about 1 minute): batches follow the model, CUDA training, generation, autocast
timeout 90 "$PY" -m pytest -q -p no:cacheprovider "$HERE/tests/test_devices.py" "$HERE/tests/test_real_configs.py" \
  --junitxml="$OUT/device-tests.xml" 2>&1 | tail -5 | tee "$OUT/device-tests.txt"
# 2. edit distance at d=64, 5000 steps, lengths 4-12: LT and TMLT at r=2, 4, 8, three seeds (budget 330 s of training)
timeout 390 "$PY" "$HERE/benchmarks/gpu_ed.py" --out "$OUT/ed" --budget-seconds "${ED_BUDGET:-330}" "$@"
echo "exit $?" >> "$OUT/device.txt"
