"""The ``demo`` and ``reproduce`` commands.

``demo`` trains a looped transformer (LT) and a timestep-modulated one (TMLT) on short edit-distance
problems, tabulates answer accuracy against test-time loops and plots the TMLT's per-loop gates.
``reproduce`` measures the paper's direction (more loops help; timestep modulation helps further) on
edit distance, in-context linear regression and char-level language modelling, over three seeds; its
protocol is fixed in ``studies/reproduce-protocol.md``.
"""

from __future__ import annotations

import contextlib
import copy
from collections.abc import Iterator
from typing import Any

import numpy as np
import torch
from icml25_shared.cli import RunContext, progress
from icml25_shared.random import child_seeds, spawn
from icml25_shared.stats import t_interval
from icml25_shared.validation import Interval, check_param

from looped_transformers.modeling import LoopedConfig, LoopedForCausalLM
from looped_transformers.tasks import CharLMTask, DPTask, RegressionTask, regression_baselines
from looped_transformers.train import (
    LoopedRegressor,
    TrainConfig,
    answer_accuracy,
    lm_loss,
    regression_error,
    train,
)

__all__ = ["CHARLM_PROTOCOLS", "ICL_PROTOCOLS", "PROTOCOL", "charlm_verdicts", "demo", "families_figure", "icl_figure", "icl_table", "icl_verdicts", "reproduce",
           "run_charlm_cells", "run_icl_cells"]

#: The reproduce protocol: sizes of the quick and the full run (the full run was not executed).
PROTOCOL: dict[str, dict[str, Any]] = {
    "quick": {
        "seeds": 3,
        "ed": {"task": {"min_length": 2, "max_length": 6, "alphabet": 4}, "d": 32, "heads": 2, "steps": 200,
               "batch": 64, "lr": 3e-3, "lt_loops": [2, 4, 8], "tmlt_loops": [8], "test": 1000},
        "icl": {"task": {"n_dims": 5, "n_points": 11}, "d": 32, "heads": 2, "steps": 150, "batch": 64, "lr": 2e-3,
                "lt_loops": [2, 4, 8], "tmlt_loops": [], "test": 1000},
        "lm": {"task": {"seq_len": 32, "n_chars": 400_000}, "d": 32, "heads": 2, "steps": 150, "batch": 32,
               "lr": 3e-3, "lt_loops": [1, 4], "tmlt_loops": [4], "test": 256},
    },
    "full": {
        "seeds": 3,
        "ed": {"task": {"min_length": 4, "max_length": 12, "alphabet": 8}, "d": 64, "heads": 4, "steps": 5000,
               "batch": 64, "lr": 1e-3, "lt_loops": [2, 4, 8], "tmlt_loops": [2, 4, 8], "test": 1000},
        "icl": {"task": {"n_dims": 5, "n_points": 11}, "d": 128, "heads": 4, "steps": 5000, "batch": 64,
                "lr": 1e-3, "lt_loops": [1, 2, 4, 8], "tmlt_loops": [2, 4, 8], "test": 2000},
        "lm": {"task": {"seq_len": 128, "n_chars": 2_000_000}, "d": 128, "heads": 4, "steps": 3000, "batch": 32,
               "lr": 1e-3, "lt_loops": [1, 2, 4], "tmlt_loops": [4], "test": 512},
    },
}


def _lm(vocab: int, d: int, heads: int, r: int, timestep: str, positions: int) -> LoopedForCausalLM:
    return LoopedForCausalLM(LoopedConfig(vocab_size=vocab, hidden_size=d, num_attention_heads=heads, n_loops=r,
                                          timestep=timestep, max_position_embeddings=positions))


@contextlib.contextmanager
def _seeded_init(seed: int) -> Iterator[None]:
    """Draw the parameters built inside from ``seed`` without touching the caller's global torch RNG."""
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        yield


def _train_and_test_streams(stream: np.random.Generator) -> list[np.random.Generator]:
    """The (training, test) streams of one seed: the same for every configuration, whatever ran before.

    Spawning from a Generator advances it, so spawning from ``stream`` itself would hand each later
    configuration of the seed other batches and other test prompts.
    """
    return spawn(copy.deepcopy(stream), 2)


def _summary(values: list[float]) -> dict[str, Any]:
    ci = t_interval(values) if len(values) > 1 else None
    return {"values": values, "mean": float(np.mean(values)),
            "low": ci.low if ci else values[0], "high": ci.high if ci else values[0]}


def demo(ctx: RunContext) -> None:
    """LT vs TMLT on edit distance (lengths 2-5): accuracy against test loops, and TMLT's per-loop gates.

    Parameters
    ----------
    ctx : RunContext
        Output folder, seed and the quick flag (40 steps instead of 250).
    """
    torch.set_num_threads(1)
    task = DPTask("ed", min_length=2, max_length=5, alphabet=4)
    steps = 40 if ctx.quick else 250
    data_seed, test_seed = spawn(ctx.seed, 2)
    rows: list[dict[str, Any]] = []
    curves: dict[str, list[float]] = {}
    gates = np.zeros((8, 2))
    test_loops = (1, 2, 4, 8, 16)
    test_int = int(test_seed.integers(2**31))
    for timestep in progress(("none", "tmlt"), desc="demo"):
        with _seeded_init(child_seeds(ctx.seed, 1)[0]):
            model = _lm(task.vocab_size, 32, 2, 4, timestep, 32)
        result = train(model, task, TrainConfig(steps=steps, batch_size=32, lr=3e-3, warmup_steps=20),
                       random_state=spawn(copy.deepcopy(data_seed), 1)[0])  # LT and TMLT: the same batches
        name = "LT" if timestep == "none" else "TMLT"
        curves[name] = [answer_accuracy(model, task, n=200 if ctx.quick else 1000, n_loops=r,
                                        random_state=test_int)
                        for r in test_loops]
        rows.append({"model": name, "train loops": 4, "steps": steps, "final loss": float(np.mean(result.losses[-20:])),
                     **{f"acc r={r}": a for r, a in zip(test_loops, curves[name], strict=True)}})
        if timestep == "tmlt":
            gates = model.model.loop_modulation(8)[:, 0, 2:4].abs().mean(-1).numpy()  # |gamma1|, |gamma2| per loop
    ctx.write_table(rows, headers=list(rows[0]))
    ctx.write_json({"task": "ed lengths 2-5, 4 letters", "model": "d=32, 2 heads, 1 block, 4 train loops",
                    "rows": rows, "test_loops": list(test_loops), "tmlt_mean_abs_gamma": gates})
    import matplotlib.pyplot as plt

    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(9, 3.2), layout="constrained")
    for name, acc in curves.items():
        ax1.plot(test_loops, acc, "o-", label=name)
    ax1.axvline(4, color="grey", lw=0.8)
    ax1.set_xscale("log", base=2)
    ax1.set_xlabel("loops at test (trained with 4)")
    ax1.set_ylabel("answer accuracy (one seed)")
    ax1.legend()
    ax2.plot(range(8), gates[:, 0], "o-", label="|gamma1| (attention)")
    ax2.plot(range(8), gates[:, 1], "s-", label="|gamma2| (MLP)")
    ax2.set_xlabel("loop t")
    ax2.set_ylabel("mean |gate|")
    ax2.legend()
    ctx.save_figure(fig)


