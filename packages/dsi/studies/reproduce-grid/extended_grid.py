"""Acceptance item 5, second stage: extend the reproduce grid where its validation accuracies pointed.

Decided after `python -m dsi reproduce` (studies/reproduce-grid/reproduce_seeds012.json) had been run and read, test numbers
included, so this is a documented follow-up and not the pre-registered protocol. What the validation
accuracies of that run showed: for DSI, lr 2.0 diverged in every cell (validation accuracy about 0.1), so
only 3 of its 6 cells were usable, and at epsilon = 1 the chosen cell was the grid edge (5 rounds x 30
steps) on every seed; for DP-SGD the chosen learning rate sat at both edges (2.0 at epsilon >= 4, 0.5 at
epsilon <= 2). Each method gets 3 more cells, 9 in all: DSI rounds x steps in {3x50, 2x75, 1x150} at lr 0.5
(fewer rounds, the direction of the edge); DP-SGD (per sample) batch {128, 256, 512} at lr 1.0 (between its
two chosen rates); DP-SGD-group gets the same 3 cells as DP-SGD. The cell is then chosen again on
validation accuracy over all 9 cells (ties: the earlier cell), and isotropic noise runs at DSI's newly
chosen cell, as in `reproduce`.

Usage: python packages/dsi/studies/reproduce-grid/extended_grid.py [--reproduce studies/reproduce-grid/reproduce_seeds012.json] [--out DIR]
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import time
from concurrent.futures import ProcessPoolExecutor
from dataclasses import asdict, replace
from pathlib import Path

import numpy as np

DSI_EXTRA = ((3, 50), (2, 75), (1, 150))
DSI_EXTRA_LR = 0.5
DPSGD_EXTRA = (128, 256, 512)
DPSGD_EXTRA_LR = 1.0


def _run(seed: int, config: dict, epsilons: list[float], n_canaries: int, n_refs: int) -> list[dict]:
    import torch

    from dsi.applications import TaskConfig, memorization_mitigation

    torch.set_num_threads(1)
    base = TaskConfig(**config)
    out = []
    for eps in epsilons:
        for regime, cells in (
            (
                "dsi",
                [
                    (
                        {"rounds": r, "local_steps": k, "lr": DSI_EXTRA_LR},
                        replace(base, rounds=r, local_steps=k, lr=DSI_EXTRA_LR),
                    )
                    for r, k in DSI_EXTRA
                ],
            ),
            *[
                (
                    regime,
                    [
                        (
                            {"batch_size": b, "lr": DPSGD_EXTRA_LR},
                            replace(base, dpsgd_batch_size=b, dpsgd_lr=DPSGD_EXTRA_LR),
                        )
                        for b in DPSGD_EXTRA
                    ],
                )
                for regime in ("dpsgd", "dpsgd-group")
            ],
        ):
            for label, cfg in cells:
                res = memorization_mitigation(
                    regime=regime, epsilon=eps, config=cfg, n_references=n_refs, n_canaries=n_canaries, random_state=seed
                )
                out.append({"seed": seed, "regime": regime, "epsilon": eps, "cell": label, "run": asdict(res)})
    return out


def _isotropic(seed: int, config: dict, eps: float, cell: dict, n_canaries: int, n_refs: int) -> dict:
    """Isotropic noise at DSI's chosen cell (the ablation rule of `reproduce`)."""
    import torch

    from dsi.applications import TaskConfig, memorization_mitigation

    torch.set_num_threads(1)
    cfg = replace(TaskConfig(**config), rounds=cell["rounds"], local_steps=cell["local_steps"], lr=cell["lr"])
    res = memorization_mitigation(
        regime="isotropic", epsilon=eps, config=cfg, n_references=n_refs, n_canaries=n_canaries, random_state=seed
    )
    return {"seed": seed, "regime": "isotropic", "epsilon": eps, "cell": cell, "run": asdict(res)}


