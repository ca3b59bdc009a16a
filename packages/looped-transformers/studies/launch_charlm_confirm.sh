#!/usr/bin/env bash
# Confirmatory char-LM run (amendment 1 of studies/charlm-equal-compute-protocol.md): LT r=1 and r=4, root
# seed 7, seeds 0-1 in one nice'd process and seed 2 in another, stopped at STOP (default 23:25 UTC).
set -euo pipefail
res=packages/looped-transformers/results/charlm-converged-seed7
py=${PYTHON:-.venv/bin/python}
left=$(( $(date -u -d "${STOP:-23:25}" +%s) - $(date -u +%s) ))
logs=${LOGS:-/tmp/looped-transformers-logs}
mkdir -p "$logs"
for seeds in "0, 1" "2"; do
    nice -n 10 env OMP_NUM_THREADS=1 MKL_NUM_THREADS=1 timeout "$left" "$py" -c "
import torch
torch.set_num_threads(1)
from looped_transformers.experiments import CHARLM_PROTOCOLS, run_charlm_cells
protocol = {**CHARLM_PROTOCOLS['converged'], 'cells': [['LT', 1], ['LT', 4]]}
run_charlm_cells(protocol, '$res', random_state=7, seed_indices=[$seeds])
" > "$logs/charlm-confirm-${seeds%%,*}.log" 2>&1 &
done
wait
