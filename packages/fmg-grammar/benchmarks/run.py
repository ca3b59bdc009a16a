"""Benchmark: induction on the 54 DEG molecules, sampling, and indexed versus GraphMatcher-scan rule lookup.

Writes JSON and prints a markdown table (sizes, versions, machine) and the checks: the index lookup draws
exactly what the scan draws and is at least 5x faster at 1,000 samples; induction and 1,000 samples each
take under 60 s. Exits 1 when a check fails.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import time
from importlib.metadata import version
from pathlib import Path

from fmg import FMG, HeuristicChemJudge, load_dataset


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--out", type=Path, default=Path("out/fmg/benchmark.json"))
    parser.add_argument("--n", type=int, default=1000)
    parser.add_argument("--min-speedup", type=float, default=5.0)
    args = parser.parse_args()
    sets = ("isocyanates", "acrylates", "chain_extenders")
    start = time.perf_counter()
    models = {name: FMG(HeuristicChemJudge()).fit(load_dataset(name)) for name in sets}
    induction = time.perf_counter() - start
    rows = [{"step": "induction, heuristic judge", "set": "all three (54 molecules)", "n": 54,
             "seconds": round(induction, 2)}]
    for name in sets:
        t0 = time.perf_counter()
        # the scan checks the context-free lookup, so both sides sample without context or budget
        fast = models[name].sample(args.n, random_state=0, context=None, budget=None)
        t1 = time.perf_counter()
        slow = models[name].sample(args.n, random_state=0, scan=True, context=None, budget=None)
        t2 = time.perf_counter()
        rows.append({"step": "sample, index lookup", "set": name, "n": args.n, "seconds": round(t1 - t0, 2),
                     "rules": models[name].grammar_.n_rules})
        rows.append({"step": "sample, GraphMatcher scan", "set": name, "n": args.n, "seconds": round(t2 - t1, 2),
                     "same draws": fast == slow, "speed-up": round((t2 - t1) / (t1 - t0), 1)})
    t0 = time.perf_counter()
    step = models["isocyanates"].sample(args.n, random_state=0, rejection="step")
    rows.append({"step": "sample, index lookup, rejection='step'", "set": "isocyanates", "n": args.n,
                 "seconds": round(time.perf_counter() - t0, 2), "rules": models["isocyanates"].grammar_.n_rules,
                 "rejected": step.n_rejected})
    sampled = [r for r in rows if r["step"] == "sample, index lookup"]
    scanned = [r for r in rows if r["step"] == "sample, GraphMatcher scan"]
    checks = {"same draws, index and scan": all(r["same draws"] for r in scanned),
              f"index >= {args.min_speedup}x faster than scan": all(r["speed-up"] >= args.min_speedup for r in scanned),
              "induction < 60 s": induction < 60,
              f"{args.n} samples < 60 s (every set)": all(r["seconds"] < 60 for r in sampled)}
    meta = {"rdkit": version("rdkit"), "networkx": version("networkx"), "python": platform.python_version(),
            "cpus": os.cpu_count(), "machine": platform.machine()}
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps({"rows": rows, "checks": checks, "meta": meta}, indent=2))
    keys = ["step", "set", "n", "seconds", "rules", "same draws", "speed-up", "rejected"]
    print("| " + " | ".join(keys) + " |\n|" + "---|" * len(keys))
    for r in rows:
        print("| " + " | ".join(str(r.get(k, "")) for k in keys) + " |")
    print(meta)
    for name, ok in checks.items():
        print(f"{'PASS' if ok else 'FAIL'}: {name}")
    if not all(checks.values()):
        raise SystemExit(1)


if __name__ == "__main__":
    main()
