#!/usr/bin/env bash
# The confirmatory gap run (studies/gap-confirm-protocol.md): one nice'd, single-threaded process per chain,
# FP32 seed i -> W4A4 seed i and W1A1 seed i, for seeds 0, 1, 2; one JSON per run as each finishes.
# Then `python -m quest reproduce --gap confirm --seed 3 --out packages/quest-qat/results` finds every run
# stored and writes the report. Run from the repository root.
set -euo pipefail
out=packages/quest-qat/results/gap-confirm
py=${PYTHON:-.venv/bin/python}
run() {  # $1 = precision, $2 = seed index
    nice -n 10 env OMP_NUM_THREADS=1 MKL_NUM_THREADS=1 "$py" -c "
import sys, torch
torch.set_num_threads(1)
from quest.scaling import GAP_PROTOCOLS, run_gap_cells
name, seed = sys.argv[1], int(sys.argv[2])
protocol = GAP_PROTOCOLS['confirm']
run_gap_cells({**protocol, 'precisions': {name: protocol['precisions'][name]}}, '$out', random_state=3,
              seed_indices=[seed])
" "$@" > "$out/logs/$1-seed$2.log" 2>&1
}
mkdir -p "$out/logs"
for seed in 0 1 2; do
    { run FP32 "$seed"; run W4A4 "$seed"; } &
    run W1A1 "$seed" &
done
wait