def main() -> None:
    from dsi.experiments import select_by_validation

    here = Path(__file__).resolve().parent  # studies/reproduce-grid
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--reproduce", type=Path, default=here / "reproduce_seeds012.json")
    parser.add_argument("--out", type=Path, default=here)
    args = parser.parse_args()
    base = json.loads(args.reproduce.read_text())
    seeds, epsilons = base["seeds"], base["epsilons"]
    start = time.perf_counter()
    jobs = [(s, base["config"], epsilons, base["n_canaries"], base["n_references"]) for s in seeds]
    with ProcessPoolExecutor(len(jobs), mp_context=multiprocessing.get_context("spawn")) as pool:
        extra = [row for rows in pool.map(_run, *zip(*jobs, strict=True)) for row in rows]

    chosen = {}
    for entry in base["memorization"]:
        key = (entry["seed"], entry["regime"], entry["epsilon"])
        cells, runs = list(entry["cells"]), list(entry["runs"])
        if entry["regime"] in ("dsi", "dpsgd", "dpsgd-group"):
            for row in extra:
                if (row["seed"], row["regime"], row["epsilon"]) == key:
                    cells.append(row["cell"])
                    runs.append(row["run"])
        best = select_by_validation([r["validation_accuracy"] for r in runs])
        chosen[key] = {"cell": cells[best], "n_cells": len(cells), **runs[best]}
    # isotropic noise runs at DSI's (new) chosen cell; when that is an original cell it is already in reproduce.json
    todo = [
        (s, base["config"], e, chosen[(s, "dsi", e)]["cell"], base["n_canaries"], base["n_references"])
        for s in seeds
        for e in epsilons
        if chosen[(s, "dsi", e)]["n_cells"]
        and chosen[(s, "dsi", e)]["cell"]
        not in [
            c
            for entry in base["memorization"]
            if (entry["seed"], entry["regime"], entry["epsilon"]) == (s, "dsi", e)
            for c in entry["cells"]
        ]
    ]
    with ProcessPoolExecutor(
        max(1, min(len(todo), len(seeds))), mp_context=multiprocessing.get_context("spawn")
    ) as pool:
        iso = list(pool.map(_isotropic, *zip(*todo, strict=True))) if todo else []
    extra += iso
    elapsed = time.perf_counter() - start
    for row in iso:
        chosen[(row["seed"], "isotropic", row["epsilon"])] = {"cell": row["cell"], "n_cells": 1, **row["run"]}

    def fmt(vals: list[float], d: int) -> str:
        return f"{np.mean(vals):.{d}f} ({np.std(vals, ddof=1):.{d}f})"

    def lab(c: dict) -> str:
        return (
            f"b{c['batch_size']}/lr{c['lr']:g}"
            if "batch_size" in c
            else f"{c['rounds']}x{c['local_steps']}/lr{c['lr']:g}"
        )

    lines = [
        f"Extended grid (DSI, DP-SGD, DP-SGD-group: 9 cells each, chosen on validation; isotropic at DSI's cell); seeds {seeds}; extra runs "
        f"{elapsed:.0f} s wall. Mean (sd over seeds); per seed: test accuracy / exposure [cell].",
        "",
        "| regime | epsilon | cells | test accuracy | exposure (bits) | "
        + " | ".join(f"seed {s}" for s in seeds)
        + " |",
        "|---|---|---|---|---|" + "---|" * len(seeds),
    ]
    summary = []
    for regime in ("none", "dsi", "isotropic", "dpsgd", "dpsgd-group"):
        for eps in [None] if regime == "none" else epsilons:
            rows = [chosen[(s, regime, eps)] for s in seeds]
            acc = [r["test_accuracy"] for r in rows]
            exp = [r["exposure"] for r in rows]
            summary.append(
                {
                    "regime": regime,
                    "epsilon": eps,
                    "test_accuracy": acc,
                    "exposure": exp,
                    "cells": [r["cell"] for r in rows],
                    "n_cells": rows[0]["n_cells"],
                }
            )
            lines.append(
                f"| {regime} | {eps if eps is not None else '-'} | {rows[0]['n_cells']} | {fmt(acc, 3)} | "
                f"{fmt(exp, 2)} | "
                + " | ".join(f"{r['test_accuracy']:.3f} / {r['exposure']:.2f} [{lab(r['cell'])}]" for r in rows)
                + " |"
            )
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "extended_grid.md").write_text("\n".join(lines) + "\n")
    (args.out / "extended_grid.json").write_text(
        json.dumps(
            {
                "extra_runs": extra,
                "summary": summary,
                "wall_time_s": elapsed,
                "dsi_extra": DSI_EXTRA,
                "dsi_extra_lr": DSI_EXTRA_LR,
                "dpsgd_extra": DPSGD_EXTRA,
                "dpsgd_extra_lr": DPSGD_EXTRA_LR,
            },
            indent=1,
            default=lambda v: v.tolist(),
        )
    )
    print("\n".join(lines))


if __name__ == "__main__":
    main()
