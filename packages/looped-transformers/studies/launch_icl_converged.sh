#!/usr/bin/env bash
# The converged in-context protocol (studies/icl-converged-protocol.md): one nice'd, single-threaded process
# per seed and chain, decisive configurations first in each chain (LT r=2 -> LT r=1 -> LT r=4; LT r=8 ->
# TMLT r=8); one JSON per (configuration, seed) as each finishes. Run from the repository root.
# The confirmatory run: ROOT_SEED=4 CELLS="LT:2 LT:8" OUT=packages/looped-transformers/results/icl-converged-seed4
# (one process per listed cell and seed).
set -euo pipefail
out=${OUT:-packages/looped-transformers/results/icl-converged}
root=${ROOT_SEED:-3}
py=${PYTHON:-.venv/bin/python}
run() {  # $1 = model kind, $2 = loops, $3 = seed index; an empty kind writes only the baselines
    nice -n 10 env OMP_NUM_THREADS=1 MKL_NUM_THREADS=1 "$py" -c "
import sys, torch
torch.set_num_threads(1)
from looped_transformers.experiments import ICL_PROTOCOLS, run_icl_cells
kind, r, seed = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
cells = [[kind, r]] if kind else []
run_icl_cells({**ICL_PROTOCOLS['converged'], 'cells': cells}, '$out', random_state=$root, seed_indices=[seed])
" "$@" > "$out/logs/${1:-baselines}-r$2-seed$3.log" 2>&1
}
mkdir -p "$out/logs"
run "" 0 0
for seed in 0 1 2; do
    if [ -n "${CELLS:-}" ]; then
        for cell in $CELLS; do run "${cell%%:*}" "${cell##*:}" "$seed" & done
    else
        { run LT 2 "$seed"; run LT 1 "$seed"; run LT 4 "$seed"; } &
        { run LT 8 "$seed"; run TMLT 8 "$seed"; } &
    fi
done
wait
