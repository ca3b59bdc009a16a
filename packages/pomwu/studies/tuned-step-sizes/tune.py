"""Each learner at its own step size: tuned on seeds 10-11, tested on seeds 0-4 (Sioux Falls).

The protocol is in ``../tuned-step-sizes.md``. Run from the repository root::

    python packages/pomwu/studies/tuned-step-sizes/tune.py [--quick] [--out packages/pomwu/results]

Writes ``reproduce_tuned.json``, ``.md`` and ``.png`` (default folder ``out/pomwu``).
"""

from __future__ import annotations

import argparse
import logging
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from icml25_shared.cli import RunContext, progress, seed_everything
from icml25_shared.stats import mean_sd, paired_difference

from pomwu.experiments import FEEDBACKS, N_SPREAD_SEEDS, RoutingSetup, run_learner, sioux_falls_setup

log = logging.getLogger(__name__)


def relative_difference(first, second):
    """``(first - second) / |second|``: below 0 when ``first`` is smaller, also for negative values."""
    return (np.asarray(first) - np.asarray(second)) / np.abs(np.asarray(second))


def _relative_stats(first: np.ndarray, second: np.ndarray) -> dict:
    """Mean, sd and paired 95% t-interval of per-seed ``(first - second) / |second|``."""
    diff = paired_difference(first, second, relative=True)
    return {
        "mean_relative_difference": diff.estimate,
        "sd_relative_difference": mean_sd(relative_difference(first, second)).sd,
        "ci95_relative_difference": [diff.low, diff.high],
    }


# ---------------------------------------------------------------------------------------------
TUNE_GRID = tuple(15.0 * 2.0**k for k in range(-2, 4))  # 3.75, 7.5, 15, 30, 60, 120 (15 = the fixed-eta runs)
TUNED_LEARNERS = {"POMWU": "predicted", "cHedge": "predicted", "Hedge": "none"}  # learner -> contexts when tuned
TUNING_SEED_OFFSETS = (10, 11)  # tuning seeds seed+10, seed+11; test seeds seed+0..4 (the seed spread's)
TEST_CONFIGS = (
    ("POMWU", "predicted"),
    ("cHedge", "predicted"),
    ("Hedge", "none"),
    ("POMWU", "true"),
    ("cHedge", "true"),
)


@dataclass(frozen=True)
class StepSizeSearch:
    """Objective (mean over the tuning seeds of the average normalised travel time) per step size."""

    step_sizes: tuple[float, ...]  # increasing
    values: tuple[float, ...]
    best: float
    interior: bool  # the best step size has evaluated neighbours on both sides


def search_step_size(
    objective: Callable[[float], float], grid: Sequence[float], *, factor: float = 2.0, max_extensions: int = 3
) -> StepSizeSearch:
    """Minimise ``objective`` over ``grid``; while the minimiser is an end of the evaluated grid, also evaluate the
    next point beyond that end (times or over ``factor``), at most ``max_extensions`` times, so that the chosen
    step size is interior whenever the budget allows."""
    if len(grid) == 0 or min(grid) <= 0 or factor <= 1 or max_extensions < 0:
        raise ValueError(
            f"need a non-empty grid of positive step sizes, factor > 1, max_extensions >= 0; got grid={list(grid)}, "
            f"factor={factor}, max_extensions={max_extensions}"
        )
    values = {float(eta): float(objective(float(eta))) for eta in grid}
    for _ in range(max_extensions):
        etas = sorted(values)
        best = min(etas, key=values.__getitem__)
        if best == etas[0]:
            nxt = best / factor
        elif best == etas[-1]:
            nxt = best * factor
        else:
            break
        values[nxt] = float(objective(nxt))
    etas = sorted(values)
    best = min(etas, key=values.__getitem__)
    return StepSizeSearch(tuple(etas), tuple(values[e] for e in etas), best, etas[0] < best < etas[-1])


def _tuning_objective(setups: dict[int, RoutingSetup], name: str, feedback: str) -> Callable[[float], float]:
    def objective(eta: float) -> float:
        return float(
            np.mean(
                [
                    run_learner(setup, name, TUNED_LEARNERS[name], eta=eta, feedback=feedback).travel_time.mean()
                    for setup in setups.values()
                ]
            )
        )

    return objective


def tune_step_sizes(
    *, T: int, seeds: Sequence[int], grid: Sequence[float] = TUNE_GRID, max_extensions: int = 3
) -> dict[str, dict[str, StepSizeSearch]]:
    """``{feedback: {learner: search}}`` for the learners of :data:`TUNED_LEARNERS` on the ``seeds`` setups."""
    setups = {seed: sioux_falls_setup(T=T, random_state=seed) for seed in seeds}
    return {
        feedback: {
            name: search_step_size(_tuning_objective(setups, name, feedback), grid, max_extensions=max_extensions)
            for name in TUNED_LEARNERS
        }
        for feedback in FEEDBACKS
    }


