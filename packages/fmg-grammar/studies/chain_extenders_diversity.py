"""Diagnosis and fresh-seed confirmation: FMG's Div on chain_extenders is below the training set's 0.906.

Run: python packages/fmg-grammar/studies/chain_extenders_diversity.py (writes results/chain_extenders_diversity.json)
"""

import json
from pathlib import Path

import numpy as np
from rdkit import Chem

from fmg import FMG, HeuristicChemJudge, diversity, evaluate, load_dataset


def profile(smiles):
    mols = [Chem.MolFromSmiles(s) for s in smiles]
    return {"mean heavy atoms": float(np.mean([m.GetNumHeavyAtoms() for m in mols])),
            "share with a ring": float(np.mean([m.GetRingInfo().NumRings() > 0 for m in mols])),
            "share acyclic with <= 6 heavy atoms": float(np.mean([m.GetRingInfo().NumRings() == 0
                                                                  and m.GetNumHeavyAtoms() <= 6 for m in mols]))}



def main():
    train = load_dataset("chain_extenders")
    model = FMG(HeuristicChemJudge()).fit(train)
    out = {"train": {"div": diversity(train), **profile(train)}, "fresh seeds": {}}
    for seed in (5000, 6000, 7000):
        samples = model.sample(500, random_state=seed, unique=True).smiles
        m = evaluate(samples, train, "chain_extenders")
        out["fresh seeds"][seed] = {"div": m.diversity, "membership": m.membership, **profile(samples)}
    path = Path(__file__).resolve().parents[1] / "results" / "chain_extenders_diversity.json"
    path.write_text(json.dumps(out, indent=2))
    print(json.dumps(out, indent=2))


if __name__ == "__main__":
    main()
