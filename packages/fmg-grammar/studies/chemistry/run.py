"""Chemistry of samples vs training (protocol: ../chemistry.md). Usage: python run.py [--summarise]."""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
ROWS = HERE / "rows"
RESULTS = HERE.parent.parent / "results"
SETS = ("isocyanates", "acrylates", "chain_extenders")
SAMPLERS = {"FMG (context 0, budget)": {}, "FMG (context 1, budget)": {"context": 1},
            "FMG, context-free lookup": {"context": None, "budget": None}, "STONED": None}
N = 300


def run() -> None:
    from rdkit import Chem

    from fmg import FMG, HeuristicChemJudge, evaluate, load_dataset
    from fmg.experiments import stoned
    from fmg.metrics import compare_to_training

    ROWS.mkdir(exist_ok=True)
    for name in SETS:
        train = load_dataset(name)
        model = None
        for label, options in SAMPLERS.items():
            path = ROWS / f"{name}_{label.replace(' ', '_').replace(',', '').replace('(', '').replace(')', '')}.json"
            if path.exists():
                continue
            start = time.process_time()
            if options is None:
                samples = stoned(train, N, random_state=0)
            else:
                model = model or FMG(HeuristicChemJudge()).fit(train)
                samples = model.sample(N, random_state=0, **options).smiles
            report = compare_to_training(samples, train).as_dict()
            deg = evaluate(samples, train, name).as_dict()
            sd = float(np.std([Chem.MolFromSmiles(s).GetNumHeavyAtoms() for s in train]))
            row = {"set": name, "sampler": label, "n": N, "seed": 0, **report, "train_atoms_sd": sd,
                   "diversity": deg["diversity"], "membership": deg["membership"], "unique": deg["unique"],
                   "cpu_s": time.process_time() - start}
            path.write_text(json.dumps(row, indent=1))
            print(name, label, f"peroxide {report['alerts']['peroxide']:.3f}", flush=True)


def passes(r: dict) -> bool:
    return bool(r["alerts"]["peroxide"] <= r["train_alerts"]["peroxide"] + 0.005 and r["large_ring_share"] == 0
                and r["ring_size_tv"] <= 0.15 and abs(r["rings_per_molecule"] - r["train_rings_per_molecule"]) <= 0.5
                and r["atoms_max"] <= r["train_atoms_max"] and r["atoms_w1"] <= 0.5 * r["train_atoms_sd"])


def summarise() -> None:
    rows = [json.loads(p.read_text()) for p in sorted(ROWS.glob("*.json"))]
    order = {s: i for i, s in enumerate(SETS)}
    labels = list(SAMPLERS)
    rows.sort(key=lambda r: (order[r["set"]], labels.index(r["sampler"])))
    for r in rows:
        r["passes"] = passes(r)
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "chemistry.json").write_text(json.dumps({"protocol": "studies/chemistry.md", "rows": rows}, indent=1))
    head = ("| set | sampler | O-O | acyl halide | Brenk (train) | PAINS (train) | rings > train max | ring-size TV | rings/mol "
            "(train) | heavy atoms mean / max (train) | atoms W1 / train sd | Frag | Scaf | KL score | Div | Memb | "
            "passes |")
    lines = [head, "|" + "---|" * (head.count("|") - 1)]
    for r in rows:
        a, t = r["alerts"], r["train_alerts"]
        lines.append(
            f"| {r['set']} | {r['sampler']} | {a['peroxide']:.3f} | {a['acyl halide']:.3f} | {a['Brenk']:.2f} "
            f"({t['Brenk']:.2f}) | {a['PAINS']:.3f} ({t['PAINS']:.2f}) | {r['large_ring_share']:.3f} (max {r['max_ring_size']}) | "
            f"{r['ring_size_tv']:.3f} | {r['rings_per_molecule']:.2f} ({r['train_rings_per_molecule']:.2f}) | "
            f"{r['atoms_mean']:.1f} / {r['atoms_max']} ({r['train_atoms_mean']:.1f} / {r['train_atoms_max']}) | "
            f"{r['atoms_w1'] / r['train_atoms_sd']:.2f} | {r['fragment_similarity']:.2f} | "
            f"{r['scaffold_similarity']:.2f} | {r['kl_score']:.3f} | {r['diversity']:.3f} | {r['membership']:.3f} | "
            f"{'yes' if r['passes'] else 'no'} |")
    (RESULTS / "chemistry.md").write_text("\n".join(lines) + "\n")


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--summarise", action="store_true")
    if not parser.parse_args().summarise:
        run()
    summarise()
