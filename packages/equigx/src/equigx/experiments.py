"""The ``demo`` and ``reproduce`` commands.

``demo`` trains a small TFN on Shapes and compares EquiGX with the gradient baselines on held-out graphs
(AUROC against the motif nodes), with a 3-D plot of one explanation. ``reproduce`` runs the protocol of
``studies/reproduce-protocol.md``: Shapes and Spiral Noise, three seeds, every explainer, AUROC, fidelity
and sparsity, plus the Spiral ablation that zeroes the ``l >= 1`` edge harmonics.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any, Literal

import numpy as np
import torch
from icml25_shared.cli import RunContext, progress
from icml25_shared.random import spawn

from equigx.baselines import (
    CoordinateGradient,
    DegreeBaseline,
    GNNExplainer,
    GradCAM,
    InputXGradient,
    IntegratedGradients,
    LRIBernoulli,
    PGExplainer,
    RandomExplainer,
)
from equigx.data import make_decoy_shapes, make_shapes, make_spiral
from equigx.explain import Attribution, EquiGX
from equigx.graphs import Graphs
from equigx.metrics import explanation_auroc, fidelity, sparsity
from equigx.models import TFN
from equigx.train import accuracy, train

__all__ = ["SETTINGS", "demo", "demo_figure", "explainers", "fit_task", "reproduce", "reproduce_figure", "run_seed"]

#: per task and mode: data sizes, model and training settings
SETTINGS: dict[str, dict[str, Any]] = {
    "shapes": {"model": {"n_out": 5, "mul": 4, "lmax": 2, "r_max": 1.5}, "epochs": {True: 12, False: 15},
               "lr": 1e-2, "n_train": {True: 240, False: 1000}, "n_test": {True: 40, False: 200},
               "gnnexplainer_graphs": {True: 20, False: 200}},
    "decoy": {"model": {"n_out": 5, "mul": 4, "lmax": 2, "r_max": 1.5}, "epochs": {True: 12, False: 15},
              "lr": 1e-2, "n_train": {True: 240, False: 1000}, "n_test": {True: 40, False: 200},
              "gnnexplainer_graphs": {True: 20, False: 200}},
    "spiral": {"model": {"mul": 4, "lmax": 2, "r_max": 1.6, "output": "pseudoscalar"}, "epochs": {True: 12, False: 15},
               "lr": 1e-2, "n_train": {True: 240, False: 1000}, "n_test": {True: 40, False: 200},
               "gnnexplainer_graphs": {True: 20, False: 200}},
}


def _equigx(model: TFN, variant: Literal["node", "split"]) -> Callable[[Graphs], Attribution]:
    def run(graphs: Graphs) -> Attribution:
        exp = EquiGX(model, variant=variant).explain(graphs)
        exp.node_relevance = exp.node_scores(geometry=True)  # node + half of each incident edge's geometry
        return exp

    return run


def explainers(model: TFN, *, random_state: Any = 0, gnnexplainer: bool = True,
               integrated_gradients: bool = True) -> dict[str, Callable[[Graphs], Attribution]]:
    """Every explainer of the comparison, by name.

    Parameters
    ----------
    model : TFN
        The trained network.
    random_state : None, int or numpy Generator
        Seed of the random baseline.
    gnnexplainer, integrated_gradients : bool, default True
        Include the slow baselines (``gnnexplainer`` also adds PGExplainer and LRI-Bernoulli).

    Returns
    -------
    dict of str to callable
        ``graphs -> Attribution``.
    """
    out: dict[str, Callable[[Graphs], Attribution]] = {
        "equigx-node": _equigx(model, "node"), "equigx-split": _equigx(model, "split"),
        "gradient": CoordinateGradient(model).explain, "gradcam": GradCAM(model).explain,
        "input_x_gradient": InputXGradient(model).explain}
    if integrated_gradients:
        out["integrated_gradients"] = IntegratedGradients(model).explain
    if gnnexplainer:
        out["gnnexplainer"] = GNNExplainer(model).explain
        out["pgexplainer"] = PGExplainer(model, random_state=random_state).explain
        out["lri_bernoulli"] = LRIBernoulli(model, random_state=random_state).explain
    out["degree"] = DegreeBaseline(model).explain
    out["random"] = RandomExplainer(model, random_state=random_state).explain
    return out


def fit_task(task: str, rng: np.random.Generator, *, quick: bool) -> tuple[TFN, Graphs, Graphs, float]:
    """Generate a task's data, build and train its model.

    Parameters
    ----------
    task : {"shapes", "decoy", "spiral"}
        The data set (``"decoy"``: :func:`equigx.data.make_decoy_shapes`, degree-matched backgrounds).
    rng : numpy Generator
        Source of the data, the initial weights and the shuffling.
    quick : bool
        Small sizes.

    Returns
    -------
    tuple
        ``(model, train_graphs, test_graphs, seconds)``.
    """
    cfg = SETTINGS[task]
    makers: dict[str, Callable[..., Graphs]] = {"shapes": make_shapes, "decoy": make_decoy_shapes, "spiral": make_spiral}
    make = makers[task]
    data_rng, test_rng, init_rng, shuffle_rng = spawn(rng, 4)
    train_graphs = make(cfg["n_train"][quick], random_state=data_rng)
    test_graphs = make(cfg["n_test"][quick], random_state=test_rng)
    with torch.random.fork_rng(devices=[]):  # the initial weights, without reseeding the caller's generator
        torch.manual_seed(int(init_rng.integers(2**31 - 1)))
        model = TFN(**cfg["model"])
    start = time.perf_counter()
    train(model, train_graphs, epochs=cfg["epochs"][quick], lr=cfg["lr"], random_state=shuffle_rng)
    return model.eval(), train_graphs, test_graphs, time.perf_counter() - start


def _edge_direction_by_kind(model: TFN, graphs: Graphs) -> dict[str, float]:
    exp = EquiGX(model, variant="split").explain(graphs)
    assert graphs.node_mask is not None and exp.edge_index is not None and exp.edge_direction is not None
    assert exp.edge_sh_by_l is not None and exp.edge_distance is not None
    mask = graphs.node_mask.numpy()
    src, dst = exp.edge_index
    real = src != dst
    helix = real & mask[src] & mask[dst]
    noise = real & ~(mask[src] & mask[dst])
    return {"helix_edges": float(np.mean(np.abs(exp.edge_direction[helix]))),
            "other_edges": float(np.mean(np.abs(exp.edge_direction[noise]))),
            "direction_share": float(np.abs(exp.edge_direction).sum()
                                     / (np.abs(exp.edge_sh_by_l).sum() + np.abs(exp.edge_distance).sum()
                                        + np.abs(exp.node_relevance).sum()))}


def run_seed(task: str, rng: np.random.Generator, *, quick: bool, slow_baselines: bool = True) -> dict[str, Any]:
    """Train on one seed and score every explainer on the held-out graphs.

    Parameters
    ----------
    task : {"shapes", "decoy", "spiral"}
        The data set.
    rng : numpy Generator
        The seed's stream.
    quick : bool
        Small sizes.
    slow_baselines : bool, default True
        Include integrated gradients and GNNExplainer.

    Returns
    -------
    dict
        Accuracy, training seconds and, per explainer, AUROC, Fid+, Fid-, sparsity and seconds.
    """
    model, _, test, train_s = fit_task(task, rng, quick=quick)
    result: dict[str, Any] = {"test_accuracy": accuracy(model, test), "train_seconds": train_s,
                              "n_test": test.n_graphs, "explainers": {}}
    n_sub = min(SETTINGS[task]["gnnexplainer_graphs"][quick], test.n_graphs)
    for name, explain in explainers(model, random_state=rng, gnnexplainer=slow_baselines,
                                    integrated_gradients=slow_baselines).items():
        # the learned-mask explainers are slow: they explain the first n_sub test graphs; every explainer reports
        # its AUROC on that subset too
        graphs = test.select(range(n_sub)) if name in ("gnnexplainer", "pgexplainer", "lri_bernoulli") else test
        start = time.perf_counter()
        att = explain(graphs)
        seconds = time.perf_counter() - start
        fid = fidelity(model, graphs, att, fraction=0.1)
        assert graphs.node_mask is not None
        per_graph = np.asarray(explanation_auroc(att.node_relevance, graphs.node_mask, graphs.batch, per_graph=True))
        result["explainers"][name] = {
            "auroc": float(np.nanmean(per_graph)), "auroc_first_graphs": float(np.nanmean(per_graph[:n_sub])),
            "n_graphs": graphs.n_graphs, "fid_plus": fid.fid_plus, "fid_minus": fid.fid_minus,
            "accuracy_without_top": fid.accuracy_without_top,
            "sparsity": sparsity(att.node_relevance, att.batch, fraction=0.1), "seconds": seconds}
    if task == "spiral":
        model.mask_sh_orders = tuple(range(1, model.lmax + 1))
        result["accuracy_without_l_ge_1"] = accuracy(model, test)
        model.mask_sh_orders = ()
        result["edge_direction"] = _edge_direction_by_kind(model, test)
    else:
        leak = EquiGX(model, variant="split").explain(test).relative_leak
        result["relative_leak_median"], result["relative_leak_max"] = float(np.nanmedian(leak)), float(np.nanmax(leak))
    return result


def _mean_ci(values: list[float]) -> dict[str, float]:
    from icml25_shared.stats import t_interval

    v = np.asarray(values, dtype=float)
    if len(v) < 2 or np.allclose(v, v[0]):
        return {"mean": float(v.mean()), "low": float(v.min()), "high": float(v.max())}
    ci = t_interval(v)
    return {"mean": float(v.mean()), "low": float(ci.low), "high": float(ci.high)}


def reproduce(ctx: RunContext) -> None:
    """Shapes, Decoy Shapes and Spiral Noise, three seeds, every explainer; writes JSON, a table and a PNG.

    Parameters
    ----------
    ctx : RunContext
        Output folder, seed and the quick flag (240 training and 40 test graphs, 12 epochs, instead of 1000,
        200 and 15).
    """
    tasks = ("shapes", "decoy", "spiral")
    n_seeds = 3
    results: dict[str, Any] = {"seed": ctx.seed, "quick": ctx.quick, "settings": {
        t: {k: (v[ctx.quick] if isinstance(v, dict) and ctx.quick in v else v) for k, v in SETTINGS[t].items()}
        for t in tasks}}
    start = time.perf_counter()
    for task, task_rng in zip(tasks, spawn(ctx.seed, len(tasks)), strict=True):
        runs = [run_seed(task, rng, quick=ctx.quick)
                for rng in progress(spawn(task_rng, n_seeds), desc=task, total=n_seeds)]
        names = list(runs[0]["explainers"])
        summary = {name: {metric: _mean_ci([r["explainers"][name][metric] for r in runs])
                          for metric in ("auroc", "auroc_first_graphs", "fid_plus", "fid_minus", "sparsity", "seconds")}
                   for name in names}
        results[task] = {"runs": runs, "summary": summary,
                         "test_accuracy": _mean_ci([r["test_accuracy"] for r in runs])}
        if task == "spiral":
            results[task]["accuracy_without_l_ge_1"] = _mean_ci([r["accuracy_without_l_ge_1"] for r in runs])
    results["seconds"] = time.perf_counter() - start
    ctx.write_json(results)
    rows = []
    for task in tasks:
        for name, s in results[task]["summary"].items():
            rows.append([task, name, s["auroc"]["mean"], s["auroc"]["low"], s["auroc"]["high"],
                         s["auroc_first_graphs"]["mean"], s["fid_plus"]["mean"], s["fid_minus"]["mean"],
                         s["sparsity"]["mean"], s["seconds"]["mean"]])
    ctx.write_table(rows, headers=["task", "explainer", "AUROC", "low", "high", "AUROC (GNNExplainer's graphs)",
                                   "Fid+ (10%)", "Fid- (10%)", "sparsity", "seconds"])
    ctx.save_figure(reproduce_figure(results, tasks, n_seeds=n_seeds))


def _caption(fig: Any, text: str) -> None:
    """A caption under the panels, wrapped to the figure's width."""
    import textwrap

    width = int(fig.get_figwidth() * 16)  # characters per line at 8 pt
    fig.text(0.01, 0.01, textwrap.fill(text, width), fontsize=8, ha="left", va="bottom")