def _ed(p: dict[str, Any], seeds: list[int], streams: list[np.random.Generator], show: bool) -> dict[str, Any]:
    task = DPTask("ed", **p["task"])
    out: dict[str, Any] = {}
    runs = [("LT", "none", r) for r in p["lt_loops"]] + [("TMLT", "tmlt", r) for r in p["tmlt_loops"]]
    for name, timestep, r in progress(runs, enabled=show, desc="ed"):
        acc: list[float] = []
        extra: dict[int, list[float]] = {2 * r: [], 4 * r: []}
        for seed, stream in zip(seeds, streams, strict=True):
            data, test = _train_and_test_streams(stream)
            with _seeded_init(seed):
                model = _lm(task.vocab_size, p["d"], p["heads"], r, timestep, task.max_sequence_length)
            train(model, task, TrainConfig(steps=p["steps"], batch_size=p["batch"], lr=p["lr"], warmup_steps=30),
                  random_state=data)
            test_seed = int(test.integers(2**31))
            acc.append(answer_accuracy(model, task, n=p["test"], random_state=test_seed))
            for rt in extra:
                extra[rt].append(answer_accuracy(model, task, n=p["test"], n_loops=rt, random_state=test_seed))
        out[f"{name} r={r}"] = {"accuracy": _summary(acc), **{f"accuracy r_test={k}": _summary(v)
                                                               for k, v in extra.items()}}
    return out


