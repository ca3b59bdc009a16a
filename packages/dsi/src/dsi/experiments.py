"""The ``demo`` and ``reproduce`` commands of ``python -m dsi``.

``demo``: DSI vs isotropic noise on random and structured differences. ``reproduce``: canary exposure and
accuracy vs epsilon; backdoor success with and without DSI.
"""

from __future__ import annotations

import logging
import time
from dataclasses import asdict, replace
from typing import Any

import numpy as np
from icml25_shared.cli import RunContext

from dsi.covariance import isotropic_covariance, optimal_covariance

log = logging.getLogger(__name__)


def _logistic_loo_differences(n_groups: int, seed: int) -> np.ndarray:
    """Leave-one-group-out differences of one full-batch gradient step of softmax regression on digits."""
    from icml25_shared.data import load

    data = load("digits", seed=seed)
    x = np.hstack([data.X / 16.0, np.ones((len(data.y), 1))])
    y = np.eye(10)[np.asarray(data.y, dtype=int)]
    rng = np.random.default_rng(seed)
    w = 0.01 * rng.standard_normal((x.shape[1], 10))
    groups = rng.permutation(np.arange(len(y)) % n_groups)
    p = np.exp(x @ w - (x @ w).max(1, keepdims=True))
    p /= p.sum(1, keepdims=True)
    per_sample = (p - y)[:, None, :] * x[:, :, None]  # (N, 65, 10) gradients
    total = per_sample.sum(0)
    full = total / len(y)
    out = []
    for j in range(n_groups):
        mask = groups == j
        out.append((full - (total - per_sample[mask].sum(0)) / (len(y) - mask.sum())).ravel())
    return np.array(out)


def _demo_problems(quick: bool, seed: int) -> list[tuple[str, np.ndarray]]:
    rng = np.random.default_rng(seed)
    big_d = 2_000 if quick else 100_000
    n = 16 if quick else 64
    scales = np.geomspace(0.05, 5.0, n)
    low_rank = (rng.standard_normal((n, 8)) @ rng.standard_normal((8, big_d))) / np.sqrt(big_d)
    return [
        ("orthogonal [[1,0],[0,2]]", np.array([[1.0, 0.0], [0.0, 2.0]])),
        ("collinear [[1,0],[3,0]]", np.array([[1.0, 0.0], [3.0, 0.0]])),
        ("Gaussian 6 x 20 (notes)", np.random.default_rng(0).standard_normal((20, 6)).T),
        (f"Gaussian {n} x {big_d}", rng.standard_normal((n, big_d))),
        (f"heterogeneous norms {n} x {big_d}", scales[:, None] * rng.standard_normal((n, big_d)) / np.sqrt(big_d)),
        (f"rank-8 + noise {n} x {big_d}", low_rank + 0.01 * rng.standard_normal((n, big_d)) / np.sqrt(big_d)),
        ("digits softmax LOO gradients 20 groups", _logistic_loo_differences(20, seed)),
    ]