def _auroc_bars(ax: Any, names: list[str], stats: list[dict[str, float]]) -> None:
    """Horizontal bars of ``mean`` with ``low``-``high`` error bars, EquiGX in blue, first name on top."""
    means = [s["mean"] for s in stats]
    err = [[m - s["low"] for m, s in zip(means, stats, strict=True)],
           [s["high"] - m for m, s in zip(means, stats, strict=True)]]
    ax.barh(range(len(names)), means, xerr=err, capsize=2, color=["C0" if n.startswith("equigx") else "C7" for n in names])
    ax.set_yticks(range(len(names)), names, fontsize=8)
    ax.set_ylim(len(names) - 0.5, -0.5)  # first name on top (invert_yaxis toggles, once per panel sharing y)
    ax.axvline(0.5, color="k", lw=0.6, ls=":")
    ax.set_xlim(0, max(1.0, *(s["high"] for s in stats)) + 0.02)  # a t-interval may pass 1: not clipped


def reproduce_figure(results: dict[str, Any], tasks: tuple[str, ...], *, n_seeds: int) -> Any:
    """``reproduce``'s figure: per task, the mean AUROC of every explainer with its 95% t-interval over seeds.

    Parameters
    ----------
    results : dict
        ``reproduce``'s JSON: ``results[task]["summary"][explainer]["auroc"]`` holds ``mean``, ``low``, ``high``;
        ``results["seed"]`` and ``results["quick"]`` are named in the caption.
    tasks : tuple of str
        One panel each.
    n_seeds : int
        Seeds per task (named in the caption).

    Returns
    -------
    matplotlib.figure.Figure
        The figure.
    """
    import matplotlib.pyplot as plt

    names = list(results[tasks[0]]["summary"])
    fig, axes = plt.subplots(1, len(tasks), figsize=(4 * len(tasks) + 1.5, 1.2 + 0.3 * len(names)), sharey=True,
                             squeeze=False)
    for ax, task in zip(axes[0], tasks, strict=True):
        _auroc_bars(ax, names, [results[task]["summary"][n]["auroc"] for n in names])
        ax.set_xlabel("explanation AUROC (per graph)")
        ax.set_title(task, fontsize=9)
    axes[0][0].set_ylabel("explainer")
    size = "quick sizes" if results.get("quick") else "full sizes"
    _caption(fig, f"Mean over {n_seeds} seeds (root seed {results.get('seed')}, {size}) of the per-graph AUROC of "
                  "node scores against the ground-truth nodes; error bars: 95% t-interval over the seeds. Blue: EquiGX; "
                  "grey: baselines; " + ("degree = node degree alone, no model; " if "degree" in names else "")
                  + "dotted line: a random ranking (0.5).")
    fig.tight_layout(rect=(0, 0.1, 1, 1))
    return fig


