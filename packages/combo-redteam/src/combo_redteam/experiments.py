"""The ``demo`` and ``reproduce`` commands, on the deterministic stand-ins.

``demo`` runs 50 benign flagged tasks and their controls through the single models, the manual
decomposition and the automated decomposition (k = 3), and writes a table, a bar chart and the audit
log. ``reproduce`` compares single models with manual and automated (k in 1, 3, 5) decompositions for
exact and for noisy stand-ins, sweeps a 4 x 4 grid of weak and strong capabilities, and places a policy
monitor at every placement beside the sequential episode monitor. The stand-ins illustrate the harness;
their numbers are not the paper's findings.
"""

from __future__ import annotations

import json
import warnings
from typing import Any

import numpy as np
from icml25_shared.cli import RunContext

from combo_redteam.models import DEFAULT_POLICY, StandInStrong, StandInWeak
from combo_redteam.monitors import PLACEMENTS, PolicyMonitor, SequentialMonitor
from combo_redteam.runner import RunResult, run
from combo_redteam.strategies import AutomatedDecomposition, ManualDecomposition, SingleModel
from combo_redteam.tasks import benign_suite

__all__ = ["GRID_STRONG", "GRID_WEAK", "capability_grid", "demo", "monitor_study", "reproduce", "reproduce_figure",
           "strategy_set"]

GRID_WEAK = (1, 2, 3, 4)
"""Weak capabilities of the reproduce grid."""

GRID_STRONG = (2, 4, 6, 8)
"""Strong capabilities of the reproduce grid."""


def strategy_set(strong: Any, weak: Any, ks: tuple[int, ...] = (3,)) -> list[Any]:
    """Single strong, single weak, manual and automated(k) for each ``k``."""
    return [SingleModel(strong), SingleModel(weak, role="weak"), ManualDecomposition.default(strong, weak),
            *(AutomatedDecomposition(weak, strong, k) for k in ks)]


def _rows(result: RunResult) -> list[dict[str, Any]]:
    rows = []
    for row in result.summary("flagged"):
        extra: dict[str, Any] = {"control_success": result.success_rate(row["strategy"], "control").estimate
                                 if result.select(row["strategy"], "control") else float("nan")}
        if row["kind"] != "single":
            up = result.uplift(row["strategy"])
            extra.update(uplift=up.estimate, uplift_low=up.low, uplift_high=up.high, mcnemar_p=up.mcnemar.pvalue)
        rows.append({**row, **extra})
    return rows


def _json_safe(value: Any) -> Any:
    """Infinite or undefined numbers (e.g. calls per success with no success) as null: strict JSON."""
    if isinstance(value, float) and not np.isfinite(value):
        return None
    if isinstance(value, dict):
        return {k: _json_safe(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_json_safe(v) for v in value]
    return value


def _table(rows: list[dict[str, Any]], title: str) -> str:
    lines = [f"### {title}", "", "Tasks are the units (seeds averaged within a task); errored episodes are left out.", "",
             "| strategy | tasks | episodes | errored | success [95% Wilson, tasks] | refusal | format failures | "
             "control success | uplift [95%] | exact test p | calls/success | tokens/success |",
             "|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        up = (f"{r['uplift']:.3f} [{r['uplift_low']:.3f}, {r['uplift_high']:.3f}]" if "uplift" in r else "")
        p = f"{r['mcnemar_p']:.2g}" if "mcnemar_p" in r else ""
        lines.append(f"| {r['strategy']} | {r['n']} | {r['episodes']} | {r['errored']} | {r['success']:.3f} "
                     f"[{r['low']:.3f}, {r['high']:.3f}] | {r['refusal_rate']:.3f} | {r['format_failure_rate']:.3f} | "
                     f"{r['control_success']:.3f} | {up} | {p} | {r['calls_per_success']:.2f} | "
                     f"{r['tokens_per_success']:.1f} |")
    return "\n".join(lines)


def demo(ctx: RunContext) -> None:
    """Stand-ins on 50 flagged tasks and their controls; writes a table, a bar chart, JSON and the audit log.

    Parameters
    ----------
    ctx : RunContext
        Output folder, seed and the quick flag (12 tasks instead of 50).
    """
    n = 12 if ctx.quick else 50
    suite = benign_suite(n, random_state=ctx.seed)
    strong, weak = StandInStrong(DEFAULT_POLICY, capability=10), StandInWeak(capability=2)
    log = ctx.path("demo.audit.jsonl")
    result = run(suite, strategy_set(strong, weak), seeds=[ctx.seed], log_path=log)
    rows = _rows(result)
    ctx.write_table(_table(rows, f"{n} benign flagged tasks, stand-ins (strong capability 10, weak 2), seed "
                                 f"{ctx.seed}") + f"\n\nAudit log: `{log.name}`")
    ctx.write_json(_json_safe({"n_tasks": n, "seed": ctx.seed, "models": [strong.name, weak.name], "rows": rows,
                               "audit_log": log.name}))
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6, 3.4), layout="constrained")
    names = [r["strategy"] for r in rows]
    ax.bar(names, [r["success"] for r in rows], yerr=[[r["success"] - r["low"] for r in rows],
                                                       [r["high"] - r["success"] for r in rows]], capsize=3)
    ax.set_xlabel("strategy")
    ax.set_ylabel("flagged-task success (share)")
    ax.set_ylim(0, 1.05)
    ax.set_title(f"stand-ins: {n} tasks, seed {ctx.seed}; bars 95% Wilson (tasks as units)", fontsize=9)
    ctx.save_figure(fig)