def _icl(p: dict[str, Any], seeds: list[int], streams: list[np.random.Generator], show: bool) -> dict[str, Any]:
    task = RegressionTask(**p["task"])
    out: dict[str, Any] = {}
    ls: list[dict[str, np.ndarray]] = []
    runs = [("LT", "none", r) for r in p["lt_loops"]] + [("TMLT", "tmlt", r) for r in p["tmlt_loops"]]
    for name, timestep, r in progress(runs, enabled=show, desc="icl"):
        err: list[float] = []
        last: list[float] = []
        extra: dict[int, list[float]] = {2 * r: [], 4 * r: []}
        for i, (seed, stream) in enumerate(zip(seeds, streams, strict=True)):
            data, test = _train_and_test_streams(stream)
            batch = task.sample(p["test"], test)
            if len(ls) < len(seeds) and i == len(ls):
                ls.append(regression_baselines(batch))
            cfg = LoopedConfig(vocab_size=1, hidden_size=p["d"], num_attention_heads=p["heads"], n_loops=r,
                               timestep=timestep, max_position_embeddings=2 * task.n_points)
            with _seeded_init(seed):
                model = LoopedRegressor(cfg, task.n_dims)
            train(model, task, TrainConfig(steps=p["steps"], batch_size=p["batch"], lr=p["lr"], warmup_steps=30,
                                           loss_loops=max(1, r // 2)), random_state=data)
            curve = regression_error(model, batch)
            err.append(float(curve.mean()))
            last.append(float(curve[-1]))
            for rt in extra:
                extra[rt].append(float(regression_error(model, batch, n_loops=rt).mean()))
        out[f"{name} r={r}"] = {"mean error": _summary(err), "error at k=11": _summary(last),
                                **{f"mean error r_test={k}": _summary(v) for k, v in extra.items()}}
    for base in ("least_squares", "ridge", "knn", "averaging"):
        out[base] = {"mean error": _summary([float(b[base].mean()) for b in ls]),
                     "error at k=11": _summary([float(b[base][-1]) for b in ls])}
    return out


def _charlm(p: dict[str, Any], seeds: list[int], streams: list[np.random.Generator], show: bool) -> dict[str, Any]:
    task = CharLMTask(**p["task"])
    out: dict[str, Any] = {}
    runs = [("LT", "none", r) for r in p["lt_loops"]] + [("TMLT", "tmlt", r) for r in p["tmlt_loops"]]
    for name, timestep, r in progress(runs, enabled=show, desc="charlm"):
        loss: list[float] = []
        extra: dict[int, list[float]] = {2 * r: [], 4 * r: []}
        for seed, stream in zip(seeds, streams, strict=True):
            data, test = _train_and_test_streams(stream)
            with _seeded_init(seed):
                model = _lm(128, p["d"], p["heads"], r, timestep, task.seq_len)
            train(model, task, TrainConfig(steps=p["steps"], batch_size=p["batch"], lr=p["lr"], warmup_steps=30),
                  random_state=data)
            test_seed = int(test.integers(2**31))
            loss.append(lm_loss(model, task, n=p["test"], random_state=test_seed))
            for rt in extra:
                extra[rt].append(lm_loss(model, task, n=p["test"], n_loops=rt, random_state=test_seed))
        out[f"{name} r={r}"] = {"val loss": _summary(loss), **{f"val loss r_test={k}": _summary(v)
                                                               for k, v in extra.items()}}
    return out


def verdicts(results: dict[str, Any]) -> dict[str, bool]:
    """The protocol's rules applied to the means of a reproduce run.

    Parameters
    ----------
    results : dict
        ``ed``, ``icl`` and ``lm`` sections of ``reproduce.json``.

    Returns
    -------
    dict of str to bool
        One entry per claim.
    """
    ed, icl, lm = results["ed"], results["icl"], results["lm"]

    def m(section: dict[str, Any], key: str, metric: str) -> float:
        return section[key][metric]["mean"]

    rs = sorted(int(k.split("=")[1]) for k in icl if k.startswith("LT r="))
    return {
        "ed: LT r=8 > LT r=2": m(ed, "LT r=8", "accuracy") > m(ed, "LT r=2", "accuracy"),
        "ed: LT r=4 >= LT r=2 - 0.01": m(ed, "LT r=4", "accuracy") >= m(ed, "LT r=2", "accuracy") - 0.01,
        "ed: TMLT r=8 >= LT r=8": m(ed, "TMLT r=8", "accuracy") >= m(ed, "LT r=8", "accuracy"),
        "icl: error falls with loops": all(m(icl, f"LT r={a}", "mean error") > m(icl, f"LT r={b}", "mean error")
                                           for a, b in zip(rs, rs[1:], strict=False)),
        "icl: LT r=8 within 2x of least squares": m(icl, "LT r=8", "mean error")
        <= 2 * m(icl, "least_squares", "mean error"),
        "lm: LT r=4 < LT r=1": m(lm, "LT r=4", "val loss") < m(lm, "LT r=1", "val loss"),
        "lm: TMLT r=4 <= LT r=4": m(lm, "TMLT r=4", "val loss") <= m(lm, "LT r=4", "val loss"),
    }


def reproduce(ctx: RunContext) -> None:
    """Loops and timestep modulation on ED, in-context regression and char LM, 3 seeds; JSON, table, PNG.

    Parameters
    ----------
    ctx : RunContext
        Output folder, seed and the quick flag (the sizes of ``PROTOCOL["quick"]``).
    """
    torch.set_num_threads(1)
    chosen = ctx.options.get("protocol", "families")
    if chosen.startswith("charlm-"):
        _reproduce_charlm(ctx, chosen.removeprefix("charlm-"))
        return
    if chosen != "families":
        _reproduce_icl(ctx, chosen.removeprefix("icl-"))
        return
    protocol = PROTOCOL["quick" if ctx.quick else "full"]
    n = protocol["seeds"]
    seeds = child_seeds(ctx.seed, n)
    streams = {name: spawn(s, n) for name, s in zip(("ed", "icl", "lm"), spawn(ctx.seed, 3), strict=True)}
    results = {"ed": _ed(protocol["ed"], seeds, streams["ed"], True),
               "icl": _icl(protocol["icl"], seeds, streams["icl"], True),
               "lm": _charlm(protocol["lm"], seeds, streams["lm"], True)}
    checks = verdicts(results)
    ctx.write_json({"protocol": protocol, "seed": ctx.seed, "torch": torch.__version__, "results": results,
                    "verdicts": checks})
    rows = []
    for section, metric in (("ed", "accuracy"), ("icl", "mean error"), ("lm", "val loss")):
        for key, val in results[section].items():
            s = val[metric]
            rows.append([section, key, metric, s["mean"], s["low"], s["high"]])
    ctx.write_table(rows, headers=["task", "model", "metric", "mean", "95% low", "95% high"])
    ctx.save_figure(families_figure(results, n))


def families_figure(results: dict[str, Any], n_seeds: int) -> Any:
    """The ``reproduce`` figure: ED accuracy, ICL error and char-LM loss against loops, one panel each.

    Parameters
    ----------
    results : dict
        The ``results`` of a stored ``reproduce.json``.
    n_seeds : int
        Seeds behind each mean (for the panel titles).

    Returns
    -------
    matplotlib.figure.Figure
    """
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 3, figsize=(12, 3.4), layout="constrained")
    for ax, (section, metric, label) in zip(axes, (("ed", "accuracy", "ED answer accuracy"),
                                                   ("icl", "mean error", "ICL normalised MSE"),
                                                   ("lm", "val loss", "char LM val loss (nats)")), strict=True):
        for kind in ("LT", "TMLT"):
            keys = [k for k in results[section] if k.startswith(f"{kind} r=")]
            if not keys:
                continue
            rs = [int(k.split("=")[1]) for k in keys]
            means = [results[section][k][metric]["mean"] for k in keys]
            lows = [results[section][k][metric]["low"] for k in keys]
            highs = [results[section][k][metric]["high"] for k in keys]
            ax.errorbar(rs, means, yerr=[np.subtract(means, lows), np.subtract(highs, means)], fmt="o-", label=kind,
                        capsize=3)
        if section == "icl":
            ax.axhline(results["icl"]["least_squares"]["mean error"]["mean"], color="grey", ls="--",
                       label="least squares")
        ax.set_xscale("log", base=2)
        ax.set_xlabel("loops r")
        ax.set_ylabel(label)
        ax.set_title(f"mean and 95% CI over {n_seeds} seeds", fontsize=9)
        ax.legend(fontsize=7)
    return fig


# --- In-context regression to convergence: one JSON per (model, seed) cell, written as it finishes ----------

#: In-context linear regression protocols that train past the zero-predictor plateau. ``cpu`` is the reduced
#: 2000-step protocol (cells in priority order, stopped by a CPU budget); ``converged`` the 4000-step one (the
#: main cells of ``full``, decisive cells first); ``full`` adds the equal-compute cells.
ICL_PROTOCOLS: dict[str, dict[str, Any]] = {
    "cpu": {"task": {"n_dims": 5, "n_points": 11}, "d": 32, "heads": 2, "steps": 2000, "batch": 64, "lr": 2e-3,
            "warmup": 50, "min_lr_ratio": 0.1, "seeds": 3, "test": 1000, "budget_minutes": 25.0,
            "cells": [["LT", 2], ["LT", 8], ["LT", 4], ["TMLT", 8], ["LT", 1]]},
    "full": {"task": {"n_dims": 5, "n_points": 11}, "d": 32, "heads": 2, "steps": 4000, "batch": 64, "lr": 2e-3,
             "warmup": 50, "min_lr_ratio": 0.1, "seeds": 3, "test": 1000, "budget_minutes": None,
             "cells": [["LT", 1], ["LT", 2], ["LT", 4], ["LT", 8], ["TMLT", 8]],
             # equal compute: r x steps constant at the budget of LT r=8 x 4000 steps
             "equal_compute": [["LT", 2, 16000], ["LT", 4, 8000]]},
    "converged": {"task": {"n_dims": 5, "n_points": 11}, "d": 32, "heads": 2, "steps": 4000, "batch": 64, "lr": 2e-3,
                  "warmup": 50, "min_lr_ratio": 0.1, "seeds": 3, "test": 1000, "budget_minutes": None,
                  "cells": [["LT", 2], ["LT", 8], ["TMLT", 8], ["LT", 1], ["LT", 4]]},
    # r x steps = 8000 for every cell, each with its own warmup and cosine; the converged recipe otherwise
    "equal-compute": {"task": {"n_dims": 5, "n_points": 11}, "d": 32, "heads": 2, "steps": 0, "batch": 64,
                      "lr": 2e-3, "warmup": 50, "min_lr_ratio": 0.1, "seeds": 4, "test": 1000, "budget_minutes": None,
                      "cells": [], "equal_compute": [["LT", 8, 1000], ["LT", 1, 8000], ["LT", 2, 4000], ["LT", 4, 2000]],
                      "compute": 8000},
}


def _icl_cell_cost(r: int, steps: int) -> float:
    """CPU seconds of one cell, from measured rates (d=32, batch 64, one thread: r=2 19 ms, r=8 45 ms)."""
    return steps * (0.010 + 0.0045 * r)


def run_icl_cells(protocol: dict[str, Any], out: Any, *, random_state: int = 0,
                  seed_indices: list[int] | None = None) -> list[str]:
    """Train the protocol's in-context regression cells, writing ``<out>/<model>-r<r>-seed<i>.json`` each.

    Cells run seed-major within each configuration group, in the protocol's order; a cell whose file exists
    is skipped (the run resumes), and a cell that would exceed ``budget_minutes`` of this process's CPU time
    is not started. ``<out>/baselines-seed<i>.json`` holds the zero predictor, least squares, ridge, 3-NN
    and averaging on the same test prompts.

    Parameters
    ----------
    protocol : dict
        One of :data:`ICL_PROTOCOLS`.
    out : path-like
        Folder of the cell files.
    random_state : int, default 0
        Root seed: ``child_seeds(random_state, seeds)`` initialise the models; ``spawn(random_state, seeds)``
        give each seed its training and test streams (the same for every configuration of that seed).
    seed_indices : list of int, optional
        Run only these seeds (several processes can then share the cells, one seed each); default all.

    Returns
    -------
    list of str
        Names of the cells skipped for the budget.
    """
    import json
    import time
    from pathlib import Path

    folder = Path(out)
    folder.mkdir(parents=True, exist_ok=True)
    task = RegressionTask(**protocol["task"])
    n = protocol["seeds"]
    seeds = child_seeds(random_state, n)
    streams = spawn(random_state, n)
    budget = protocol.get("budget_minutes")
    cells = [(kind, r, protocol["steps"]) for kind, r in protocol["cells"]]
    cells += [(kind, r, steps) for kind, r, steps in protocol.get("equal_compute", [])]
    skipped = []
    for i in range(n):  # the baselines first: they cost seconds
        path = folder / f"baselines-seed{i}.json"
        if not path.exists():
            test = task.sample(protocol["test"], _train_and_test_streams(streams[i])[1])
            base = {k: v.tolist() for k, v in regression_baselines(test).items()}
            base["zero"] = ((test.ys.double() ** 2).mean(0) / test.error_scale).tolist()
            path.write_text(json.dumps({"seed_index": i, "errors": base}, indent=1))
    for kind, r, steps in cells:
        for i in range(n) if seed_indices is None else seed_indices:
            name = f"{kind}-r{r}-steps{steps}-seed{i}"
            path = folder / f"{name}.json"
            if path.exists():
                continue
            if budget is not None and time.process_time() + _icl_cell_cost(r, steps) > 60 * budget:
                skipped.append(name)
                continue
            data, test_stream = _train_and_test_streams(streams[i])
            test = task.sample(protocol["test"], test_stream)
            cfg = LoopedConfig(vocab_size=1, hidden_size=protocol["d"], num_attention_heads=protocol["heads"],
                               n_loops=r, timestep="none" if kind == "LT" else "tmlt",
                               max_position_embeddings=2 * task.n_points)
            with _seeded_init(seeds[i]):
                model = LoopedRegressor(cfg, task.n_dims)
            cpu, wall = time.process_time(), time.perf_counter()
            result = train(model, task, TrainConfig(steps=steps, batch_size=protocol["batch"], lr=protocol["lr"],
                                                    warmup_steps=protocol["warmup"],
                                                    min_lr_ratio=protocol["min_lr_ratio"],
                                                    loss_loops=max(1, r // 2)), random_state=data)
            cpu, wall = time.process_time() - cpu, time.perf_counter() - wall
            curves = {str(rt): regression_error(model, test, n_loops=rt).tolist() for rt in (r, 2 * r, 4 * r)}
            losses = np.asarray(result.losses)
            path.write_text(json.dumps({
                "model": kind, "r": r, "steps": steps, "seed_index": i, "init_seed": seeds[i],
                "error_by_length": curves, "mean_error": {k: float(np.mean(v)) for k, v in curves.items()},
                "train_loss_per_100": [float(losses[j:j + 100].mean()) for j in range(0, len(losses), 100)],
                "cpu_seconds": cpu, "wall_seconds": wall, "torch": torch.__version__}, indent=1))
    return skipped


def _load_cells(folder: Any) -> tuple[dict[str, dict[int, dict[str, Any]]], dict[int, dict[str, list[float]]]]:
    import json
    from pathlib import Path

    cells: dict[str, dict[int, dict[str, Any]]] = {}
    baselines: dict[int, dict[str, list[float]]] = {}
    for path in sorted(Path(folder).glob("*.json")):
        data = json.loads(path.read_text())
        if path.name.startswith("baselines-seed"):
            baselines[data["seed_index"]] = data["errors"]
        elif "model" in data and "r" in data:
            cells.setdefault(f"{data['model']} r={data['r']} steps={data['steps']}", {})[data["seed_index"]] = data
    return cells, baselines


def _check_verdict_inputs(owner: str, folder: Any, n_seeds: Any) -> None:
    """A verdict over a folder that holds no cell would read as 'not run': refuse it by name instead."""
    from pathlib import Path

    check_param("n_seeds", n_seeds, [Interval(int, 1, None, closed="left")], owner=owner)
    path = Path(folder)
    if not path.is_dir() or not any(path.glob("*.json")):
        raise ValueError(f"{owner}: folder must be a folder of stored cells (*.json), got {str(folder)!r} "
                         f"({'no such folder' if not path.is_dir() else 'no JSON in it'})")


def icl_verdicts(folder: Any, *, n_seeds: int, steps: int, compute: int | None = None) -> dict[str, Any]:
    """Aggregate the stored in-context regression cells and apply the protocol's rules.

    Parameters
    ----------
    folder : path-like
        The folder :func:`run_icl_cells` wrote.
    n_seeds : int
        Seeds a configuration needs to count as complete.
    steps : int
        Training steps of the main cells (the equal-compute cells are tabulated apart).
    compute : int, optional
        ``r x steps`` of an equal-compute protocol (no main cells): its rules are read instead (gate: the
        best cell's seed mean <= 0.8 x zero; E1: LT r=8 - LT r=1 paired, 95% interval below 0; E2: seed
        means strictly decreasing in r).

    Returns
    -------
    dict
        ``models`` (per configuration: per-seed mean errors at r, 2r and 4r, their mean and 95% interval,
        cpu seconds), ``baselines`` (same for the zero predictor, least squares, ridge, 3-NN, averaging) and
        ``rules`` (each with ``verdict`` and the numbers it read).
    """
    _check_verdict_inputs("icl_verdicts", folder, n_seeds)
    check_param("steps", steps, [Interval(int, 0, None, closed="left")], owner="icl_verdicts")
    check_param("compute", compute, [None, Interval(int, 1, None, closed="left")], owner="icl_verdicts")
    cells, baselines = _load_cells(folder)
    models: dict[str, Any] = {}
    for key, by_seed in cells.items():
        kind, r_text, steps_text = key.split(" ")
        r = int(r_text.split("=")[1])
        seeds_done = sorted(by_seed)
        row: dict[str, Any] = {"model": kind, "r": r, "steps": int(steps_text.split("=")[1]), "seeds": seeds_done,
                               "complete": len(seeds_done) >= n_seeds,
                               "cpu_seconds": [by_seed[i]["cpu_seconds"] for i in seeds_done]}
        for factor in (1, 2, 4):
            values = [by_seed[i]["mean_error"][str(factor * r)] for i in seeds_done]
            row[f"r_test={factor}r"] = _summary(values)
        row["error_by_length"] = np.mean([by_seed[i]["error_by_length"][str(r)] for i in seeds_done], axis=0).tolist()
        models[f"{kind} r={r}" + ("" if row["steps"] == steps else f" x {row['steps']} steps")] = row
    base = {name: _summary([float(np.mean(baselines[i][name])) for i in sorted(baselines)])
            for name in ("zero", "least_squares", "ridge", "knn", "averaging")} if baselines else {}
    base_curves = {name: np.mean([baselines[i][name] for i in sorted(baselines)], axis=0).tolist()
                   for name in base}

    def per_seed(name: str) -> dict[int, float] | None:
        row = models.get(name)
        if row is None or not row["complete"]:
            return None
        return {i: cells[f"{row['model']} r={row['r']} steps={row['steps']}"][i]["mean_error"][str(row["r"])]
                for i in row["seeds"]}

    zero = base.get("zero", {}).get("mean")
    if compute is not None:
        return {"models": models, "baselines": base, "baseline_curves": base_curves, "compute": compute,
                "rules": _equal_compute_rules(models, zero, compute)}
    rules: dict[str, Any] = {}
    lt2, lt8, tmlt8 = per_seed("LT r=2"), per_seed("LT r=8"), per_seed("TMLT r=8")
    if lt2 is None or lt8 is None or zero is None:
        rules["0 gate"] = {"verdict": "not run (LT r=2 or r=8 incomplete)"}
        return {"models": models, "baselines": base, "baseline_curves": base_curves, "rules": rules}
    m2, m8 = float(np.mean(list(lt2.values()))), float(np.mean(list(lt8.values())))
    gate = m2 <= 0.8 * zero and m8 <= 0.8 * zero
    rules["0 gate"] = {"verdict": "passes" if gate else "fails", "LT r=2": m2, "LT r=8": m8, "0.8 x zero": 0.8 * zero}
    if not gate:
        for name in ("1 more loops help", "2 monotone in r", "3 near least squares", "4 timestep encoding"):
            rules[name] = {"verdict": "not read (trivial regime)"}
        return {"models": models, "baselines": base, "baseline_curves": base_curves, "rules": rules}
    paired = sorted(set(lt2) & set(lt8))
    rules["1 more loops help"] = {"verdict": "holds" if all(lt8[i] < lt2[i] for i in paired) else "fails",
                                  "LT r=8 - LT r=2 per seed": [lt8[i] - lt2[i] for i in paired]}
    complete = sorted((row["r"], row["r_test=1r"]["mean"]) for name, row in models.items()
                      if row["model"] == "LT" and row["complete"] and row["steps"] == steps)
    rules["2 monotone in r"] = {"verdict": "holds" if all(a[1] > b[1] for a, b in zip(complete, complete[1:],
                                                                                        strict=False)) else "fails",
                                "means by r": dict(complete)}
    ls = base["least_squares"]["mean"]
    rules["3 near least squares"] = {"verdict": "holds" if m8 <= 2 * ls else "fails", "LT r=8": m8,
                                     "2 x least squares": 2 * ls}
    if tmlt8 is None:
        rules["4 timestep encoding"] = {"verdict": "not run (TMLT r=8 incomplete)"}
    else:
        diff = [tmlt8[i] - lt8[i] for i in sorted(set(tmlt8) & set(lt8))]
        rules["4 timestep encoding"] = {"verdict": "holds" if np.mean(diff) <= 0 else "fails",
                                        "TMLT r=8 - LT r=8": _summary(diff)}
    return {"models": models, "baselines": base, "baseline_curves": base_curves, "rules": rules}


def _equal_compute_rules(models: dict[str, Any], zero: float | None, compute: int) -> dict[str, Any]:
    """Gate, E1 (LT r=8 below LT r=1, paired 95% interval below 0) and E2 (decreasing in r) at ``r x steps``."""
    rows = {row["r"]: row for row in models.values()
            if row["model"] == "LT" and row["complete"] and row["r"] * row["steps"] == compute}
    if not rows or zero is None:
        return {"0 gate": {"verdict": "not run (no complete cell)"}}
    means = {r: rows[r]["r_test=1r"]["mean"] for r in sorted(rows)}
    best = min(means.values())
    rules: dict[str, Any] = {"0 gate": {"verdict": "passes" if best <= 0.8 * zero else "fails",
                                        "best cell": best, "0.8 x zero": 0.8 * zero}}
    if best > 0.8 * zero:
        rules["E1 loops over steps"] = rules["E2 monotone in r"] = {"verdict": "not read (trivial regime)"}
        return rules
    if 1 in rows and 8 in rows:
        one, eight = (dict(zip(rows[r]["seeds"], rows[r]["r_test=1r"]["values"], strict=True)) for r in (1, 8))
        diff = _summary([eight[i] - one[i] for i in sorted(set(one) & set(eight))])
        rules["E1 loops over steps"] = {"verdict": "holds" if diff["high"] < 0 else "fails",
                                        "LT r=8 - LT r=1": diff}
    else:
        rules["E1 loops over steps"] = {"verdict": "not run (LT r=1 or r=8 incomplete)"}
    ordered = list(means.values())
    rules["E2 monotone in r"] = {"verdict": "holds" if all(a > b for a, b in zip(ordered, ordered[1:], strict=False))
                                 else "fails", "means by r": means}
    return rules


def icl_table(report: dict[str, Any]) -> str:
    """Markdown tables of an :func:`icl_verdicts` or :func:`charlm_verdicts` report: models, baselines, rules.

    In-context reports show the zero predictor and least squares (ridge, 3-NN and averaging stay in the JSON).

    Parameters
    ----------
    report : dict
        What :func:`icl_verdicts` returns (or the ``icl-*.json`` a reproduce run stores).

    Returns
    -------
    str
        Two markdown tables.
    """
    def ci(s: dict[str, Any]) -> str:
        return f"{s['mean']:.3f} [{s['low']:.3f}, {s['high']:.3f}]" if len(s["values"]) > 1 else f"{s['mean']:.3f}"

    metric = report.get("metric", "mean error")
    lines = [f"| model | seeds | {metric} [95% CI] | per seed | at r_test = 2r | at r_test = 4r |",
             "|---|---|---|---|---|---|"]
    for label, row in report["models"].items():
        s = row["r_test=1r"]
        lines.append(f"| {label} | {len(row['seeds'])} | {ci(s)} | {', '.join(f'{v:.3f}' for v in s['values'])} | "
                     f"{row['r_test=2r']['mean']:.3f} | {row['r_test=4r']['mean']:.3f} |")
    for label, s in report["baselines"].items():
        if label in ("ridge", "knn", "averaging"):  # ridge tracks least squares, the others sit above zero: JSON only
            continue
        lines.append(f"| {label.replace('_', ' ')} (baseline) | {len(s['values'])} | {ci(s)} | "
                     f"{', '.join(f'{v:.3f}' for v in s['values'])} | | |")
    lines += ["", "| rule | verdict | numbers |", "|---|---|---|"]
    for name, rule in report["rules"].items():
        numbers = "; ".join(f"{k}: {_fmt(v)}" for k, v in rule.items() if k != "verdict")
        lines.append(f"| {name} | {rule['verdict']} | {numbers} |")
    return "\n".join(lines) + "\n"


def _fmt(value: Any) -> str:
    if isinstance(value, float):
        return f"{value:.3f}"
    if isinstance(value, list):
        return "[" + ", ".join(_fmt(v) for v in value) + "]"
    if isinstance(value, dict):
        if "mean" in value and "low" in value:
            return f"{value['mean']:+.3f} [{value['low']:+.3f}, {value['high']:+.3f}]"
        return "{" + ", ".join(f"{k}: {_fmt(v)}" for k, v in value.items()) + "}"
    return str(value)


def icl_figure(report: dict[str, Any], *, n_seeds: int, steps: int) -> Any:
    """The in-context protocol's figure: error by prompt length, and mean error against loops.

    Parameters
    ----------
    report : dict
        What :func:`icl_verdicts` returns (or a stored ``icl-*.json``).
    n_seeds : int
        Seeds of the protocol (for the title).
    steps : int
        Training steps of the main cells (the right panel plots those).

    Returns
    -------
    matplotlib.figure.Figure
    """
    import matplotlib.pyplot as plt

    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(10, 3.6), layout="constrained")
    for label, row in report["models"].items():
        ax1.plot(range(1, len(row["error_by_length"]) + 1), row["error_by_length"], "o-", ms=3, label=label)
    for label, curve in report["baseline_curves"].items():
        if label in ("zero", "least_squares"):
            ax1.plot(range(1, len(curve) + 1), curve, "k--" if label == "zero" else "k:", label=label.replace("_", " "))
    ax1.set_xlabel("in-context examples seen + 1 (prompt length)")
    ax1.set_ylabel("squared error / d")
    ax1.set_title(f"error by prompt length (mean of {n_seeds} seeds)")
    ax1.legend(fontsize=7)
    for kind, marker in (("LT", "o-"), ("TMLT", "s")):
        rows_k = sorted((row["r"], row["r_test=1r"]) for row in report["models"].values()
                        if row["model"] == kind and (row["steps"] == steps
                                                     or row["r"] * row["steps"] == report.get("compute")))
        if rows_k:
            rs = [r for r, _ in rows_k]
            means = [s["mean"] for _, s in rows_k]
            err = [[s["mean"] - s["low"] for _, s in rows_k], [s["high"] - s["mean"] for _, s in rows_k]]
            ax2.errorbar(rs, means, yerr=err, fmt=marker, capsize=3, label=kind)
    if report["baselines"]:
        ax2.axhline(report["baselines"]["least_squares"]["mean"], color="grey", ls=":", label="least squares")
        ax2.axhline(report["baselines"]["zero"]["mean"], color="grey", ls="--", label="zero predictor")
    ax2.set_xscale("log", base=2)
    ax2.set_xlabel("loops r")
    ax2.set_ylabel("mean error over lengths (95% CI)")
    ax2.legend(fontsize=7)
    return fig


def _reproduce_icl(ctx: RunContext, name: str) -> None:
    protocol = ICL_PROTOCOLS[name]
    if ctx.quick:  # a smoke-test size of the same protocol
        protocol = {**protocol, "steps": 0 if "compute" in protocol else 4, "seeds": 2, "test": 16, "task": {"n_dims": 2, "n_points": 3}, "d": 16,
                    "budget_minutes": None,
                    "equal_compute": [[kind, r, 8 // r] for kind, r, _ in protocol.get("equal_compute", [])
                                      if "compute" in protocol]}
        if "compute" in protocol:
            protocol["compute"] = 8
    folder = ctx.path(f"icl-{name}")
    skipped = run_icl_cells(protocol, folder, random_state=ctx.seed)
    report = icl_verdicts(folder, n_seeds=protocol["seeds"], steps=protocol["steps"], compute=protocol.get("compute"))
    stem = f"icl-{name}"
    ctx.write_json({"protocol": protocol, "seed": ctx.seed, "torch": torch.__version__, "skipped_for_budget": skipped,
                    **report}, stem)
    ctx.write_table(icl_table(report), stem)
    ctx.save_figure(icl_figure(report, n_seeds=protocol["seeds"], steps=protocol["steps"]), stem)



# --- Char-level language modelling past the n-gram tables: one JSON per (model, seed) cell ------------------

#: Char-LM protocol: LT r=1, LT r=4, TMLT r=4 on the stdlib corpus, seed-major (a seed's three cells together,
#: so a stop by the clock leaves complete pairs), with unigram / bigram / order-2 tables on the same windows.
CHARLM_PROTOCOLS: dict[str, dict[str, Any]] = {
    "converged": {"task": {"seq_len": 64, "n_chars": 400_000}, "d": 32, "heads": 2, "steps": 3000, "batch": 32,
                  "lr": 3e-3, "warmup": 50, "min_lr_ratio": 0.1, "seeds": 3, "test": 512,
                  "cells": [["LT", 1], ["LT", 4], ["TMLT", 4]]},
}


def run_charlm_cells(protocol: dict[str, Any], out: Any, *, random_state: int = 0,
                     seed_indices: list[int] | None = None) -> None:
    """Train the char-LM cells seed by seed, writing ``<out>/<model>-r<r>-steps<steps>-seed<i>.json`` each.

    ``<out>/baselines-seed<i>.json`` holds the n-gram tables' loss on the seed's validation windows (the
    windows every model of the seed is scored on); a cell whose file exists is skipped (the run resumes).

    Parameters
    ----------
    protocol : dict
        One of :data:`CHARLM_PROTOCOLS`.
    out : path-like
        Folder of the cell files.
    random_state : int, default 0
        Root seed: ``child_seeds(random_state, seeds)`` initialise the models; ``spawn(random_state, seeds)``
        give each seed its training and validation streams (the same for every configuration of that seed).
    seed_indices : list of int, optional
        Run only these seeds; default all.
    """
    import json
    import time
    from pathlib import Path

    from looped_transformers.tasks import ngram_baselines

    folder = Path(out)
    folder.mkdir(parents=True, exist_ok=True)
    task = CharLMTask(**protocol["task"])
    n = protocol["seeds"]
    seeds = child_seeds(random_state, n)
    streams = spawn(random_state, n)
    for i in range(n) if seed_indices is None else seed_indices:
        test_seed = int(_train_and_test_streams(streams[i])[1].integers(2**31))
        path = folder / f"baselines-seed{i}.json"
        if not path.exists():
            path.write_text(json.dumps({"seed_index": i, "val_loss": ngram_baselines(
                task, n=protocol["test"], random_state=test_seed)}, indent=1))
        for kind, r in protocol["cells"]:
            path = folder / f"{kind}-r{r}-steps{protocol['steps']}-seed{i}.json"
            if path.exists():
                continue
            with _seeded_init(seeds[i]):
                model = _lm(task.vocab_size, protocol["d"], protocol["heads"], r, "none" if kind == "LT" else "tmlt",
                            task.seq_len)
            cpu, wall = time.process_time(), time.perf_counter()
            result = train(model, task, TrainConfig(steps=protocol["steps"], batch_size=protocol["batch"],
                                                    lr=protocol["lr"], warmup_steps=protocol["warmup"],
                                                    min_lr_ratio=protocol["min_lr_ratio"]),
                           random_state=_train_and_test_streams(streams[i])[0])
            cpu, wall = time.process_time() - cpu, time.perf_counter() - wall
            losses = np.asarray(result.losses)
            path.write_text(json.dumps({
                "model": kind, "r": r, "steps": protocol["steps"], "seed_index": i, "init_seed": seeds[i],
                "val_loss": {str(rt): lm_loss(model, task, n=protocol["test"], n_loops=rt, random_state=test_seed)
                             for rt in (r, 2 * r, 4 * r)},
                "train_loss_per_100": [float(losses[j:j + 100].mean()) for j in range(0, len(losses), 100)],
                "cpu_seconds": cpu, "wall_seconds": wall, "torch": torch.__version__}, indent=1))


def charlm_verdicts(folder: Any, *, n_seeds: int) -> dict[str, Any]:
    """Aggregate the stored char-LM cells and apply the protocol's rules.

    Rules: gate, LT r=1 below the best n-gram table on every seed (otherwise the others are not read);
    1, LT r=4 - LT r=1 (paired over seeds) with its 95% interval below 0; 2, TMLT r=4 - LT r=4 (paired)
    with a mean <= 0.

    Parameters
    ----------
    folder : path-like
        The folder :func:`run_charlm_cells` wrote.
    n_seeds : int
        Seeds a configuration needs to count as complete.

    Returns
    -------
    dict
        ``metric``, ``models`` (per configuration: per-seed validation loss at r, 2r and 4r, mean and 95%
        interval, cpu seconds), ``baselines`` (the n-gram tables) and ``rules``; :func:`icl_table` renders it.
    """
    _check_verdict_inputs("charlm_verdicts", folder, n_seeds)
    import json
    from pathlib import Path

    cells: dict[str, dict[int, dict[str, Any]]] = {}
    tables: dict[int, dict[str, float]] = {}
    for path in sorted(Path(folder).glob("*.json")):
        data = json.loads(path.read_text())
        if path.name.startswith("baselines-seed"):
            tables[data["seed_index"]] = data["val_loss"]
        else:
            cells.setdefault(f"{data['model']} r={data['r']}", {})[data["seed_index"]] = data
    models: dict[str, Any] = {}
    for key, by_seed in cells.items():
        done = sorted(by_seed)
        first = by_seed[done[0]]
        row: dict[str, Any] = {"model": first["model"], "r": first["r"], "steps": first["steps"], "seeds": done,
                               "complete": len(done) >= n_seeds,
                               "cpu_seconds": [by_seed[i]["cpu_seconds"] for i in done]}
        for factor in (1, 2, 4):
            row[f"r_test={factor}r"] = _summary([by_seed[i]["val_loss"][str(factor * first["r"])] for i in done])
        models[key] = row
    names = sorted({name for t in tables.values() for name in t}, key=lambda k: -np.mean([t[k] for t in tables.values()]))
    base = {name: _summary([tables[i][name] for i in sorted(tables)]) for name in names}

    def per_seed(name: str) -> dict[int, float] | None:
        row = models.get(name)
        return None if row is None or not row["complete"] else dict(zip(row["seeds"], row["r_test=1r"]["values"],
                                                                         strict=True))

    rules: dict[str, Any] = {}
    lt1, lt4, tmlt4 = per_seed("LT r=1"), per_seed("LT r=4"), per_seed("TMLT r=4")
    if lt1 is None or not tables:
        rules["0 gate"] = {"verdict": "not run (LT r=1 incomplete)"}
    else:
        best = {i: min(tables[i].values()) for i in lt1}
        gate = all(lt1[i] < best[i] for i in lt1)
        rules["0 gate"] = {"verdict": "passes" if gate else "fails", "LT r=1 per seed": [lt1[i] for i in sorted(lt1)],
                           "best table per seed": [best[i] for i in sorted(lt1)]}
        # rule 1 needs the paired interval below 0 (high < 0), rule 2 a paired mean <= 0
        for name, a, b, label, holds in (("1 more loops help", lt4, lt1, "LT r=4 - LT r=1", lambda d: d["high"] < 0),
                                         ("2 timestep encoding", tmlt4, lt4, "TMLT r=4 - LT r=4",
                                          lambda d: d["mean"] <= 0)):
            if not gate:
                rules[name] = {"verdict": "not read (n-gram gate failed)"}
            elif a is None or b is None:
                rules[name] = {"verdict": f"not run ({label} incomplete)"}
            else:
                diff = _summary([a[i] - b[i] for i in sorted(set(a) & set(b))])
                rules[name] = {"verdict": "holds" if holds(diff) else "fails", label: diff}
    return {"metric": "val loss (nats/char)", "models": models, "baselines": base, "rules": rules}


def _reproduce_charlm(ctx: RunContext, name: str) -> None:
    protocol = CHARLM_PROTOCOLS[name]
    if ctx.quick:  # a smoke-test size of the same protocol
        protocol = {**protocol, "steps": 3, "seeds": 2, "test": 8, "task": {"seq_len": 8, "n_chars": 20_000}, "d": 16}
    folder = ctx.path(f"charlm-{name}")
    run_charlm_cells(protocol, folder, random_state=ctx.seed)
    report = charlm_verdicts(folder, n_seeds=protocol["seeds"])
    stem = f"charlm-{name}"
    ctx.write_json({"protocol": protocol, "seed": ctx.seed, "torch": torch.__version__, **report}, stem)
    ctx.write_table(icl_table(report), stem)
