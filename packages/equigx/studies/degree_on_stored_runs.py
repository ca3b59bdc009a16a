"""Degree-baseline AUROC on the exact test graphs of the stored reproduce runs (results/reproduce*.json).

The stored runs (root seeds 0 and 1) drew their test graphs with ``spawn(root, 2)`` over the tasks
("shapes", "spiral"), then ``spawn(task stream, 3)`` seeds, then ``spawn(seed, 4)[1]`` for the test set (as
``experiments.fit_task`` does); the degree needs no model, only the cutoff. Writes
results/degree-on-stored-runs.json.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
from icml25_shared.random import spawn

from equigx.data import make_shapes, make_spiral
from equigx.experiments import SETTINGS, _mean_ci
from equigx.graphs import radius_graph
from equigx.metrics import explanation_auroc

HERE = Path(__file__).resolve().parents[1]


def degree_auroc(task: str, seed_rng: np.random.Generator) -> float:
    _, test_rng, _, _ = spawn(seed_rng, 4)
    make = make_shapes if task == "shapes" else make_spiral
    graphs = make(SETTINGS[task]["n_test"][True], random_state=test_rng)
    src, dst = radius_graph(graphs.pos, graphs.batch, SETTINGS[task]["model"]["r_max"], self_loops=False)
    degree = np.bincount(dst.numpy(), minlength=graphs.n_nodes).astype(float)
    return float(explanation_auroc(degree, graphs.node_mask, graphs.batch))


def main() -> None:
    out = {}
    for root in (0, 1):
        for task, task_rng in zip(("shapes", "spiral"), spawn(root, 2), strict=True):
            values = [degree_auroc(task, rng) for rng in spawn(task_rng, 3)]
            out[f"{task}-seed{root}"] = {"per_seed": values, **_mean_ci(values)}
    (HERE / "results/degree-on-stored-runs.json").write_text(json.dumps(out, indent=1) + "\n")
    print(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
