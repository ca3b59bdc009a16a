"""Diagnosis of the tied growth exponents (../regret-growth.md): is η = 15 with predicted contexts a regime where
optimism can matter at all?

One diagnosis seed (20, already used by the first run, so not a test): POMWU and cHedge with true and with
predicted contexts at η ∈ {15, 60, 240}, T = 10,000, summed contextual regret at T ∈ {1,000; 3,000; 10,000}.
Writes ``diagnosis/eta<eta>_<contexts>_<learner>.json`` per run, then ``diagnosis/summary.md``.
"""

from __future__ import annotations

import json
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
OUT = HERE / "diagnosis"
SEED = 20
ETAS = (15.0, 60.0, 240.0)
CHECKPOINTS = (1_000, 3_000, 10_000)


def main() -> None:
    from pomwu.experiments import run_learner, sioux_falls_setup

    OUT.mkdir(exist_ok=True)
    setup = sioux_falls_setup(T=CHECKPOINTS[-1], random_state=SEED)
    lines = ["| η | contexts | learner | " + " | ".join(f"T = {t:,}" for t in CHECKPOINTS) + " | slope |",
             "|---|---|---|" + "---|" * len(CHECKPOINTS) + "---|"]
    for eta in ETAS:
        for source in ("true", "predicted"):
            for name in ("POMWU", "cHedge"):
                path = OUT / f"eta{eta:g}_{source}_{name}.json"
                if not path.exists():
                    start = time.process_time()
                    res = run_learner(setup, name, source, eta=eta, feedback="expected",
                                      regret_checkpoints=CHECKPOINTS)
                    path.write_text(json.dumps({
                        "seed": SEED, "eta": eta, "contexts": source, "learner": name,
                        "checkpoints": list(CHECKPOINTS),
                        "summed_contextual_regret": res.summed_contextual_regret.tolist(),
                        "cpu_s": time.process_time() - start}, indent=1))
                row = json.loads(path.read_text())
                r = np.asarray(row["summed_contextual_regret"])
                b = float(np.polyfit(np.log(CHECKPOINTS), np.log(r), 1)[0]) if np.all(r > 0) else float("nan")
                lines.append(f"| {eta:g} | {source} | {name} | " + " | ".join(f"{v:.1f}" for v in r) + f" | {b:.3f} |")
                print(lines[-1], flush=True)
    (OUT / "summary.md").write_text("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
