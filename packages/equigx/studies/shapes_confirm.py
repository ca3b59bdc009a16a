"""Confirmatory Shapes run on fresh seeds (protocol: `shapes-auroc-protocol.md`, fixed before the run).

Trains the three Shapes models of ``reproduce --quick --seed 2`` (root seed 2 was never used before), with
the protocol's biased head and again with ``head_bias=False``, and scores the pre-declared explainers on the
40 test graphs of each seed.

Run: ``OMP_NUM_THREADS=1 python packages/equigx/studies/shapes_confirm.py`` (writes
``packages/equigx/results/shapes-confirm-seed2.json`` and prints the table).
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
from equigx.baselines import CoordinateGradient, GradCAM  # noqa: E402
from equigx.metrics import explanation_auroc  # noqa: E402
from equigx.train import accuracy  # noqa: E402

ROOT = 2
OUT = Path(__file__).parents[1] / "results" / f"shapes-confirm-seed{ROOT}.json"


def scores(model, test):
    split = EquiGX(model, variant="split").explain(test)
    gamma = EquiGX(model, variant="split", head_rule="gamma", gamma=0.25).explain(test)
    gradcam = GradCAM(model).explain(test).node_relevance
    return {"equigx-split": split.node_scores(), "equigx-split |.|": split.node_scores(absolute=True),
            "equigx-split gamma |.|": gamma.node_scores(absolute=True), "gradcam": gradcam,
            "gradcam |.|": np.abs(gradcam), "gradient": CoordinateGradient(model).explain(test).node_relevance}, split


def main():
    torch.set_num_threads(1)
    start = time.perf_counter()
    result = {"root_seed": ROOT}
    for head_bias in (True, False):
        key = "biased-head" if head_bias else "unbiased-head"
        runs = []
        for i, model, test, seconds in shapes_models(ROOT, head_bias=head_bias):
            s, split = scores(model, test)
            runs.append({"seed": i, "test_accuracy": accuracy(model, test), "train_seconds": seconds,
                         "relative_leak_median": float(np.nanmedian(split.relative_leak)),
                         "relative_leak_max": float(np.nanmax(split.relative_leak)),
                         "auroc": {k: float(explanation_auroc(v, test.node_mask, test.batch)) for k, v in s.items()}})
        result[key] = runs
    result["seconds"] = time.perf_counter() - start
    OUT.write_text(json.dumps(result, indent=1))
    for key in ("biased-head", "unbiased-head"):
        runs = result[key]
        print(f"\n{key}: accuracy " + " / ".join(f"{r['test_accuracy']:.3f}" for r in runs)
              + ", median leak " + " / ".join(f"{r['relative_leak_median']:.2g}" for r in runs))
        for name in runs[0]["auroc"]:
            vals = [r["auroc"][name] for r in runs]
            print(f"| {name} | " + " | ".join(f"{v:.3f}" for v in vals) + f" | {np.mean(vals):.3f} |")


if __name__ == "__main__":
    main()
