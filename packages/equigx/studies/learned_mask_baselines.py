"""PGExplainer and LRI-Bernoulli on the Shapes models of ``reproduce --quick --seed 0`` (added after that run).

Per-graph AUROC against the motif nodes on the 40 test graphs of each of the three seed-0 models, beside
EquiGX-split and Grad-CAM on the same graphs, with wall time.

Run: ``OMP_NUM_THREADS=1 python packages/equigx/studies/learned_mask_baselines.py`` (writes
``packages/equigx/results/learned-mask-baselines-seed0.json``).
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

import numpy as np
import torch

sys.path.insert(0, str(Path(__file__).parent))
from shapes_models import shapes_models  # noqa: E402

from equigx import EquiGX  # noqa: E402
from equigx.baselines import GradCAM, LRIBernoulli, PGExplainer  # noqa: E402
from equigx.metrics import explanation_auroc, fidelity  # noqa: E402

OUT = Path(__file__).parents[1] / "results" / "learned-mask-baselines-seed0.json"


def main():
    torch.set_num_threads(1)
    result = {}
    for i, model, test, _ in shapes_models(0):
        rng = np.random.default_rng(i)
        explainers = {"equigx-split": EquiGX(model, variant="split").explain,
                      "gradcam": GradCAM(model).explain,
                      "pgexplainer": PGExplainer(model, random_state=rng).explain,
                      "lri_bernoulli": LRIBernoulli(model, random_state=rng).explain}
        row = {}
        for name, explain in explainers.items():
            start = time.perf_counter()
            att = explain(test)
            seconds = time.perf_counter() - start
            scores = att.node_scores() if name.startswith("equigx") else att.node_relevance
            att.node_relevance = scores
            row[name] = {"auroc": float(explanation_auroc(scores, test.node_mask, test.batch)),
                         "fid_plus": fidelity(model, test, att, fraction=0.1).fid_plus, "seconds": seconds}
        result[f"seed{i}"] = row
        print(i, {k: round(v["auroc"], 3) for k, v in row.items()}, flush=True)
    names = list(result["seed0"])
    result["mean"] = {n: {m: float(np.mean([result[s][n][m] for s in ("seed0", "seed1", "seed2")]))
                          for m in ("auroc", "fid_plus", "seconds")} for n in names}
    print(result["mean"])
    OUT.write_text(json.dumps(result, indent=1))


if __name__ == "__main__":
    main()
