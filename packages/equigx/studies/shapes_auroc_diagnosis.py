"""Why EquiGX trails Grad-CAM on Shapes: rule choice, 1/3 split, or node aggregation?

Takes the three Shapes models of ``reproduce --quick --seed <root>`` and their 40 test graphs (no
retraining; `shapes_models.py` rebuilds them from the same streams) and scores node explanations that differ
in one factor at a time (see `shapes-auroc-diagnosis.md`). Per-graph AUROC against the motif nodes, averaged
over graphs, per seed.

Run: ``OMP_NUM_THREADS=1 python packages/equigx/studies/shapes_auroc_diagnosis.py [root_seed] [out.json]
[--unbiased-head]`` (the last: the same seeds trained with ``TFN(head_bias=False)``).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np
import torch

sys.path.insert(0, str(Path(__file__).parent))
from shapes_models import shapes_models  # noqa: E402

from equigx import EquiGX  # noqa: E402
from equigx.baselines import CoordinateGradient, GradCAM  # noqa: E402
from equigx.metrics import explanation_auroc  # noqa: E402
from equigx.train import accuracy  # noqa: E402


def _edge_to_nodes(exp, weight=0.5):
    scores = np.zeros_like(exp.node_relevance)
    edge = exp.edge_sh_by_l.sum(axis=1) + exp.edge_distance
    for row in exp.edge_index:
        np.add.at(scores, row, weight * edge)
    return scores


def arms(model, test):
    split = EquiGX(model, variant="split").explain(test)
    node = EquiGX(model, variant="node").explain(test)
    gamma = EquiGX(model, variant="split", head_rule="gamma", gamma=0.25).explain(test)
    node_gamma = EquiGX(model, variant="node", head_rule="gamma", gamma=0.25).explain(test)
    geo = _edge_to_nodes(split)
    gradcam = GradCAM(model).explain(test).node_relevance
    return {
        # reference rows
        "gradient": CoordinateGradient(model).explain(test).node_relevance,
        "gradcam": gradcam,
        "|gradcam|": np.abs(gradcam),
        "split (headline: node + half edges)": split.node_scores(),
        # rule choice
        "node variant": node.node_relevance,
        "split, head gamma 0.25": gamma.node_scores(),
        "node variant, head gamma 0.25": node_gamma.node_relevance,
        # the 1/3 split: which share carries the motif
        "split, node share only": split.node_relevance,
        "split, geometry share only": geo,
        "split, distance share only": _edge_to_nodes_part(split, "distance"),
        "split, direction share only": _edge_to_nodes_part(split, "direction"),
        # node aggregation
        "split, |node + half edges|": np.abs(split.node_scores()),
        "node variant, |node|": np.abs(node.node_relevance),
        "split, head gamma 0.25, |node + half edges|": np.abs(gamma.node_scores()),
        "node variant, summed over convolution inputs": node.node_relevance_by_layer.sum(axis=0),
        "split, summed over convolution inputs + edges": split.node_relevance_by_layer.sum(axis=0) + geo,
    }


def _edge_to_nodes_part(exp, part):
    scores = np.zeros_like(exp.node_relevance)
    edge = exp.edge_distance if part == "distance" else exp.edge_direction
    for row in exp.edge_index:
        np.add.at(scores, row, 0.5 * edge)
    return scores


def main(root: int, out: Path | None, head_bias: bool = True):
    torch.set_num_threads(1)
    result = {}
    for i, model, test, _ in shapes_models(root, head_bias=head_bias):
        scores = arms(model, test)
        result[f"seed{i}"] = {"test_accuracy": accuracy(model, test),
                              **{k: float(explanation_auroc(v, test.node_mask, test.batch)) for k, v in scores.items()}}
    names = [k for k in result["seed0"] if k != "test_accuracy"]
    print("| arm | " + " | ".join(result) + " | mean |")
    print("|---|" + "---|" * (len(result) + 1))
    print("| test accuracy | " + " | ".join(f"{r['test_accuracy']:.3f}" for r in result.values()) + " | |")
    for name in names:
        vals = [r[name] for r in result.values()]
        print(f"| {name} | " + " | ".join(f"{v:.3f}" for v in vals) + f" | {np.mean(vals):.3f} |")
    if out is not None:
        out.write_text(json.dumps(result, indent=1))


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 0, Path(sys.argv[2]) if len(sys.argv) > 2 else None,
         head_bias="--unbiased-head" not in sys.argv)
