"""Third seed of the fixed-strength (alpha 8) transfer run, so that the transfer row rests on 3 seeds.

`reproduce --seed 1 --n-seeds 2 --alpha 8` ran seeds 0 and 1 of `SeedSequence(1).spawn(n)`; this runs seed 2
of the same spawn with the same code (`experiments.run_seed`). Protocol: studies/switch-gate-protocol.md.

    OMP_NUM_THREADS=1 python packages/safety-transfer/studies/transfer_alpha8_third_seed.py \
        packages/safety-transfer/results/reproduce-diagnosis-alpha8-seed3.json
"""

import json
import sys

import torch
from icml25_shared.random import spawn

from safety_transfer.experiments import run_seed

if __name__ == "__main__":
    stream = spawn(1, 3)[2]
    result = run_seed(stream, alpha=8.0)
    with open(sys.argv[1], "w") as f:
        json.dump({"seed_root": 1, "seed_index": 2, "alpha": 8.0, "torch": torch.__version__, "seeds": [result]},
                  f, indent=1)
