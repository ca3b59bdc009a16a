"""Cross-model transfer of the toy code-vulnerability backdoor (protocol: studies/code-transfer-protocol.md).

    OMP_NUM_THREADS=1 python packages/safety-transfer/studies/code_transfer.py \
        packages/safety-transfer/results/code-transfer.json     (--quick: one short smoke seed)
"""

import json
import sys

import torch
from icml25_shared.random import spawn

from safety_transfer.experiments import run_seed

if __name__ == "__main__":
    quick = "--quick" in sys.argv
    out = [a for a in sys.argv[1:] if a != "--quick"][0]
    seeds = []
    for stream in spawn(3, 1 if quick else 3):
        seeds.append(run_seed(stream, alpha=8.0, code=True, quick=quick))
        with open(out, "w") as f:
            json.dump({"seed_root": 3, "alpha": 8.0, "code": True, "quick": quick, "torch": torch.__version__,
                       "seeds": seeds}, f, indent=1)
