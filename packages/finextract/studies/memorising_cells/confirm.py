"""Confirmatory run of the memorising-cells study with a fine-tuning regime that memorises more (protocol:
../memorising_cells.md, "Confirmatory run"). Same pretrained model, pool, blocks, stream labels, methods and
tests as ``run.py``; only the regime differs: ``memorise`` = 300 steps at 5x the strong learning rates.

Roles, so that the calibration's two modes and the test seeds' fine-tuning run side by side:
``--role cal-full`` / ``--role cal-lora`` calibrate one mode on block 20 (``calibration-<mode>.json``);
``--role test --blocks ...`` fine-tunes each block (cached), waits for both calibration files, applies the
memorisation check and, if it passes, runs the tested pair (``seed-XX.json``).
"""

from __future__ import annotations

import argparse
import json
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np
import torch
from run import (
    CALIBRATION_BLOCK,
    CFG_GRID,
    INSTANCE_DIGIT,
    MODES,
    N_TRAIN,
    POOL,
    STREAM_OFFSET,
    THRESHOLD,
    W_CURVE,
    cfgname,
    fx,
)

from finextract.experiments import Config, _scored, no_extraction_reference, run_setting, seed_streams
from finextract.training import finetune, instance_data, pretrain

REGIME = {"full_steps": 300, "full_lr": 1e-3, "lora_steps": 300, "lora_lr": 1e-2}
NAME = "memorise"
RESULTS = Path(__file__).resolve().parents[2] / "results" / "memorising-cells-confirm"


def config() -> Config:
    return replace(Config(), **REGIME)


def cell(pre: Any, mode: str, block: int, methods: dict[str, tuple[Any, ...]], cache: Path) -> dict[str, Any]:
    data = instance_data(N_TRAIN, random_state=block, pool_size=POOL)
    res = run_setting(
        pre, data, mode, config(), STREAM_OFFSET + block, cache=cache, methods=methods, thresholds=(THRESHOLD, 0.9)
    )
    return {
        "finetune_indices": data.finetune_indices.tolist(),
        "methods": {
            n: {"AS": _scored(r).similarity, "best_similarity": _scored(r).best_similarity.tolist()}
            for n, r in res.items()
        },
    }


def check(out: Path) -> dict[str, Any] | None:
    """The memorisation check and the chosen settings, once both calibration files exist."""
    files = [out / f"calibration-{m}.json" for m in MODES]
    if not all(f.is_file() for f in files):
        return None
    runs = {m: json.loads(f.read_text()) for m, f in zip(MODES, files, strict=True)}
    ref = no_extraction_reference(N_TRAIN, digits=(INSTANCE_DIGIT,), thresholds=(THRESHOLD, 0.9))
    bar = ref["AS_per_set_quantiles"]["0.95"]
    scale = {m: max(CFG_GRID, key=lambda s, m=m: (runs[m]["methods"][cfgname(s)]["AS"], -s)) for m in MODES}
    w = {m: max(W_CURVE, key=lambda v, m=m: (runs[m]["methods"][fx(v)]["AS"], -v)) for m in MODES}
    cfg_as = float(np.mean([runs[m]["methods"][cfgname(scale[m])]["AS"] for m in MODES]))
    return {
        "block": CALIBRATION_BLOCK,
        "pool": POOL,
        "regime": {NAME: REGIME},
        "cfg_scale": scale,
        "w": w,
        "memorisation_check": {NAME: {"cfg_AS": cfg_as, "bar": bar, "passes": cfg_as > bar}},
        "passing_regimes": [NAME] if cfg_as > bar else [],
        "runs": {f"{NAME} {m}": runs[m] for m in MODES},
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--role", choices=["cal-full", "cal-lora", "test"], required=True)
    parser.add_argument("--blocks", type=str, default="")
    parser.add_argument("--out", type=Path, default=RESULTS)
    parser.add_argument("--checkpoints", type=Path, default=Path("out/finextract-memorising/checkpoints"))
    args = parser.parse_args()
    torch.set_num_threads(1)
    args.out.mkdir(parents=True, exist_ok=True)
    data0 = instance_data(N_TRAIN, random_state=0, pool_size=POOL)
    pre = pretrain(
        data0,
        steps=Config().pretrain_steps,
        batch_size=64,
        random_state=seed_streams(STREAM_OFFSET)["pretrain"],
        cache=args.checkpoints / f"pretrained-1500-instance{INSTANCE_DIGIT}-pool{POOL}",
    )
    if args.role.startswith("cal-"):
        mode = args.role.split("-")[1]
        grid = {fx(v): ("mg", v, 0.0) for v in W_CURVE} | {cfgname(s): ("cfg", s) for s in CFG_GRID}
        t0 = time.time()
        rec = cell(pre, mode, CALIBRATION_BLOCK, grid, args.checkpoints / f"{NAME}-{mode}-block{CALIBRATION_BLOCK}")
        (args.out / f"calibration-{mode}.json").write_text(json.dumps({**rec, "seconds": time.time() - t0}, indent=1))
        print(f"calibrated {mode} in {time.time() - t0:.0f} s", flush=True)
        return
    cfg = config()
    for block in [int(b) for b in args.blocks.split(",")]:
        path = args.out / f"seed-{block:02d}.json"
        if path.is_file():
            continue
        t0 = time.time()
        data = instance_data(N_TRAIN, random_state=block, pool_size=POOL)
        for mode in MODES:  # fine-tune now (cached): it does not depend on the calibration
            lora = mode == "lora"
            finetune(
                pre,
                data.finetune_images,
                steps=cfg.lora_steps if lora else cfg.full_steps,
                lr=cfg.lora_lr if lora else cfg.full_lr,
                lora_rank=cfg.lora_rank if lora else None,
                random_state=seed_streams(STREAM_OFFSET + block)["finetune"],
                cache=args.checkpoints / f"{NAME}-{mode}-block{block}",
            )
        while (cal := check(args.out)) is None:
            time.sleep(10)
        cal["pretrain_images"] = int(data0.pretrain_images.shape[0])
        if not (args.out / "calibration.json").is_file():
            (args.out / "calibration.json").write_text(json.dumps(cal, indent=1))
        if not cal["passing_regimes"]:
            print("the memorisation check fails; nothing to test", flush=True)
            return
        cells = {}
        for mode in MODES:
            methods = {
                fx(cal["w"][mode]): ("mg", cal["w"][mode], 0.0),
                cfgname(cal["cfg_scale"][mode]): ("cfg", cal["cfg_scale"][mode]),
            }
            cells[f"{NAME} {mode}"] = cell(pre, mode, block, methods, args.checkpoints / f"{NAME}-{mode}-block{block}")
        rec = {"block": block, "stream_seed": STREAM_OFFSET + block, "cells": cells, "seconds": time.time() - t0}
        path.write_text(json.dumps(rec, indent=1))
        print(f"test block {block}: {time.time() - t0:.0f} s", flush=True)


if __name__ == "__main__":
    main()
