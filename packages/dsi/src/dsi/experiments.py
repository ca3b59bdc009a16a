"""`python -m dsi demo` (DSI vs isotropic noise on random and structured differences) and
`python -m dsi reproduce` (canary exposure and accuracy vs epsilon; backdoor success with and without DSI)."""

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
    rows = ["| differences | n | d | rank | DSI trace | isotropic trace (span) | isotropic trace (R^d) | "
            "DSI / iso (span) | max m_i | solver its | time (s) |", "|---|---|---|---|---|---|---|---|---|---|---|"]
    records = []
    for name, diffs in _demo_problems(ctx.quick, ctx.seed):
        start = time.perf_counter()
        res = optimal_covariance(diffs)
        elapsed = time.perf_counter() - start
        iso = isotropic_covariance(diffs)
        ratio = res.trace / iso.span_trace
        records.append({"name": name, "ratio": ratio})
        rows.append(f"| {name} | {diffs.shape[0]} | {diffs.shape[1]} | {res.rank} | {res.trace:.4g} | "
                    f"{iso.span_trace:.4g} | {iso.trace:.4g} | {ratio:.3f} | {res.mahalanobis.max():.6f} | "
                    f"{res.iterations} | {elapsed:.3f} |")
    ctx.write_table("\n".join(rows))

    import matplotlib.pyplot as plt

    fig, (ax, bx) = plt.subplots(1, 2, figsize=(10, 4.2))
    rng = np.random.default_rng(ctx.seed)
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
    ax.legend(fontsize=7, loc="lower right")
    bx.barh([r["name"] for r in records], [r["ratio"] for r in records])
    bx.axvline(1.0, color="k", lw=0.8)
    bx.set_xlabel("DSI trace / isotropic trace in span (lower is less noise)")
    bx.tick_params(axis="y", labelsize=7)
    fig.tight_layout()
    ctx.save_figure(fig)


def reproduce(ctx: RunContext) -> dict[str, Any]:
    """Canary exposure and accuracy vs epsilon for DSI, isotropic and opacus DP-SGD (per-sample epsilon, and
    per-canary epsilon through group privacy); backdoor success with and without DSI."""
    from dsi.applications import TaskConfig, backdoor_defense, memorization_mitigation
    from dsi.training import require_torch

    torch = require_torch()
    torch.set_num_threads(1)
    cfg = TaskConfig()
    epsilons = [2.0] if ctx.quick else [8.0, 4.0, 2.0, 1.0]
    n_canaries = 2 if ctx.quick else 8
    if ctx.quick:
        cfg = replace(cfg, rounds=3, local_steps=2, hidden=16)
    regimes = ["dsi", "isotropic"]
    try:
        import opacus  # noqa: F401

        regimes += ["dpsgd"] if ctx.quick else ["dpsgd", "dpsgd-group"]
    except ImportError:
        log.warning("opacus is not installed (pip install dsi[peer]); skipping the DP-SGD peer")
    n_refs = 63 if ctx.quick else 255
    mem = [memorization_mitigation(regime="none", epsilon=None, config=cfg, n_references=n_refs,
                                   n_canaries=n_canaries, seed=ctx.seed)]
    for regime in regimes:
        for eps in epsilons:
            mem.append(memorization_mitigation(regime=regime, epsilon=eps, config=cfg, n_references=n_refs,
                                               n_canaries=n_canaries, seed=ctx.seed))
    bd_eps = [4.0] if ctx.quick else [8.0, 4.0, 2.0]
    bd = [backdoor_defense(regime="none", epsilon=None, config=cfg, seed=ctx.seed)]
    bd += [backdoor_defense(regime="dsi", epsilon=e, config=cfg, seed=ctx.seed) for e in bd_eps]

    rows = ["| task | regime | epsilon | test accuracy | canary exposure (bits) | attack success rate |",
            "|---|---|---|---|---|---|"]
    for r in mem:
        rows.append(f"| memorisation | {r.regime} | {r.epsilon if r.epsilon is not None else '-'} | "
                    f"{r.test_accuracy:.3f} | {r.exposure:.2f} / {r.max_exposure:.1f} | - |")
    for b in bd:
        rows.append(f"| backdoor | {b.regime} | {b.epsilon if b.epsilon is not None else '-'} | "
                    f"{b.clean_accuracy:.3f} | - | {b.attack_success_rate:.3f} |")
    ctx.write_table("\n".join(rows))
    out = {"config": asdict(cfg), "delta": cfg.delta,
           "memorization": [{k: v for k, v in asdict(r).items()} for r in mem],
           "backdoor": [asdict(b) for b in bd]}
    ctx.write_json(out)

    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 3, figsize=(13, 3.8))
    for regime in regimes:
        rs = [r for r in mem if r.regime == regime]
        axes[0].plot([r.epsilon for r in rs], [r.exposure for r in rs], "o-", label=regime)
        axes[1].plot([r.epsilon for r in rs], [r.test_accuracy for r in rs], "o-", label=regime)
    axes[0].axhline(mem[0].exposure, color="k", ls=":", label="no noise")
    axes[1].axhline(mem[0].test_accuracy, color="k", ls=":", label="no noise")
    for a, lab in zip(axes[:2], ["canary exposure (bits)", "test accuracy"], strict=True):
        a.set_xscale("log", base=2)
        a.set_xlabel("epsilon (delta = 1e-5)")
        a.set_ylabel(lab)
        a.legend(fontsize=7)
    labels = ["none" if b.epsilon is None else f"DSI eps={b.epsilon:g}" for b in bd]
    xs = np.arange(len(bd))
    axes[2].bar(xs - 0.2, [b.clean_accuracy for b in bd], 0.4, label="clean accuracy")
    axes[2].bar(xs + 0.2, [b.attack_success_rate for b in bd], 0.4, label="attack success")
    axes[2].set_xticks(xs, labels, fontsize=8)
    axes[2].legend(fontsize=7)
    axes[2].set_title("blended backdoor, digits")
    fig.tight_layout()
    ctx.save_figure(fig)
    return out
