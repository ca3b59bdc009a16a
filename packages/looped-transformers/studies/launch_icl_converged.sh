#!/usr/bin/env bash
# The converged in-context protocol (studies/icl-converged-protocol.md): one nice'd, single-threaded process
# per configuration, decisive configurations first; one JSON per (configuration, seed) as each finishes.
# Run from the repository root.
set -euo pipefail
out=packages/looped-transformers/results/icl-converged
py=${PYTHON:-.venv/bin/python}
run() {  # $1 = model kind, $2 = loops; an empty kind writes only the baselines
    nice -n 10 env OMP_NUM_THREADS=1 MKL_NUM_THREADS=1 "$py" -c "
import sys, torch
torch.set_num_threads(1)
from looped_transformers.experiments import ICL_PROTOCOLS, run_icl_cells
kind, r = sys.argv[1], int(sys.argv[2])
cells = [[kind, r]] if kind else []
run_icl_cells({**ICL_PROTOCOLS['converged'], 'cells': cells}, '$out', random_state=3)
" "$@"
}
mkdir -p "$out/logs"
run "" 0
run LT 2 > "$out/logs/LT-r2.log" 2>&1 && { run LT 1 > "$out/logs/LT-r1.log" 2>&1; run LT 4 > "$out/logs/LT-r4.log" 2>&1; } &
run LT 8 > "$out/logs/LT-r8.log" 2>&1 &
run TMLT 8 > "$out/logs/TMLT-r8.log" 2>&1 &
wait