def capability_grid(n_tasks: int, *, seed: int = 0, weak_caps: tuple[int, ...] = GRID_WEAK,
                    strong_caps: tuple[int, ...] = GRID_STRONG, k: int = 3) -> dict[str, np.ndarray]:
    """Flagged-task success of manual and automated(k) on a weak x strong capability grid.

    Parameters
    ----------
    n_tasks : int
        Flagged tasks (difficulty 2-8, marker placement difficulty 1-4).
    seed : int, default 0
        Suite seed.
    weak_caps, strong_caps : tuple of int
        The grid's axes.
    k : int, default 3
        Subtasks of the automated decomposition.

    Returns
    -------
    dict of str to ndarray
        ``manual`` and ``automated``: arrays of shape (len(weak_caps), len(strong_caps)).
    """
    suite = benign_suite(n_tasks, random_state=seed, difficulty=(2, 8), marker_difficulty=(1, 4),
                         variants=("flagged",))
    out = {"manual": np.zeros((len(weak_caps), len(strong_caps))),
           "automated": np.zeros((len(weak_caps), len(strong_caps)))}
    for i, w in enumerate(weak_caps):
        for j, s in enumerate(strong_caps):
            strong, weak = StandInStrong(capability=s), StandInWeak(capability=w)
            result = run(suite, [ManualDecomposition.default(strong, weak), AutomatedDecomposition(weak, strong, k)],
                         seeds=[seed])
            out["manual"][i, j] = result.success_rate("manual").estimate
            out["automated"][i, j] = result.success_rate(f"automated-k{k}").estimate
    return out


def monitor_study(n_tasks: int, *, seed: int = 0) -> list[dict[str, Any]]:
    """A blocking policy monitor at each placement, beside the sequential episode monitor (flag only).

    Parameters
    ----------
    n_tasks : int
        Benign problems (each flagged and control).
    seed : int, default 0
        Suite and run seed.

    Returns
    -------
    list of dict
        Per placement and strategy: flagged success, TPR and FPR of the policy monitor, and the
        sequential monitor's TPR, FPR and AUROC (positives: the strategy's flagged episodes; negatives:
        control episodes sent to the strong model alone, as benign users do).
    """
    suite = benign_suite(n_tasks, random_state=seed)
    strong, weak = StandInStrong(capability=10), StandInWeak(capability=2)
    strategies = strategy_set(strong, weak, ks=(3,))
    rows = []
    for placement in PLACEMENTS:
        policy = PolicyMonitor(DEFAULT_POLICY, placement=placement, action="block")
        sequential = SequentialMonitor(action="flag")
        result = run(suite, strategies, seeds=[seed], monitors=[policy, sequential])
        for name, kind in result.strategies:
            if name == "single-weak":
                continue
            pol = result.monitor_report(policy.name, name)
            seq = result.monitor_report(sequential.name, name, negatives="single-strong")
            rows.append({"placement": placement, "strategy": name, "kind": kind,
                         "success": result.success_rate(name).estimate,
                         "control_success": result.success_rate(name, "control").estimate,
                         "policy_tpr": pol["tpr"], "policy_fpr": pol["fpr"], "sequential_tpr": seq["tpr"],
                         "sequential_fpr": seq["fpr"], "sequential_auroc": seq["auroc"]})
    return rows


