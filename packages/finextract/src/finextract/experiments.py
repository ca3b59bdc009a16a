"""The demo and reproduce commands. Replace the bodies with the paper's experiments."""

from __future__ import annotations

import numpy as np

from icml25_shared.cli import RunContext
from icml25_shared.data import load


def demo(ctx: RunContext) -> None:
    """Summarise a bundled dataset: a table of feature means and a histogram of the target."""
    data = load("diabetes", n_samples=100 if ctx.quick else None, seed=ctx.seed)
    rows = ["| feature | mean | std |", "|---|---|---|"]
    rows += [f"| {name} | {m:.4f} | {s:.4f} |" for name, m, s in zip(data.feature_names, data.X.mean(0), data.X.std(0))]
    ctx.write_table("\n".join(rows))
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(4, 3))
    ax.hist(data.y, bins=20)
    ax.set_xlabel("target")
    ctx.save_figure(fig)


def reproduce(ctx: RunContext) -> None:
    """Write the dataset summary as JSON."""
    data = load("diabetes", seed=ctx.seed)
    ctx.write_json({"n_samples": data.n_samples, "target_mean": float(np.mean(data.y))})