def demo(ctx: RunContext) -> None:
    """Noise trace of the optimal DSI covariance versus the isotropic baseline; a 2-D ellipse plot."""
    rows = [
        "| differences | n | d | rank | DSI trace | isotropic trace (span) | isotropic trace (R^d) | "
        "DSI / iso (span) | max m_i | solver its | time (s) |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    records = []
    for name, diffs in _demo_problems(ctx.quick, ctx.seed):
        start = time.perf_counter()
        res = optimal_covariance(diffs)
        elapsed = time.perf_counter() - start
        iso = isotropic_covariance(diffs)
        ratio = res.trace / iso.span_trace
        records.append({"name": name, "ratio": ratio})
        rows.append(
            f"| {name} | {diffs.shape[0]} | {diffs.shape[1]} | {res.rank} | {res.trace:.4g} | "
            f"{iso.span_trace:.4g} | {iso.trace:.4g} | {ratio:.3f} | {res.mahalanobis.max():.6f} | "
            f"{res.iterations} | {elapsed:.3f} |"
        )
    ctx.write_table("\n".join(rows))

    ctx.save_figure(demo_figure(records, seed=ctx.seed))


# Hyper-parameter protocol for `reproduce` (fixed before the run on seeds 3-5; studies/reproduce-grid.md).
# Every regime gets the same total of 150 optimizer steps and a grid of the same size (9 cells); the cell
# is chosen per (regime, epsilon, seed) by accuracy on a validation split carved out of the training data
# (20 %, never trained on); ties go to the first cell in grid order. Test accuracy and exposure are then
# read off the chosen run (no retraining). DSI and no-noise runs search rounds x local steps and the
# learning rate: {30x5, 10x15, 5x30} x lr {0.5, 2.0}, then {3x50, 2x75, 1x150} at lr 0.5. DP-SGD
# (per-sample and group-calibrated) searches the Poisson batch size and the learning rate: {128, 256, 512}
# x lr {0.5, 2.0}, then {128, 256, 512} at lr 1.0. The last 3 cells of each method were added after the
# seeds 0-2 run had been read (studies/reproduce-grid/extended_grid.py) and are part of the default from the
# seeds 3-5 run on. Isotropic noise (an ablation of DSI's covariance) runs at DSI's chosen cell. The
# backdoor's cell is chosen on clean validation accuracy over the same 9 DSI cells.
TOTAL_STEPS = 150
SCHEDULES = ((30, 5), (10, 15), (5, 30))
DPSGD_BATCHES = (128, 256, 512)
LEARNING_RATES = (0.5, 2.0)
EXTRA_SCHEDULES = ((3, 50), (2, 75), (1, 150))
EXTRA_SCHEDULE_LR = 0.5
EXTRA_DPSGD_LR = 1.0
VALIDATION = 0.2
QUICK_SCHEDULES = ((3, 2), (2, 3))
QUICK_BATCHES = (256,)
QUICK_LEARNING_RATES = (0.5,)


def hyper_grid(regime: str, base: Any, *, quick: bool = False) -> list[tuple[dict[str, Any], Any]]:
    """The (label, TaskConfig) cells searched for ``regime`` under the reproduce protocol.

    Parameters
    ----------
    regime : str
        "dsi", "isotropic", "none", "dpsgd" or "dpsgd-group".
    base : TaskConfig
        The configuration the cells vary.
    quick : bool, default False
        The 2-cell grid of ``--quick`` instead of the 9-cell one.

    Returns
    -------
    list of (dict, TaskConfig)
        The cell's label fields and its configuration, in grid order.
    """
    if regime in ("dpsgd", "dpsgd-group"):
        if quick:
            cells = [(b, lr) for b in QUICK_BATCHES for lr in QUICK_LEARNING_RATES]
        else:
            cells = [(b, lr) for b in DPSGD_BATCHES for lr in LEARNING_RATES]
            cells += [(b, EXTRA_DPSGD_LR) for b in DPSGD_BATCHES]
        return [({"batch_size": b, "lr": lr}, replace(base, dpsgd_batch_size=b, dpsgd_lr=lr)) for b, lr in cells]
    if quick:
        sched = [(r, k, lr) for r, k in QUICK_SCHEDULES for lr in QUICK_LEARNING_RATES]
    else:
        sched = [(r, k, lr) for r, k in SCHEDULES for lr in LEARNING_RATES]
        sched += [(r, k, EXTRA_SCHEDULE_LR) for r, k in EXTRA_SCHEDULES]
    return [
        ({"rounds": r, "local_steps": k, "lr": lr}, replace(base, rounds=r, local_steps=k, lr=lr)) for r, k, lr in sched
    ]


def select_by_validation(validation_accuracies: Any) -> int:
    """Index of the best validation accuracy; ties go to the first (grid order). NaN never wins.

    Parameters
    ----------
    validation_accuracies : array-like of shape (n_cells,)
        One accuracy per grid cell.

    Returns
    -------
    int
        The chosen cell.
    """
    acc = np.asarray(validation_accuracies, dtype=np.float64)
    if acc.ndim != 1 or acc.size == 0 or not np.any(np.isfinite(acc)):
        raise ValueError("select_by_validation needs a non-empty 1-D array with at least one finite accuracy")
    return int(np.argmax(np.where(np.isfinite(acc), acc, -np.inf)))


def _mean_sd(values: list[float]) -> tuple[float, float]:
    arr = np.asarray(values, dtype=np.float64)
    return float(arr.mean()), float(arr.std(ddof=1)) if arr.size > 1 else 0.0


def _fmt(values: list[float], digits: int) -> str:
    mean, sd = _mean_sd(values)
    return f"{mean:.{digits}f} ({sd:.{digits}f})" if len(values) > 1 else f"{mean:.{digits}f}"


def _label(cell: dict[str, Any]) -> str:
    if "batch_size" in cell:
        return f"b{cell['batch_size']}/lr{cell['lr']:g}"
    return f"{cell['rounds']}x{cell['local_steps']}/lr{cell['lr']:g}"


def _search(run: Any, regime: str, cfg: Any, quick: bool, only: int | None = None) -> dict[str, Any]:
    """Run every grid cell of ``regime`` and keep the one chosen on validation accuracy.

    ``only``: run just that cell, chosen by another rule.
    """
    cells = hyper_grid(regime, cfg, quick=quick)
    if only is not None:
        cells = cells[only : only + 1]
    results = [run(c) for _, c in cells]
    best = select_by_validation([r.validation_accuracy for r in results])
    return {
        "chosen": best,
        "cells": [label for label, _ in cells],
        "runs": [asdict(r) for r in results],
        "result": results[best],
        "label": _label(cells[best][0]),
    }


def _run_seed(
    seed: int, quick: bool, regimes: list[str], epsilons: list[float], n_canaries: int, n_refs: int, cfg: Any
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """All memorisation and backdoor searches of one seed (a worker process in `reproduce`)."""
    from dsi.applications import backdoor_defense, memorization_mitigation
    from dsi.training import require_torch

    require_torch().set_num_threads(1)
    mem: list[dict[str, Any]] = []
    bd: list[dict[str, Any]] = []
    chosen_dsi: dict[float | None, int] = {}
    for regime, eps in [("none", None)] + [(r, e) for r in regimes for e in epsilons]:
        # isotropic noise is the same trainer with another covariance: it runs at DSI's chosen cell
        only = chosen_dsi[eps] if regime == "isotropic" else None
        found = _search(
            lambda c, r=regime, e=eps: memorization_mitigation(
                regime=r, epsilon=e, config=c, n_references=n_refs, n_canaries=n_canaries, random_state=seed
            ),
            regime,
            cfg,
            quick,
            only,
        )
        if regime == "dsi":
            chosen_dsi[eps] = found["chosen"]
        mem.append({"seed": seed, "regime": regime, "epsilon": eps, **found})
        log.info("memorisation seed %d %s eps=%s: %s", seed, regime, eps, found["label"])
    for eps in [None] + ([4.0] if quick else [8.0, 4.0, 2.0]):
        # the backdoor's cell is chosen on clean validation accuracy (what a defender can measure); --quick
        # runs the first cell only
        regime = "none" if eps is None else "dsi"
        found = _search(
            lambda c, r=regime, e=eps: backdoor_defense(regime=r, epsilon=e, config=c, random_state=seed),
            regime,
            cfg,
            quick,
            0 if quick else None,
        )
        bd.append({"seed": seed, "regime": regime, "epsilon": eps, **found})
    return mem, bd


def reproduce(ctx: RunContext) -> dict[str, Any]:
    """Canary exposure and accuracy vs epsilon; backdoor success with and without DSI.

    Compares DSI, isotropic noise and opacus DP-SGD (per-sample epsilon, and per-canary epsilon through
    group privacy). Runs the replicate seeds ctx.seed, ctx.seed + 1 and ctx.seed + 2 (``--seed 3`` runs
    seeds 3, 4, 5; one seed with ``--quick``); each seed draws its streams from its own ``SeedSequence``.
    Hyper-parameters are chosen on validation over 9 cells per method for both tasks (see ``hyper_grid``).
    """
    from dsi.applications import TaskConfig
    from dsi.training import require_torch

    require_torch().set_num_threads(1)
    start = time.perf_counter()
    cfg = replace(TaskConfig(), validation=VALIDATION)
    quick = ctx.quick
    seeds = [ctx.seed] if quick else [ctx.seed, ctx.seed + 1, ctx.seed + 2]
    epsilons = [2.0] if quick else [8.0, 4.0, 2.0, 1.0]
    n_canaries = 2 if quick else 8
    n_refs = 63 if quick else 1023
    if quick:
        cfg = replace(cfg, hidden=16, rounds=3, local_steps=2)
    regimes = ["dsi", "isotropic"]
    try:
        import opacus  # noqa: F401

        regimes += ["dpsgd"] if quick else ["dpsgd", "dpsgd-group"]
    except ImportError:
        log.warning("opacus is not installed (pip install 'dsi[peers]'); skipping the DP-SGD peer")

    jobs = [(seed, quick, regimes, epsilons, n_canaries, n_refs, cfg) for seed in seeds]
    if len(jobs) == 1:
        per_seed = [_run_seed(*jobs[0])]
    else:  # one process per seed (each single-threaded); the seeds are independent
        import multiprocessing
        from concurrent.futures import ProcessPoolExecutor

        workers = len(jobs)  # a few single-threaded processes; fine even on fewer cores
        with ProcessPoolExecutor(workers, mp_context=multiprocessing.get_context("spawn")) as pool:
            per_seed = list(pool.map(_run_seed, *zip(*jobs, strict=True)))
    mem = [row for m, _ in per_seed for row in m]
    bd = [row for _, b in per_seed for row in b]

    def cells_of(rows: list[dict[str, Any]], regime: str, eps: float | None) -> list[dict[str, Any]]:
        return [r for r in rows if r["regime"] == regime and r["epsilon"] == eps]

    head = (
        f"Seeds {seeds}; {len(hyper_grid('dsi', cfg, quick=quick))}-cell grid for none, dsi, dpsgd and "
        f"dpsgd-group (memorisation) and for the backdoor, chosen on {VALIDATION:.0%} validation accuracy; "
        f"isotropic at dsi's chosen cell; {n_canaries} canaries x {n_refs} references (exposure max "
        f"{np.log2(n_refs + 1):.0f} bits). Mean (sd over seeds)."
    )
    rows = [
        head,
        "",
        "| task | regime | epsilon | test accuracy | validation accuracy | canary exposure (bits) | "
        "attack success rate | chosen cell per seed |",
        "|---|---|---|---|---|---|---|---|",
    ]
    summary: list[dict[str, Any]] = []
    for regime, eps in [("none", None)] + [(r, e) for r in regimes for e in epsilons]:
        sel = cells_of(mem, regime, eps)
        acc = [r["result"].test_accuracy for r in sel]
        exp = [r["result"].exposure for r in sel]
        val = [r["result"].validation_accuracy for r in sel]
        summary.append(
            {
                "task": "memorisation",
                "regime": regime,
                "epsilon": eps,
                "test_accuracy": _mean_sd(acc),
                "validation_accuracy": _mean_sd(val),
                "exposure": _mean_sd(exp),
                "per_seed_test_accuracy": acc,
                "per_seed_exposure": exp,
                "chosen": [r["label"] for r in sel],
            }
        )
        rows.append(
            f"| memorisation | {regime} | {eps if eps is not None else '-'} | {_fmt(acc, 3)} | "
            f"{_fmt(val, 3)} | {_fmt(exp, 2)} | - | {', '.join(r['label'] for r in sel)} |"
        )
    for eps in [None] + ([4.0] if quick else [8.0, 4.0, 2.0]):
        sel = cells_of(bd, "none" if eps is None else "dsi", eps)
        acc = [r["result"].clean_accuracy for r in sel]
        asr = [r["result"].attack_success_rate for r in sel]
        val = [r["result"].validation_accuracy for r in sel]
        summary.append(
            {
                "task": "backdoor",
                "regime": sel[0]["regime"],
                "epsilon": eps,
                "clean_accuracy": _mean_sd(acc),
                "validation_accuracy": _mean_sd(val),
                "attack_success_rate": _mean_sd(asr),
                "per_seed_clean_accuracy": acc,
                "per_seed_attack_success_rate": asr,
                "chosen": [r["label"] for r in sel],
            }
        )
        rows.append(
            f"| backdoor | {sel[0]['regime']} | {eps if eps is not None else '-'} | {_fmt(acc, 3)} | "
            f"{_fmt(val, 3)} | - | {_fmt(asr, 3)} | {', '.join(r['label'] for r in sel)} |"
        )
    rows += [
        "",
        "Per seed (chosen cell): test accuracy / exposure (memorisation), clean accuracy / ASR (backdoor).",
        "",
        "| task | regime | epsilon | " + " | ".join(f"seed {s}" for s in seeds) + " |",
        "|---|---|---|" + "---|" * len(seeds),
    ]
    for entry in summary:
        if entry["task"] == "memorisation":
            vals = zip(entry["per_seed_test_accuracy"], entry["per_seed_exposure"], strict=True)
        else:
            vals = zip(entry["per_seed_clean_accuracy"], entry["per_seed_attack_success_rate"], strict=True)
        eps = entry["epsilon"]
        rows.append(
            f"| {entry['task']} | {entry['regime']} | {eps if eps is not None else '-'} | "
            + " | ".join(f"{a:.3f} / {b:.2f}" for a, b in vals)
            + " |"
        )
    elapsed = time.perf_counter() - start
    rows += ["", f"Wall time: {elapsed:.0f} s."]
    ctx.write_table("\n".join(rows))
    out = {
        "config": asdict(cfg),
        "delta": cfg.delta,
        "seeds": seeds,
        "epsilons": epsilons,
        "n_canaries": n_canaries,
        "n_references": n_refs,
        "validation": VALIDATION,
        "protocol": {
            "total_steps": TOTAL_STEPS,
            "schedules": QUICK_SCHEDULES if quick else SCHEDULES,
            "dpsgd_batches": QUICK_BATCHES if quick else DPSGD_BATCHES,
            "learning_rates": QUICK_LEARNING_RATES if quick else LEARNING_RATES,
            "extra_schedules": () if quick else EXTRA_SCHEDULES,
            "extra_schedule_lr": EXTRA_SCHEDULE_LR,
            "extra_dpsgd_lr": EXTRA_DPSGD_LR,
            "n_cells": len(hyper_grid("dsi", cfg, quick=quick)),
            "selection": "max validation accuracy, ties to the first cell",
        },
        "summary": summary,
        "wall_time_s": elapsed,
        "memorization": [{k: v for k, v in r.items() if k != "result"} for r in mem],
        "backdoor": [{k: v for k, v in r.items() if k != "result"} for r in bd],
    }
    ctx.write_json(out)

    ctx.save_figure(reproduce_figure(summary, regimes))
    return out


def demo_figure(records: list[dict[str, Any]], *, seed: int) -> Any:
    """The demo's figure: a 2-d DSI contour against the isotropic one, and the trace ratio per problem."""
    import matplotlib.pyplot as plt

    fig, (ax, bx) = plt.subplots(1, 2, figsize=(10, 4.2))
    rng = np.random.default_rng(seed)
    pts = rng.standard_normal((5, 2)) * np.array([2.5, 0.6]) @ np.array([[0.8, 0.6], [-0.6, 0.8]])
    res = optimal_covariance(pts)
    iso = isotropic_covariance(pts)
    t = np.linspace(0, 2 * np.pi, 200)
    circle = np.stack([np.cos(t), np.sin(t)])
    ell = np.linalg.cholesky(res.covariance()) @ circle
    ax.plot(*ell, label=f"DSI: s^T Sigma^-1 s = 1 (tr {res.trace:.2f})")
    ax.plot(*(np.sqrt(iso.variance) * circle), "--", label=f"isotropic (tr {iso.trace:.2f})")
    for p in pts:
        ax.plot([0, p[0]], [0, p[1]], color="k", lw=0.8)
        ax.plot(*p, "ko", ms=4)
        ax.plot(*-p, "o", color="0.6", ms=3)
    ax.set_aspect("equal")
    ax.set_title("one-sigma contours and the differences s_i")
    ax.set_xlabel("first coordinate of s_i")
    ax.set_ylabel("second coordinate of s_i")
    ax.legend(fontsize=7, loc="lower right")
    bx.barh([r["name"] for r in records], [r["ratio"] for r in records])
    bx.axvline(1.0, color="k", lw=0.8)
    bx.set_xlabel("DSI trace / isotropic trace in span (lower is less noise)")
    bx.set_ylabel("problem")
    bx.tick_params(axis="y", labelsize=7)
    fig.tight_layout()
    return fig


def reproduce_figure(summary: list[dict[str, Any]], regimes: list[str]) -> Any:
    """The reproduce figure: exposure and accuracy against epsilon per regime, and the backdoor's rates."""
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 3, figsize=(13, 3.8))
    mems = [e for e in summary if e["task"] == "memorisation"]
    for regime in regimes:
        es = [e for e in mems if e["regime"] == regime]
        xs = [e["epsilon"] for e in es]
        for ax, key in zip(axes[:2], ["exposure", "test_accuracy"], strict=True):
            ax.errorbar(xs, [e[key][0] for e in es], yerr=[e[key][1] for e in es], fmt="o-", capsize=3, label=regime)
    for ax, key, lab in zip(
        axes[:2], ["exposure", "test_accuracy"], ["canary exposure (bits)", "test accuracy"], strict=True
    ):
        ax.axhline(mems[0][key][0], color="k", ls=":", label="no noise")
        ax.set_xscale("log", base=2)
        ax.set_xlabel("epsilon (delta = 1e-5)")
        ax.set_ylabel(lab)
        ax.legend(fontsize=7)
    bds = [e for e in summary if e["task"] == "backdoor"]
    labels = ["none" if e["epsilon"] is None else f"DSI eps={e['epsilon']:g}" for e in bds]
    positions = np.arange(len(bds))
    axes[2].bar(
        positions - 0.2,
        [e["clean_accuracy"][0] for e in bds],
        0.4,
        yerr=[e["clean_accuracy"][1] for e in bds],
        label="clean accuracy",
    )
    axes[2].bar(
        positions + 0.2,
        [e["attack_success_rate"][0] for e in bds],
        0.4,
        yerr=[e["attack_success_rate"][1] for e in bds],
        label="attack success",
    )
    axes[2].set_xticks(positions, labels, fontsize=8)
    axes[2].set_xlabel("regime")
    axes[2].set_ylabel("rate on the test set")
    axes[2].legend(fontsize=7)
    axes[2].set_title("blended backdoor, digits (mean, sd over seeds)")
    fig.tight_layout()
    return fig
