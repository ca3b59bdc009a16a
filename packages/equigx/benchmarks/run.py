"""Time EquiGX against the coordinate-gradient baseline and GNNExplainer (100 epochs) in one process.

200 Shapes graphs, the Shapes TFN of ``equigx.experiments.SETTINGS`` (untrained: the cost does not depend
on the weights). Writes JSON and prints a markdown table (sizes, versions, machine).
"""

from __future__ import annotations

import argparse
from pathlib import Path

import torch
from icml25_shared.bench import BenchmarkReport, compare

from equigx import TFN, EquiGX
from equigx.baselines import CoordinateGradient, GNNExplainer
from equigx.data import make_shapes
from equigx.experiments import SETTINGS


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--out", type=Path, default=Path("out/equigx/benchmark.json"))
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--graphs", type=int, default=200)
    args = parser.parse_args()
    torch.manual_seed(0)
    graphs = make_shapes(args.graphs, random_state=0)
    model = TFN(**SETTINGS["shapes"]["model"]).eval()
    sizes = {"graphs": graphs.n_graphs, "nodes": graphs.n_nodes, "mul": 4, "lmax": 2}
    report = BenchmarkReport("equigx", packages=["equigx", "e3nn", "torch", "torch_geometric", "captum"])
    for variant in ("node", "split"):
        explainer = EquiGX(model, variant=variant)
        report.add(compare(lambda e=explainer: e.explain(graphs), lambda: CoordinateGradient(model).explain(graphs),
                           label=f"equigx-{variant} vs gradient", ours_name=f"equigx-{variant}", peer_name="gradient",
                           repeats=args.repeats, sizes=sizes))
    report.add(compare(lambda: EquiGX(model, variant="split").explain(graphs),
                       lambda: GNNExplainer(model, epochs=100).explain(graphs), label="equigx-split vs gnnexplainer",
                       ours_name="equigx-split", peer_name="gnnexplainer (100 epochs)", warmup=0, repeats=1,
                       sizes=sizes))
    report.write_json(args.out)
    print(report.to_markdown())


if __name__ == "__main__":
    main()