def demo(ctx: RunContext) -> None:
    """Train a small TFN on Shapes; AUROC of EquiGX and baselines; a 3-D plot of one explanation.

    Parameters
    ----------
    ctx : RunContext
        Output folder, seed and the quick flag (fewer graphs and epochs).
    """
    rng = np.random.default_rng(ctx.seed)
    data_rng, test_rng, init_rng, shuffle_rng = spawn(rng, 4)
    n_train, epochs = (60, 4) if ctx.quick else (300, 12)
    train_graphs = make_shapes(n_train, random_state=data_rng)
    test = make_shapes(30, random_state=test_rng)
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(int(init_rng.integers(2**31 - 1)))
        model = TFN(**SETTINGS["shapes"]["model"])
    train(model, train_graphs, epochs=epochs, lr=1e-2, random_state=shuffle_rng)
    model.eval()
    rows = []
    scores = {}
    for name, explain in explainers(model, random_state=rng, gnnexplainer=False, integrated_gradients=False).items():
        att = explain(test)
        scores[name] = att
        assert test.node_mask is not None
        per_graph = np.asarray(explanation_auroc(att.node_relevance, test.node_mask, test.batch, per_graph=True))
        ci = _mean_ci([float(v) for v in per_graph if np.isfinite(v)])
        rows.append({"explainer": name, "AUROC": ci["mean"], "low": ci["low"], "high": ci["high"]})
    ctx.write_table(rows, headers=list(rows[0]))
    ctx.write_json({"seed": ctx.seed, "n_train": n_train, "epochs": epochs, "test_accuracy": accuracy(model, test),
                    "rows": rows})
    fig = demo_figure(test, scores["equigx-split"].node_relevance, rows, seed=ctx.seed)
    ctx.save_figure(fig)


