#!/usr/bin/env bash
# The char-LM and equal-compute in-context protocols (studies/charlm-equal-compute-protocol.md): two nice'd,
# single-threaded processes, seed-major (a seed's cells together), one JSON per (configuration, seed) as each
# finishes; both are stopped by the clock at STOP (default 23:25 UTC). Run from the repository root.
set -euo pipefail
res=packages/looped-transformers/results
py=${PYTHON:-.venv/bin/python}
left=$(( $(date -u -d "${STOP:-23:25}" +%s) - $(date -u +%s) ))
logs=${LOGS:-/tmp/looped-transformers-logs}
mkdir -p "$logs"
nice -n 10 env OMP_NUM_THREADS=1 MKL_NUM_THREADS=1 timeout "$left" "$py" -c "
import torch
torch.set_num_threads(1)
from looped_transformers.experiments import CHARLM_PROTOCOLS, run_charlm_cells
run_charlm_cells(CHARLM_PROTOCOLS['converged'], '$res/charlm-converged', random_state=5)
" > "$logs/charlm-converged.log" 2>&1 &
nice -n 10 env OMP_NUM_THREADS=1 MKL_NUM_THREADS=1 timeout "$left" "$py" -c "
import torch
torch.set_num_threads(1)
from looped_transformers.experiments import ICL_PROTOCOLS, run_icl_cells
protocol = ICL_PROTOCOLS['equal-compute']
for seed in range(protocol['seeds']):
    run_icl_cells(protocol, '$res/icl-equal-compute', random_state=6, seed_indices=[seed])
" > "$logs/icl-equal-compute.log" 2>&1 &
wait
