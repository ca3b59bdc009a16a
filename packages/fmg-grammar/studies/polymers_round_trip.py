"""Round trip of all 117 polymers_117 molecules with the heuristic judge (results/polymers_round_trip.json).

Run: python packages/fmg-grammar/studies/polymers_round_trip.py
"""

import json
import time
from pathlib import Path

from fmg import FMG, HeuristicChemJudge, load_dataset


def main():
    start = time.perf_counter()
    model = FMG(HeuristicChemJudge()).fit(load_dataset("polymers_117"))
    fit_s = time.perf_counter() - start
    exact = sum(model.replay(model.derive(s)) == s for s in model.train_smiles_)
    out = {"molecules": len(model.train_smiles_), "exact round trips": exact, "rules": model.grammar_.n_rules,
           "repaired bag memberships": sum(d.n_repaired for d in model.decompositions_), "fit seconds": round(fit_s, 1)}
    path = Path(__file__).resolve().parents[1] / "results" / "polymers_round_trip.json"
    path.write_text(json.dumps(out, indent=2))
    print(out)


if __name__ == "__main__":
    main()