def reproduce(ctx: RunContext) -> None:
    """Single vs manual vs automated (k = 1, 3, 5), the capability grid and every monitor placement.

    Parameters
    ----------
    ctx : RunContext
        Output folder, seed and the quick flag (10 tasks, 2 seeds, 12 grid tasks instead of 50, 5, 48).
    """
    n, seeds, n_grid = (10, [0, 1], 12) if ctx.quick else (50, [0, 1, 2, 3, 4], 48)
    seeds = [ctx.seed + s for s in seeds]
    suite = benign_suite(n, random_state=ctx.seed)
    sections: list[str] = []
    out: dict[str, Any] = {"n_tasks": n, "seeds": seeds, "grid_tasks": n_grid}
    settings = {"exact": (StandInStrong(capability=10), StandInWeak(capability=2)),
                "noisy": (StandInStrong(capability=10, refusal_rate=0.1, error_rate=0.3, random_state=ctx.seed),
                          StandInWeak(capability=2))}
    for label, (strong, weak) in settings.items():
        with warnings.catch_warnings():  # the noisy strong model's errors are part of the design; counted below
            warnings.simplefilter("ignore", RuntimeWarning)
            result = run(suite, strategy_set(strong, weak, ks=(1, 3, 5)), seeds=seeds, max_error_share=1.0)
        rows = _rows(result)
        out[label] = {"models": [strong.name, weak.name], "rows": rows}
        sections.append(_table(rows, f"{label} stand-ins: {strong.name} + {weak.name}, {n} tasks x {len(seeds)} "
                                     "seeds"))
    grid = capability_grid(n_grid, seed=ctx.seed)
    out["grid"] = {"weak": list(GRID_WEAK), "strong": list(GRID_STRONG),
                   **{k: v.tolist() for k, v in grid.items()}}
    lines = ["### automated (k = 3) flagged success, weak capability (rows) x strong capability (columns)", "",
             "| weak \\ strong | " + " | ".join(map(str, GRID_STRONG)) + " |", "|---" * (len(GRID_STRONG) + 1) + "|"]
    lines += [f"| {w} | " + " | ".join(f"{v:.2f}" for v in grid["automated"][i]) + " |" for i, w in enumerate(GRID_WEAK)]
    sections.append("\n".join(lines))
    monitors = monitor_study(n, seed=ctx.seed)
    out["monitors"] = monitors
    lines = ["### monitors: a blocking policy monitor at each placement; sequential episode monitor (flag only)", "",
             "| placement | strategy | flagged success | control success | policy TPR | policy FPR | sequential TPR | "
             "sequential FPR | sequential AUROC |", "|---|---|---|---|---|---|---|---|---|"]
    lines += [f"| {r['placement']} | {r['strategy']} | {r['success']:.2f} | {r['control_success']:.2f} | "
              f"{r['policy_tpr']:.2f} | {r['policy_fpr']:.2f} | {r['sequential_tpr']:.2f} | {r['sequential_fpr']:.2f} "
              f"| {r['sequential_auroc']:.3f} |" for r in monitors]
    sections.append("\n".join(lines))
    ctx.write_table("\n\n".join(sections))
    stored = ctx.write_json(_json_safe(out))
    ctx.save_figure(reproduce_figure(json.loads(stored.read_text())))  # drawn from what is stored


def reproduce_figure(result: dict[str, Any]) -> Any:
    """The reproduce figure, drawn from its JSON (``results/reproduce.json``) alone.

    Parameters
    ----------
    result : dict
        What ``reproduce`` writes: ``n_tasks``, ``seeds``, ``grid_tasks``, the ``exact`` and ``noisy`` rows and
        the capability ``grid``.

    Returns
    -------
    matplotlib.figure.Figure
        Success per strategy with 95% Wilson intervals (tasks as units) and the weak x strong capability grid.
    """
    import matplotlib.pyplot as plt

    def value(row: dict[str, Any], key: str) -> float:
        return float("nan") if row.get(key) is None else float(row[key])

    n, seeds, n_grid = result["n_tasks"], result["seeds"], result["grid_tasks"]
    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(10, 4), layout="constrained")
    for offset, label in ((-0.2, "exact"), (0.2, "noisy")):
        rows = result[label]["rows"]
        success = np.array([value(r, "success") for r in rows])
        low, high = np.array([value(r, "low") for r in rows]), np.array([value(r, "high") for r in rows])
        ax1.bar(np.arange(len(rows)) + offset, success, width=0.4, label=f"{label} stand-ins",
                yerr=[success - low, high - success], capsize=2)
    names = [r["strategy"] for r in result["exact"]["rows"]]
    ax1.set_xticks(np.arange(len(names)), names, rotation=35, ha="right", rotation_mode="anchor")
    ax1.set_xlabel("strategy")
    ax1.set_ylabel("flagged-task success (share)")
    ax1.set_title(f"{n} tasks x {len(seeds)} seeds; bars 95% Wilson (tasks as units)", fontsize=9)
    ax1.legend(loc="center left", fontsize=8)  # over the single models, whose bars are empty
    grid = result["grid"]
    image = ax2.imshow(np.array(grid["automated"], dtype=float), origin="lower", vmin=0, vmax=1, cmap="viridis")
    ax2.set_xticks(range(len(grid["strong"])), grid["strong"])
    ax2.set_yticks(range(len(grid["weak"])), grid["weak"])
    ax2.set_xlabel("strong capability")
    ax2.set_ylabel("weak capability")
    ax2.set_title(f"automated (k = 3) success, {n_grid} tasks, seed {seeds[0]}", fontsize=9)
    fig.colorbar(image, ax=ax2, label="flagged-task success (share)")
    return fig
