"""Peak memory and time of ``fmg.metrics.diversity`` at n = 20,000 molecules (target: under 1 GB).

Usage: python diversity_memory.py [--n 20000]. The molecules are 500 samples of the isocyanate grammar repeated
to n (the cost does not depend on repeats). Writes ../results/diversity_memory.json. The dense n x n float64
similarity matrix of the earlier implementation would take n^2 * 8 bytes (3.2 GB at n = 20,000).
"""

from __future__ import annotations

import argparse
import json
import resource
import time
from pathlib import Path

from fmg import FMG, HeuristicChemJudge, load_dataset
from fmg.metrics import diversity


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--n", type=int, default=20_000)
    parser.add_argument("--out", default=str(Path(__file__).resolve().parent.parent / "results" / "diversity_memory.json"))
    args = parser.parse_args()
    model = FMG(HeuristicChemJudge()).fit(load_dataset("isocyanates"))
    base = model.sample(500, random_state=0).smiles
    smiles = (base * (args.n // len(base) + 1))[: args.n]
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    start = time.perf_counter()
    value = diversity(smiles)
    seconds = time.perf_counter() - start
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    row = {"n": args.n, "diversity": value, "seconds": round(seconds, 1), "peak_rss_mb": round(peak, 1),
           "rss_before_mb": round(before, 1), "dense_matrix_mb": round(args.n**2 * 8 / 2**20, 1),
           "under_1_gb": peak < 1024}
    Path(args.out).write_text(json.dumps(row, indent=1))
    print(row)
    if not row["under_1_gb"]:
        raise SystemExit(1)


if __name__ == "__main__":
    main()