@dataclass(frozen=True)
class Clause:
    """A clause of the comparison: it holds if the whole 95% t-interval of the mean over seeds of
    ``(first - second) / |second|`` lies in ``[low, high]``; "plain" compares the means over seeds the same way."""

    name: str
    first: str
    second: str
    low: float
    high: float


CLAUSES = (
    Clause("POMWU(pred) <= cHedge(pred)", "POMWU (predicted)", "cHedge (predicted)", -np.inf, 0.0),
    Clause("cHedge(pred) < Hedge", "cHedge (predicted)", "Hedge", -np.inf, 0.0),
    Clause("POMWU(true) within 5% of cHedge(true)", "POMWU (true)", "cHedge (true)", -0.05, 0.05),
)


def _label(name: str, source: str) -> str:
    return name if source == "none" else f"{name} ({source})"


def _clause_summary(rows: list[dict], clause: Clause) -> dict:
    a = np.array([r[clause.first] for r in rows])
    b = np.array([r[clause.second] for r in rows])
    rel = relative_difference(a, b)
    stats = _relative_stats(a, b)
    lo, hi = stats["ci95_relative_difference"]
    mean_first = float(np.mean([r[clause.first] for r in rows]))
    mean_second = float(np.mean([r[clause.second] for r in rows]))
    plain = float(relative_difference(mean_first, mean_second))
    return {
        "first": clause.first,
        "second": clause.second,
        "band": [clause.low, clause.high],
        f"mean {clause.first}": mean_first,
        f"mean {clause.second}": mean_second,
        **stats,
        "seeds_first_le_second": int(np.sum(rel <= 0)),
        "holds": bool(clause.low <= lo and hi <= clause.high),
        "plain_mean_relative_difference": plain,
        "holds_on_plain_means": bool(clause.low <= plain <= clause.high),
    }


def evaluate_tuned_step_sizes(step_sizes: dict[str, dict[str, float]], *, T: int, seeds: Sequence[int]) -> dict:
    """Run :data:`TEST_CONFIGS` on the ``seeds`` setups, every learner at ``step_sizes[feedback][learner]``
    (tuned with predicted contexts, also used with true ones); per-seed rows and :data:`CLAUSES` summaries."""
    rows: dict[str, list[dict]] = {feedback: [] for feedback in step_sizes}
    for seed in progress(seeds, desc="test seeds"):
        setup = sioux_falls_setup(T=T, random_state=seed)
        acc = float(np.mean(setup.predictions == setup.contexts))
        for feedback, etas in step_sizes.items():
            row: dict = {"seed": seed, "prediction_accuracy": acc}
            for name, source in TEST_CONFIGS:
                run = run_learner(setup, name, source, eta=etas[name], feedback=feedback)
                row[_label(name, source)] = float(run.travel_time.mean())
            rows[feedback].append(row)
    return {
        feedback: {"per_seed": r, "clauses": {c.name: _clause_summary(r, c) for c in CLAUSES}}
        for feedback, r in rows.items()
    }


def reproduce_tuned(ctx: RunContext) -> None:
    """The comparison with a step size tuned per (learner, feedback model) on held-out seeds; protocol in the
    study ``tuned-step-sizes.md``. Writes ``reproduce_tuned.json``, ``.md`` and ``.png``."""
    T = 60 if ctx.quick else 20000
    grid = (7.5, 15.0, 30.0) if ctx.quick else TUNE_GRID
    tuning_seeds = [ctx.seed + k for k in TUNING_SEED_OFFSETS[: 1 if ctx.quick else None]]
    test_seeds = [ctx.seed + i for i in range(2 if ctx.quick else N_SPREAD_SEEDS)]
    if set(tuning_seeds) & set(test_seeds):
        raise ValueError(f"tuning seeds {tuning_seeds} overlap test seeds {test_seeds}")
    start = time.perf_counter()
    searches = tune_step_sizes(T=T, seeds=tuning_seeds, grid=grid, max_extensions=1 if ctx.quick else 3)
    step_sizes = {fb: {name: s.best for name, s in by.items()} for fb, by in searches.items()}
    payload = {
        "protocol": {
            "rounds": T,
            "grid": list(grid),
            "tuning_seeds": tuning_seeds,
            "test_seeds": test_seeds,
            "objective": "average normalised travel time, predicted contexts (Hedge: none), file_under=prediction",
            "quick": ctx.quick,
        },
        "tuning": searches,
        "step_sizes": step_sizes,
        "tuning_seconds": time.perf_counter() - start,
    }
    ctx.write_json(payload, name="reproduce_tuned")  # kept if the test phase does not finish
    log.info("tuned step sizes: %s", step_sizes)
    test = evaluate_tuned_step_sizes(step_sizes, T=T, seeds=test_seeds)
    verdicts = {c.name: all(test[fb]["clauses"][c.name]["holds"] for fb in test) for c in CLAUSES}
    ctx.write_json(
        {
            **payload,
            "test": test,
            "holds_in_both_feedback_models": verdicts,
            "seconds_total": time.perf_counter() - start,
        },
        name="reproduce_tuned",
    )
    ctx.write_table(_tuned_table(searches, test, verdicts, T=T), name="reproduce_tuned")
    _tuned_figure(ctx, searches, test)


