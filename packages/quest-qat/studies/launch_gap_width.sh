#!/usr/bin/env bash
# The width gap run (studies/gap-width-protocol.md): two nice'd, single-threaded chains, one JSON per run as it ends:
#   A: FP32 seeds 0, 1, 2, then W4A4 seeds 0, 1, 2;   B: W1A1 seeds 0, 1, 2.
# Then `python packages/quest-qat/studies/report_gap.py width 4` writes the report from the stored runs.
# Run from the repository root.
set -euo pipefail
out=packages/quest-qat/results/gap-width
py=${PYTHON:-.venv/bin/python}
chain() {  # $1 = log name, then the precisions in order
    local log=$1; shift
    nice -n 10 env OMP_NUM_THREADS=1 MKL_NUM_THREADS=1 "$py" -c "
import logging, sys, torch
torch.set_num_threads(1)
logging.basicConfig(level=logging.INFO, format='%(asctime)s %(message)s')
from quest.scaling import GAP_PROTOCOLS, run_gap_cells
protocol = GAP_PROTOCOLS['width']
for name in sys.argv[1:]:
    run_gap_cells({**protocol, 'precisions': {name: protocol['precisions'][name]}}, '$out', random_state=4)
" "$@" > "$out/logs/$log.log" 2>&1
}
mkdir -p "$out/logs"
chain A FP32 W4A4 &
while [ ! -s "$out/ngram.json" ]; do sleep 5; done  # chain A writes the n-gram baselines once
chain B W1A1 &
wait
