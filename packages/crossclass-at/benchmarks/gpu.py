"""Device checks of crossclass-at on a GPU (one short run; results to JSON).

usage: python packages/crossclass-at/benchmarks/gpu.py [--device cuda] [--tiny] [--out results/gpu.json]

What runs on ``--device``: the full trainer with a CASMonitor callback (every random draw must be on the
model's device; a CPU generator failed here at the end of epoch 1), robust accuracy and the class
attribution with a device generator, TRADES, and PGD-10 timing on PreActResNet-18 (CIFAR shape). ``--tiny``
shrinks every size so that the script runs in seconds on a CPU (the test suite does that). A hard limit of
7 minutes stops the script (SIGALRM) and what is done so far is written.
"""

from __future__ import annotations

import argparse
import json
import signal
import time
from pathlib import Path
from typing import Any

import torch

from crossclass_at import PGD, AdversarialTrainer, CASMonitor, DigitsCNN, PreActResNet18, class_attribution
from crossclass_at.attacks import generator_on, robust_accuracy
from crossclass_at.data import load_digits_split


def main(argv: list[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser()
    parser.add_argument("--device", default="cuda")
    parser.add_argument("--tiny", action="store_true")
    parser.add_argument("--out", default=str(Path(__file__).resolve().parents[1] / "results/gpu.json"))
    parser.add_argument("--limit-s", type=int, default=420)
    args = parser.parse_args(argv)
    device = torch.device(args.device)
    out: dict[str, Any] = {"device": str(device), "torch": torch.__version__, "tiny": args.tiny, "checks": {}}
    if device.type == "cuda":
        out["gpu"] = torch.cuda.get_device_name(device)

    def write() -> None:
        Path(args.out).parent.mkdir(parents=True, exist_ok=True)
        Path(args.out).write_text(json.dumps(out, indent=1) + "\n")

    def stop(*_: Any) -> None:
        out["stopped_by_limit_s"] = args.limit_s
        write()
        raise SystemExit(3)

    signal.signal(signal.SIGALRM, stop)
    signal.alarm(args.limit_s)
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
    signal.alarm(0)
    write()
    return out


if __name__ == "__main__":
    main()