def demo_figure(test: Graphs, relevance: np.ndarray, rows: list[dict[str, Any]], *, seed: int | None) -> Any:
    """The demo's figure: one test graph's EquiGX relevance in 3-D and the AUROC bars with 95% intervals.

    Parameters
    ----------
    test : Graphs
        The test graphs (graph 0 is drawn; ``node_mask`` outlines its motif).
    relevance : numpy.ndarray, shape (test.n_nodes,)
        Node scores drawn in colour.
    rows : list of dict
        ``explainer``, ``AUROC``, ``low``, ``high`` per explainer.
    seed : int or None
        Named in the caption.

    Returns
    -------
    matplotlib.figure.Figure
        The figure.
    """
    import matplotlib.pyplot as plt

    assert test.node_mask is not None
    fig = plt.figure(figsize=(11, 5.0))
    ax = fig.add_subplot(1, 2, 1, projection="3d")
    sel = test.batch.numpy() == 0
    pos = test.pos.numpy()[sel]
    limit = float(np.abs(relevance[sel]).max()) or 1.0  # signed scores: white is zero
    pts = ax.scatter(*pos.T, c=relevance[sel], cmap="coolwarm", vmin=-limit, vmax=limit, s=60,
                     edgecolors=np.where(test.node_mask.numpy()[sel], "k", "none"))
    ax.set_xlabel("x")
    ax.set_ylabel("y")
    ax.set_zlabel("z")
    from matplotlib.ticker import MaxNLocator

    for axis in (ax.xaxis, ax.yaxis, ax.zaxis):  # a 3-D panel's foreshortened axes crowd the default ticks
        axis.set_major_locator(MaxNLocator(4))
        axis.set_tick_params(labelsize=8)
    fig.colorbar(pts, ax=ax, shrink=0.6, pad=0.15, label="EquiGX relevance (split)")  # pad: clear of the z ticks
    ax.set_title("test graph 0: motif nodes outlined", fontsize=9)
    ax2 = fig.add_subplot(1, 2, 2)
    names = [str(r["explainer"]) for r in rows]
    means = [float(r["AUROC"]) for r in rows]
    _auroc_bars(ax2, names, [{"mean": m, "low": float(r["low"]), "high": float(r["high"])}
                             for m, r in zip(means, rows, strict=True)])
    ax2.set_xlabel("AUROC vs motif (per graph)")
    ax2.set_ylabel("explainer")
    ax2.set_title(f"one model, seed {seed}: mean and 95% t-interval over {test.n_graphs} test graphs", fontsize=8)
    auroc = dict(zip(names, means, strict=True))
    versus = ""
    if "equigx-split" in auroc and "gradcam" in auroc:
        gap = auroc["equigx-split"] - auroc["gradcam"]
        word = "level with" if abs(gap) < 5e-4 else "above" if gap > 0 else "below"
        versus = f" Here EquiGX-split ({auroc['equigx-split']:.3f}) is {word} Grad-CAM ({auroc['gradcam']:.3f})."
    _caption(fig, f"One trained model (seed {seed}); error bars: 95% t-interval over the test graphs, not over "
                  f"seeds (reproduce: 3 seeds).{versus} Blue: EquiGX; grey: baselines; degree = node degree alone; "
                  "dotted line: a random ranking (0.5).")
    fig.tight_layout(rect=(0, 0.1, 1, 1))
    return fig