def _tuned_table(searches: dict, test: dict, verdicts: dict, *, T: int) -> str:
    etas = sorted({e for by in searches.values() for s in by.values() for e in s.step_sizes})
    rows = [
        f"**tuning** (T = {T}; mean over the tuning seeds of the average normalised travel time; chosen step size "
        "in bold, * = at the end of the evaluated grid)",
        "",
        "| feedback | learner | " + " | ".join(f"eta={e:g}" for e in etas) + " | chosen |",
        "|---|---|" + "---|" * (len(etas) + 1),
    ]
    for feedback, by in searches.items():
        for name, s in by.items():
            vals = dict(zip(s.step_sizes, s.values, strict=True))
            cells = ["" if e not in vals else (f"**{vals[e]:.5f}**" if e == s.best else f"{vals[e]:.5f}") for e in etas]
            rows.append(f"| {feedback} | {name} | " + " | ".join(cells) + f" | {s.best:g}{'' if s.interior else '*'} |")
    labels = [_label(n, src) for n, src in TEST_CONFIGS]
    for feedback, block in test.items():
        etas_fb = {name: s.best for name, s in searches[feedback].items()}
        rows += [
            "",
            f"**test, {feedback} feedback** (step sizes " + ", ".join(f"{n} {e:g}" for n, e in etas_fb.items()) + ")",
            "",
            "| seed | prediction accuracy | " + " | ".join(labels) + " |",
            "|---|---|" + "---|" * len(labels),
        ]
        rows += [
            f"| {r['seed']} | {r['prediction_accuracy']:.3f} | " + " | ".join(f"{r[k]:.5f}" for k in labels) + " |"
            for r in block["per_seed"]
        ]
    rows += [
        "",
        "**clauses** (relative difference = (first - second) / |second| per seed; holds = whole 95% t-interval in the band)",
        "",
        "| clause | feedback | mean rel. diff. (sd) | 95% CI | seeds first <= second | holds | "
        "plain means: rel. diff. | holds on plain means |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for c in CLAUSES:
        for feedback, block in test.items():
            v = block["clauses"][c.name]
            lo, hi = v["ci95_relative_difference"]
            rows.append(
                f"| {c.name} | {feedback} | {v['mean_relative_difference']:+.4f} ({v['sd_relative_difference']:.4f}) | "
                f"[{lo:+.4f}, {hi:+.4f}] | {v['seeds_first_le_second']}/{len(block['per_seed'])} | {v['holds']} | "
                f"{v['plain_mean_relative_difference']:+.4f} | {v['holds_on_plain_means']} |"
            )
    rows += ["", "holds in both feedback models: " + ", ".join(f"{k}: {v}" for k, v in verdicts.items())]
    return "\n".join(rows)


def _tuned_figure(ctx: RunContext, searches: dict, test: dict) -> None:
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 3, figsize=(16, 4), layout="constrained")  # no label runs into a neighbour
    for ax, (feedback, by) in zip(axes[:2], searches.items(), strict=True):
        for name, s in by.items():
            (line,) = ax.plot(s.step_sizes, s.values, "o-", label=name)
            ax.plot([s.best], [min(s.values)], "*", ms=14, color=line.get_color())
        ax.set_xscale("log")
        ax.set_xlabel("step size eta")
        ax.set_ylabel("avg normalised travel time")
        ax.set_title(f"tuning seeds, {feedback} feedback (star: chosen)", fontsize=10)
        ax.legend(fontsize=7)
    ax = axes[2]
    combos = [(c, fb) for c in CLAUSES[:2] for fb in test]
    width = 0.8 / len(combos)
    seeds = [r["seed"] for r in next(iter(test.values()))["per_seed"]]
    for j, (c, fb) in enumerate(combos):
        rel = [100 * float(relative_difference(r[c.first], r[c.second])) for r in test[fb]["per_seed"]]
        ax.bar(np.arange(len(rel)) + width * (j - (len(combos) - 1) / 2), rel, width=width, label=f"{c.name}, {fb}")
    ax.axhline(0.0, color="k", lw=0.8)
    ax.set_xticks(np.arange(len(seeds)), [f"seed {s}" for s in seeds])
    ax.set_ylabel("(first - second) / |second| (%)")
    ax.set_title("test seeds, tuned step sizes; < 0: clause holds on that seed", fontsize=10)
    ax.legend(fontsize=7)
    ctx.save_figure(fig, name="reproduce_tuned")


def main(argv: list[str] | None = None) -> int:
    """Run the study; ``--quick`` for a seconds-long check of the code path."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", type=Path, default=Path("out/pomwu"))
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO)
    import matplotlib

    matplotlib.use("Agg")
    ctx = RunContext(
        package="pomwu",
        command="reproduce_tuned",
        out=args.out,
        seed=args.seed,
        quick=args.quick,
        rng=seed_everything(args.seed),
    )
    reproduce_tuned(ctx)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
