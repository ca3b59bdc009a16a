"""The ``demo`` and ``reproduce`` commands.

``demo`` puts the bootstrap interval beside the Student-t interval on the target of the synthetic
``friedman1`` regression set (Friedman, 1991) at growing sample sizes; ``reproduce`` measures the coverage of both intervals
over independent replications of a normal sample whose mean is known.
"""

from __future__ import annotations

import json
from typing import Any

import numpy as np
from icml25_shared.cli import RunContext, progress
from icml25_shared.random import check_random_state, spawn
from icml25_shared.stats import t_interval, wilson_interval

from __MODULE__.method import bootstrap_mean

__all__ = ["coverage", "demo", "friedman1_target", "reproduce", "reproduce_figure"]

DEMO_SIZES = (25, 50, 100, 200, 400)
REPRODUCE_SIZES = (10, 30, 100)


def friedman1_target(n: int, seed: int) -> np.ndarray:
    """The target of Friedman's (1991) first regression problem, with unit noise on ``n`` uniform draws of 10 features.

    Parameters
    ----------
    n : int
        Rows.
    seed : int
        Seed of the draws.

    Returns
    -------
    numpy.ndarray
        ``10 sin(pi x1 x2) + 20 (x3 - 0.5)^2 + 10 x4 + 5 x5 + noise``, shape (n,).
    """
    rng = np.random.default_rng(seed)
    X = rng.uniform(size=(n, 10))
    noise = rng.standard_normal(n)
    return 10 * np.sin(np.pi * X[:, 0] * X[:, 1]) + 20 * (X[:, 2] - 0.5) ** 2 + 10 * X[:, 3] + 5 * X[:, 4] + noise


def demo(ctx: RunContext) -> None:
    """Bootstrap and t intervals of the ``friedman1`` target mean; writes a table, JSON and a PNG.

    Parameters
    ----------
    ctx : RunContext
        Output folder, seed and the quick flag (two sizes instead of five).
    """
    sizes = DEMO_SIZES[:2] if ctx.quick else DEMO_SIZES
    y = friedman1_target(max(sizes), ctx.seed)
    rows = []
    # One independent resampling stream per size: adding a size never changes the others' intervals.
    for n, rng in progress(zip(sizes, spawn(ctx.seed, len(sizes)), strict=True), desc="demo", total=len(sizes)):
        boot, student = bootstrap_mean(y[:n], random_state=rng), t_interval(y[:n])
        rows.append({"n": n, "mean": boot.estimate, "bootstrap low": boot.low, "bootstrap high": boot.high,
                     "t low": student.low, "t high": student.high})
    ctx.write_table(rows, headers=list(rows[0]))
    ctx.write_json({"dataset": "friedman1", "seed": ctx.seed, "rows": rows})
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(5, 3))
    ns = np.array([r["n"] for r in rows], dtype=float)
    ax.fill_between(ns, [r["t low"] for r in rows], [r["t high"] for r in rows], alpha=0.3, label="t interval")
    ax.plot(ns, [r["bootstrap low"] for r in rows], "k--", label="bootstrap interval")
    ax.plot(ns, [r["bootstrap high"] for r in rows], "k--")
    ax.plot(ns, [r["mean"] for r in rows], "o-", label="mean")
    ax.set_xscale("log")
    ax.set_xlabel("sample size n")
    ax.set_ylabel("target mean")
    ax.set_title(f"friedman1, seed {ctx.seed}: 95% intervals", fontsize=9)
    ax.legend()
    ctx.save_figure(fig)


def coverage(n: int, replications: int, *, confidence: float = 0.95, n_resamples: int = 1000,
             random_state: int | np.random.Generator | None = None) -> dict[str, float]:
    """Share of replications whose bootstrap and t intervals cover the true mean of a N(1, 1) sample.

    Parameters
    ----------
    n : int
        Sample size of each replication.
    replications : int
        Independent replications (each with its own data and resampling stream).
    confidence : float, default 0.95
        Nominal two-sided coverage of both intervals.
    n_resamples : int, default 1000
        Bootstrap resamples per replication.
    random_state : None, int or numpy Generator, default None
        Root of the replications' streams.

    Returns
    -------
    dict of str to float
        ``bootstrap`` and ``t``: the observed coverage of each interval.
    """
    rng = check_random_state(random_state)
    hits = {"bootstrap": 0, "t": 0}
    for stream in spawn(rng, replications):
        sample = stream.normal(1.0, 1.0, size=n)
        hits["bootstrap"] += bootstrap_mean(sample, confidence=confidence, n_resamples=n_resamples,
                                            random_state=stream).contains(1.0)
        hits["t"] += t_interval(sample, confidence).contains(1.0)
    return {name: count / replications for name, count in hits.items()}


def reproduce(ctx: RunContext) -> None:
    """Coverage of the 95% bootstrap and t intervals at n = 10, 30, 100; writes JSON, a table and a PNG.

    Parameters
    ----------
    ctx : RunContext
        Output folder, seed and the quick flag (50 replications instead of 400).
    """
    replications = 50 if ctx.quick else 400
    results: dict[str, dict[str, dict[str, float]]] = {}
    streams = spawn(ctx.seed, len(REPRODUCE_SIZES))
    for n, stream in progress(zip(REPRODUCE_SIZES, streams, strict=True), desc="reproduce", total=len(streams)):
        rates = coverage(n, replications, random_state=stream)
        results[str(n)] = {}
        for name, rate in rates.items():
            ci = wilson_interval(round(rate * replications), replications)
            results[str(n)][name] = {"coverage": rate, "low": ci.low, "high": ci.high}
    stored = ctx.write_json({"confidence": 0.95, "replications": replications, "seed": ctx.seed,
                             "coverage": results})
    ctx.write_table([[n, name, c["coverage"], c["low"], c["high"]] for n, by in results.items()
                     for name, c in by.items()], headers=["n", "interval", "coverage", "Wilson low", "Wilson high"])
    ctx.save_figure(reproduce_figure(json.loads(stored.read_text())))  # drawn from what is stored


def reproduce_figure(result: dict[str, Any]) -> Any:
    """The reproduce figure, drawn from its JSON (``results/reproduce.json``) alone.

    The figure check of the repository draws the stored full-size figure with it, without a rerun.

    Parameters
    ----------
    result : dict
        What ``reproduce`` writes.

    Returns
    -------
    matplotlib.figure.Figure
        Coverage of each interval against n, with Wilson intervals over the replications.
    """
    import matplotlib.pyplot as plt

    sizes = [int(n) for n in result["coverage"]]
    fig, ax = plt.subplots(figsize=(5, 3), layout="constrained")
    for name in ("bootstrap", "t"):
        rows = [result["coverage"][str(n)][name] for n in sizes]
        ax.errorbar(sizes, [r["coverage"] for r in rows], yerr=[[r["coverage"] - r["low"] for r in rows],
                                                               [r["high"] - r["coverage"] for r in rows]],
                    fmt="o-", capsize=3, label=name)
    ax.axhline(result["confidence"], color="grey", lw=0.8)
    ax.set_xscale("log")
    ax.set_xlabel("sample size n")
    ax.set_ylabel("coverage")
    ax.set_title(f"{result['replications']} replications, seed {result['seed']}; 95% Wilson intervals",
                 fontsize=9)
    ax.legend(title="interval")
    return fig
