"""Chamfer distance to the training set: FMG (heuristic judge, distinct samples) and STONED, three DEG sets.

Descriptive measurement of the new metric (no claim is tested): 500 samples, seeds 0, 1000, 2000 as in
``python -m fmg reproduce``; writes ``results/chamfer.json``.
"""

from __future__ import annotations

import json
from importlib.metadata import version
from pathlib import Path

import numpy as np

from fmg import FMG, HeuristicChemJudge, chamfer_distance, load_dataset
from fmg.experiments import SETS, stoned

OUT = Path(__file__).resolve().parents[1] / "results" / "chamfer.json"


def main() -> None:
    rows = []
    for name in SETS:
        train = load_dataset(name)
        model = FMG(HeuristicChemJudge()).fit(train)
        for method in ("FMG", "STONED"):
            values = []
            for seed in (0, 1000, 2000):
                samples = (model.sample(500, random_state=seed, unique=True).smiles if method == "FMG"
                           else stoned(train, 500, random_state=seed))
                values.append(chamfer_distance(samples, model.train_smiles_))
            rows.append({"set": name, "method": method, "chamfer": values, "mean": float(np.mean(values))})
            print(json.dumps(rows[-1]), flush=True)
    OUT.write_text(json.dumps({"n_samples": 500, "seeds": [0, 1000, 2000], "rdkit": version("rdkit"),
                               "selfies": version("selfies"), "rows": rows}, indent=1))


if __name__ == "__main__":
    main()
