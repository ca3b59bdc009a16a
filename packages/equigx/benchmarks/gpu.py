"""Device checks of equigx on a GPU (one short run; results to JSON).

usage: python packages/equigx/benchmarks/gpu.py [--device cuda] [--tiny] [--out results/gpu.json]

On ``--device``: training a TFN, EquiGX (node and split) and the gradient, Grad-CAM and degree baselines,
and ModuleEquiGX on e3nn's ``gate_points_2101.Network``; each explanation is compared with the same
computation on the CPU in float64 (largest difference relative to the output scale). ``--tiny`` runs in
seconds on a CPU (the test suite does that). A hard limit of 7 minutes stops the script and writes what is done.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path
from typing import Any

import numpy as np
import torch
from icml25_shared.bench import hard_limit, write_results

from equigx import TFN, EquiGX
from equigx.baselines import CoordinateGradient, DegreeBaseline, GradCAM, LRIBernoulli, PGExplainer
from equigx.data import make_decoy_shapes, make_shapes
from equigx.modules import ModuleEquiGX
from equigx.train import train


def _to(graphs: Any, device: torch.device) -> Any:
    from dataclasses import replace

    return replace(graphs, pos=graphs.pos.to(device), node_attr=graphs.node_attr.to(device),
                   batch=graphs.batch.to(device), y=None if graphs.y is None else graphs.y.to(device),
                   node_mask=None if graphs.node_mask is None else graphs.node_mask.to(device))


def main(argv: list[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser()
    parser.add_argument("--device", default="cuda")
    parser.add_argument("--tiny", action="store_true")
    parser.add_argument("--out", default=str(Path(__file__).resolve().parents[1] / "results/gpu.json"))
    parser.add_argument("--limit-s", type=int, default=420)
    args = parser.parse_args(argv)
    device = torch.device(args.device)
    out: dict[str, Any] = {"device": str(device), "torch": torch.__version__, "tiny": args.tiny, "checks": {}}
    with hard_limit(args.limit_s, out, args.out):
        _run_checks(args, device, out)
    write_results(out, args.out)
    return out


def _run_checks(args: argparse.Namespace, device: torch.device, out: dict[str, Any]) -> None:
    """Fill ``out["checks"]``, writing the results after each finished check."""
    n_train, n_test = (20, 4) if args.tiny else (400, 60)
    for name, make in (("shapes", make_shapes), ("decoy", make_decoy_shapes)):
        train_graphs = make(n_train, random_state=0, dtype=torch.float64)
        test = make(n_test, random_state=1, dtype=torch.float64)
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(0)
            cpu_model = TFN(n_out=5, mul=2 if args.tiny else 4, lmax=2, r_max=1.5).double()
        model = TFN(n_out=5, mul=2 if args.tiny else 4, lmax=2, r_max=1.5).double()
        model.load_state_dict(cpu_model.state_dict())
        model.to(device)
        start = time.perf_counter()
        train(model, _to(train_graphs, device), epochs=1 if args.tiny else 8, random_state=0)
        row: dict[str, Any] = {"train_seconds": time.perf_counter() - start}
        cpu_model.load_state_dict({k: v.cpu() for k, v in model.state_dict().items()})
        for variant in ("node", "split"):
            start = time.perf_counter()
            on_device = EquiGX(model, variant=variant).explain(_to(test, device))
            row[f"equigx_{variant}_seconds"] = time.perf_counter() - start
            on_cpu = EquiGX(cpu_model, variant=variant).explain(test)
            scale = float(np.abs(on_cpu.output).max())
            row[f"equigx_{variant}_max_rel_diff_vs_cpu"] = float(
                np.abs(on_device.node_relevance - on_cpu.node_relevance).max() / scale)
        for baseline in (CoordinateGradient, GradCAM, DegreeBaseline):
            a = baseline(model).explain(_to(test, device)).node_relevance
            b = baseline(cpu_model).explain(test).node_relevance
            row[f"{baseline.name}_max_abs_diff_vs_cpu"] = float(np.abs(a - b).max())
        for learned in (PGExplainer, LRIBernoulli):  # their random draws and networks follow the model's device
            start = time.perf_counter()
            scores = learned(model, epochs=2 if args.tiny else 10, random_state=0).explain(_to(test, device))
            row[f"{learned.name}_seconds"] = time.perf_counter() - start
            row[f"{learned.name}_finite"] = bool(np.isfinite(scores.node_relevance).all())
        out["checks"][name] = row
        write_results(out, args.out)
    from e3nn.nn.models.gate_points_2101 import Network

    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(0)
        net = Network(irreps_in="2x0e", irreps_hidden="4x0e+4x0o+2x1e+2x1o", irreps_out="1x0e", irreps_node_attr=None,
                      irreps_edge_attr="0e+1o+2e", layers=2, max_radius=1.6, number_of_basis=5, radial_layers=1,
                      radial_neurons=8, num_neighbors=4.0, num_nodes=8.0).double()
    g = make_shapes(1, n_distractors=(3, 5), random_state=2, dtype=torch.float64)
    x = torch.eye(2, dtype=torch.float64)[torch.arange(g.n_nodes) % 2]
    cpu = ModuleEquiGX(net, eps=1e-14).explain(lambda h: net({"pos": g.pos, "x": h}), x, "2x0e")
    net.to(device)
    pos = g.pos.to(device)
    dev = ModuleEquiGX(net, eps=1e-14).explain(lambda h: net({"pos": pos, "x": h}), x.to(device), "2x0e")
    out["checks"]["module_equigx_gate_points"] = {
        "max_rel_diff_vs_cpu": float(np.abs(dev.node_relevance - cpu.node_relevance).max() / abs(cpu.output).max()),
        "relative_leak": float(abs(dev.leak).max() / abs(dev.output).max())}


if __name__ == "__main__":
    main()
