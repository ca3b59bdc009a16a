"""Tables and verdict of the memorising-cells study from its per-seed JSON (protocol: ../memorising_cells.md).

Reads ``results/memorising-cells/{calibration,seed-XX,curve-XX}.json`` and writes ``summary.json`` and
``summary.md`` beside them: per passing cell the exact McNemar test on A-ESR@0.93 (FineXtract at the chosen w vs
CFG at the chosen scale, paired per image), the paired t on per-seed AS, the verdict by the pre-set rule, and the
w curve (mean AS and A-ESR@0.93 with 95 % t-intervals over the seeds that have it).

    python packages/finextract/studies/memorising_cells/analyse.py [RESULTS_DIR]

(default ``results/memorising-cells``; the confirmatory run's is ``results/memorising-cells-confirm``)
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
from scipy import stats

RESULTS = Path(__file__).resolve().parents[2] / "results" / "memorising-cells"
THRESHOLD = 0.93
W_CURVE = (1.0, 1.5, 2.0, 3.0, 5.0)
N_PLANNED = 20


def t_interval(x: np.ndarray) -> tuple[float, float, float]:
    """Mean and 95 % Student-t interval (nan bounds below 2 values)."""
    mean = float(np.mean(x))
    if x.size < 2:
        return mean, float("nan"), float("nan")
    half = float(stats.t.ppf(0.975, x.size - 1) * np.std(x, ddof=1) / np.sqrt(x.size))
    return mean, mean - half, mean + half


def mcnemar_exact(fx_only: int, cfg_only: int) -> float:
    """Two-sided exact McNemar p-value: binomial test of the discordant pairs at 1/2 (1.0 with none)."""
    n = fx_only + cfg_only
    return 1.0 if n == 0 else float(stats.binomtest(fx_only, n, 0.5).pvalue)


def analyse(results: Path = RESULTS) -> dict[str, Any]:
    cal = json.loads((results / "calibration.json").read_text())
    seeds = {int(p.stem.split("-")[1]): json.loads(p.read_text()) for p in sorted(results.glob("seed-*.json"))}
    curves = {int(p.stem.split("-")[1]): json.loads(p.read_text()) for p in sorted(results.glob("curve-*.json"))}
    blocks = sorted(seeds)
    cells_out = []
    for cell in [f"{r} {m}" for r in cal["passing_regimes"] for m in ("full", "lora")]:
        mode = cell.split()[1]
        fx_name, cfg_name = f"FX w={cal['w'][mode]}", f"CFG s={cal['cfg_scale'][mode]}"
        fx_best = np.concatenate([seeds[b]["cells"][cell]["methods"][fx_name]["best_similarity"] for b in blocks])
        cfg_best = np.concatenate([seeds[b]["cells"][cell]["methods"][cfg_name]["best_similarity"] for b in blocks])
        fx_hit, cfg_hit = fx_best >= THRESHOLD, cfg_best >= THRESHOLD
        fx_only, cfg_only = int(np.sum(fx_hit & ~cfg_hit)), int(np.sum(cfg_hit & ~fx_hit))
        p = mcnemar_exact(fx_only, cfg_only)
        as_fx = np.array([seeds[b]["cells"][cell]["methods"][fx_name]["AS"] for b in blocks])
        as_cfg = np.array([seeds[b]["cells"][cell]["methods"][cfg_name]["AS"] for b in blocks])
        d_mean, d_lo, d_hi = t_interval(as_fx - as_cfg)
        esr_fx = np.array(
            [
                np.mean(np.asarray(seeds[b]["cells"][cell]["methods"][fx_name]["best_similarity"]) >= THRESHOLD)
                for b in blocks
            ]
        )
        esr_cfg = np.array(
            [
                np.mean(np.asarray(seeds[b]["cells"][cell]["methods"][cfg_name]["best_similarity"]) >= THRESHOLD)
                for b in blocks
            ]
        )
        curve = []
        for w in W_CURVE:
            name = f"FX w={w}"
            have = [
                b
                for b in blocks
                if name in seeds[b]["cells"][cell]["methods"]
                or (b in curves and name in curves[b]["cells"][cell]["methods"])
            ]
            src = {
                b: (seeds[b] if name in seeds[b]["cells"][cell]["methods"] else curves[b])["cells"][cell]["methods"][
                    name
                ]
                for b in have
            }
            a = np.array([src[b]["AS"] for b in have])
            e = np.array([np.mean(np.asarray(src[b]["best_similarity"]) >= THRESHOLD) for b in have])
            curve.append(
                {
                    "w": w,
                    "n_seeds": len(have),
                    "AS": t_interval(a) if have else None,
                    "A-ESR": t_interval(e) if have else None,
                    "calibration_AS": cal["runs"][cell]["methods"][name]["AS"],
                }
            )
        cells_out.append(
            {
                "cell": cell,
                "w": cal["w"][mode],
                "cfg_scale": cal["cfg_scale"][mode],
                "n_seeds": len(blocks),
                "n_images": int(fx_best.size),
                "extracted_FX": int(fx_hit.sum()),
                "extracted_CFG": int(cfg_hit.sum()),
                "FX_only": fx_only,
                "CFG_only": cfg_only,
                "mcnemar_p": p,
                "A-ESR_FX": t_interval(esr_fx),
                "A-ESR_CFG": t_interval(esr_cfg),
                "AS_FX": float(as_fx.mean()),
                "AS_CFG": float(as_cfg.mean()),
                "delta_AS": [d_mean, d_lo, d_hi],
                "seeds_FX_higher_AS": int(np.sum(as_fx > as_cfg)),
                "FX_above_CFG": bool(p < 0.05 and fx_only > cfg_only and d_lo > 0),
                "curve": curve,
            }
        )
    out = {
        "protocol": "studies/memorising_cells.md",
        "blocks": blocks,
        "n_planned": N_PLANNED,
        "calibration": {
            k: cal[k]
            for k in ("block", "pool", "pretrain_images", "cfg_scale", "w", "memorisation_check", "passing_regimes")
        },
        "cells": cells_out,
    }
    out = json.loads(json.dumps(out))  # tuples as lists: the returned summary equals the stored one
    (results / "summary.json").write_text(json.dumps(out, indent=1))
    (results / "summary.md").write_text(render(out) + "\n")
    return out


def render(out: dict[str, Any]) -> str:
    """The README's tables, from ``summary.json``."""
    lines = [
        "| cell | seeds (images) | w / CFG scale | A-ESR@0.93 FX / CFG, 95% CI | FX-only / CFG-only, McNemar p | "
        "ΔAS FX − CFG, 95% CI | FX above CFG? |",
        "|---|---|---|---|---|---|---|",
    ]
    for c in out["cells"]:
        ef, ec, d = c["A-ESR_FX"], c["A-ESR_CFG"], c["delta_AS"]
        lines.append(
            f"| {c['cell']} | {c['n_seeds']} ({c['n_images']}) | {c['w']:g} / {c['cfg_scale']:g} | "
            f"{ef[0]:.3f} [{ef[1]:.3f}, {ef[2]:.3f}] / {ec[0]:.3f} [{ec[1]:.3f}, {ec[2]:.3f}] | "
            f"{c['FX_only']} / {c['CFG_only']}, p = {c['mcnemar_p']:.3g} | {d[0]:+.4f} [{d[1]:+.4f}, {d[2]:+.4f}] | "
            f"{'yes' if c['FX_above_CFG'] else 'not shown'} |"
        )
    lines += [
        "",
        "| cell | w | seeds | calibration AS | AS, 95% CI | A-ESR@0.93, 95% CI |",
        "|---|---|---|---|---|---|",
    ]
    for c in out["cells"]:
        for pt in c["curve"]:
            if pt["AS"] is None:
                continue
            a, e = pt["AS"], pt["A-ESR"]
            lines.append(
                f"| {c['cell']} | {pt['w']:g} | {pt['n_seeds']} | {pt['calibration_AS']:.3f} | "
                f"{a[0]:.3f} [{a[1]:.3f}, {a[2]:.3f}] | {e[0]:.3f} [{e[1]:.3f}, {e[2]:.3f}] |"
            )
    return "\n".join(lines)


if __name__ == "__main__":
    import sys

    print(render(analyse(Path(sys.argv[1]) if len(sys.argv) > 1 else RESULTS)))
