#!/usr/bin/env bash
# Confirmatory equal-compute in-context run (amendment 2 of studies/charlm-equal-compute-protocol.md): the
# equal-compute protocol unchanged, root seed 8, three seeds; seeds 0-1 in one nice'd single-threaded process
# and seed 2 in another, stopped by the clock at STOP (default 23:52 UTC). Run from the repository root.
set -euo pipefail
res=packages/looped-transformers/results/icl-equal-compute-seed8
py=${PYTHON:-.venv/bin/python}
left=$(( $(date -u -d "${STOP:-23:52}" +%s) - $(date -u +%s) ))
logs=${LOGS:-/tmp/looped-transformers-logs}
mkdir -p "$logs"
for seeds in "0, 1" "2"; do
    nohup nice -n 5 env OMP_NUM_THREADS=1 MKL_NUM_THREADS=1 timeout "$left" "$py" -c "
import torch
torch.set_num_threads(1)
from looped_transformers.experiments import ICL_PROTOCOLS, run_icl_cells
protocol = {**ICL_PROTOCOLS['equal-compute'], 'seeds': 3}
for seed in [$seeds]:
    run_icl_cells(protocol, '$res', random_state=8, seed_indices=[seed])
" > "$logs/icl-equal-compute-seed8-${seeds%%,*}.log" 2>&1 &
done
wait
