"""``python -m pomwu demo`` (zero-sum games with predicted contexts) and ``reproduce`` (Sioux Falls routing)."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
from icml25_shared.cli import RunContext

from pomwu.games import (
    RoutingGame,
    context_capacities,
    load_sioux_falls,
    load_sioux_falls_demands,
    random_zero_sum_games,
)
from pomwu.learners import POMWU, ContextualHedge, Hedge, MultiplicativeWeights, OptimisticHedge
from pomwu.predictors import NoisyOracle, OnlineLogisticRegression, OracleContext, make_covariates
from pomwu.simulate import RoutingRun, play_matrix_game, play_routing_game, predict_contexts
from pomwu.wardrop import wardrop_equilibrium

log = logging.getLogger(__name__)

LEARNERS: dict[str, type[MultiplicativeWeights]] = {
    "POMWU": POMWU,
    "cHedge": ContextualHedge,
    "OMWU": OptimisticHedge,
    "Hedge": Hedge,
}


# ---------------------------------------------------------------------------------------------
# demo: zero-sum 3x3 games per context
# ---------------------------------------------------------------------------------------------
def demo(ctx: RunContext) -> None:
    """m = 4 zero-sum 3x3 games; POMWU vs contextual Hedge vs OMWU under oracle, noisy and learned predictions."""
    m, T, eta = 4, (400 if ctx.quick else 4000), 0.25
    rng = ctx.rng
    game = random_zero_sum_games(m, 3, 3, rng=rng)
    contexts = rng.integers(m, size=T)
    covariates, _ = make_covariates(contexts, n_contexts=m, dim=4, noise=0.7, rng=rng)
    predictions = {
        "oracle": predict_contexts(OracleContext(n_contexts=m), contexts),
        "noisy p=0.2": predict_contexts(NoisyOracle(n_contexts=m, error_rate=0.2, seed=ctx.seed), contexts),
        "logistic": predict_contexts(OnlineLogisticRegression(n_contexts=m), contexts, covariates),
    }
    rows = [
        "| learner | predictions | accuracy | summed contextual regret | max duality gap (avg play) |",
        "|---|---|---|---|---|",
    ]
    curves = {}
    for pred_name, preds in predictions.items():
        for name in ("POMWU", "cHedge", "OMWU"):
            if name == "OMWU" and pred_name != "oracle":
                continue  # ignores contexts: one run is enough
            learner = LEARNERS[name](n_actions=[3, 3], n_contexts=m, step_size=eta)
            run = play_matrix_game(game, learner, contexts, preds, record_curve=True)
            label = name if name == "OMWU" else f"{name} ({pred_name})"
            curves[label] = run.regret_curve
            acc = "-" if name == "OMWU" else f"{np.mean(preds == contexts):.2f}"
            rows.append(
                f"| {name} | {'none' if name == 'OMWU' else pred_name} | {acc} | "
                f"{run.regret.contextual.sum():.1f} | {np.nanmax(run.duality_gaps):.4f} |"
            )
    ctx.write_table("\n".join(rows))

    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6, 4))
    for label, curve in curves.items():
        ax.plot(np.arange(1, T + 1), curve, label=label)
    ax.set_xlabel("round t")
    ax.set_yscale("symlog", linthresh=10)
    ax.set_ylabel("summed contextual regret (2 players)")
    ax.set_title(f"{m} zero-sum 3x3 games, eta={eta}")
    ax.legend(fontsize=7)
    ctx.save_figure(fig)


# ---------------------------------------------------------------------------------------------
# reproduce: Sioux Falls traffic routing
# ---------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class RoutingSetup:
    """Everything shared by the compared learners (same contexts, predictions and loss scale)."""

    game: RoutingGame
    contexts: np.ndarray
    predictions: np.ndarray
    loss_bounds: tuple[np.ndarray, np.ndarray]


def seed_streams(seed: int) -> tuple[np.random.Generator, np.random.Generator]:
    """Independent generators for a seed's setup (capacities, contexts, covariates, loss bounds) and its path
    sampling; spawned from one SeedSequence so no seed's stream is another seed's."""
    setup, sampling = np.random.SeedSequence(seed).spawn(2)
    return np.random.default_rng(setup), np.random.default_rng(sampling)


def sioux_falls_setup(*, T: int, n_contexts: int = 10, covariate_noise: float = 0.5, seed: int = 0) -> RoutingSetup:
    """Sessa et al. (2020) Sioux Falls setup plus covariates and online logistic-regression predictions."""
    rng = seed_streams(seed)[0]
    net = load_sioux_falls()
    caps = context_capacities(net, n_contexts, rng=rng)
    game = RoutingGame.from_od_matrix(net, load_sioux_falls_demands(), n_paths=5, capacities=caps)
    contexts = rng.integers(n_contexts, size=T)
    covariates, _ = make_covariates(contexts, n_contexts=n_contexts, dim=5, noise=covariate_noise, rng=rng)
    predictions = predict_contexts(OnlineLogisticRegression(n_contexts=n_contexts), contexts, covariates)
    return RoutingSetup(game, contexts, predictions, game.loss_bounds(100, rng=rng))


def _run(
    setup: RoutingSetup,
    name: str,
    source: str,
    *,
    eta: float,
    feedback: str,
    seed: int,
    progress: bool = False,
    file_under: str = "prediction",
) -> RoutingRun:
    """One learner on ``setup``; ``source`` is "predicted", "true" or "none" (a non-contextual learner).

    Path sampling uses the seed's sampling stream (:func:`seed_streams`), so every learner on a seed sees the
    same draws.
    """
    # file_under only exists for the contextual learners (it would be a no-op for Hedge and OMWU)
    extra = {"file_under": file_under} if source != "none" else {}
    learner = LEARNERS[name](n_actions=setup.game.n_actions, n_contexts=setup.game.n_contexts, step_size=eta, **extra)
    return play_routing_game(
        setup.game,
        learner,
        setup.contexts,
        setup.predictions if source == "predicted" else setup.contexts,
        loss_bounds=setup.loss_bounds,
        rng=seed_streams(seed)[1],
        feedback=feedback,
        progress=progress,
    )


def _routing_table(
    game: RoutingGame, setup: RoutingSetup, wardrop: list, *, eta: float, feedback: str, seed: int, progress: bool
) -> tuple[dict, dict]:
    """Run the six (learner, context source) configurations; return (metrics per label, runs per label)."""
    m, T = game.n_contexts, setup.contexts.size
    counts = np.bincount(setup.contexts, minlength=m)
    wardrop_cost = np.array([w.link_flows @ w.link_costs for w in wardrop])
    configs = [
        ("POMWU", "predicted"),
        ("cHedge", "predicted"),
        ("POMWU", "true"),
        ("cHedge", "true"),
        ("OMWU", "none"),
        ("Hedge", "none"),
    ]
    runs, results = {}, {}
    for name, source in configs:
        run = _run(setup, name, source, eta=eta, feedback=feedback, seed=seed, progress=progress)
        label = f"{name} ({source})" if source != "none" else name
        runs[label] = run
        dist = [
            np.abs(run.mean_link_flows[z] - wardrop[z].link_flows).sum() / wardrop[z].link_flows.sum()
            for z in np.flatnonzero(counts)
        ]
        results[label] = {
            "avg_travel_time": float(run.travel_time.mean()),
            "avg_travel_time_last_quarter": float(run.travel_time[3 * T // 4 :].mean()),
            "avg_raw_travel_time": float(run.raw_travel_time.mean()),
            "avg_congestion": float(run.congestion.mean()),
            "social_cost_over_wardrop": float(np.mean(run.social_cost / wardrop_cost[setup.contexts])),
            "mean_contextual_regret": float(run.regret.contextual.mean()),
            "mean_external_regret": float(run.regret.external.mean()),
            "wardrop_l1_distance": float(np.mean(dist)),
            "seconds": run.seconds,
        }
    return results, runs


def _checks(results: dict) -> dict:
    tt = {k: v["avg_travel_time"] for k, v in results.items()}
    return {
        "POMWU(pred) <= cHedge(pred)": tt["POMWU (predicted)"] <= tt["cHedge (predicted)"],
        "cHedge(pred) < Hedge": tt["cHedge (predicted)"] < tt["Hedge"],
        "POMWU(true) within 5% of cHedge(true)": abs(relative_difference(tt["POMWU (true)"], tt["cHedge (true)"]))
        <= 0.05,
    }


N_SPREAD_SEEDS = 5
FILINGS = ("prediction", "truth")  # which state receives a round's loss; see learners.MultiplicativeWeights


def _predicted_pair(
    setup: RoutingSetup, *, eta: float, feedback: str, seed: int, progress: bool, file_under: str = "prediction"
) -> dict:
    """Average normalised travel time of POMWU and cHedge with predicted contexts (same rng as the main table)."""
    return {
        name: float(
            _run(
                setup,
                name,
                "predicted",
                eta=eta,
                feedback=feedback,
                seed=seed,
                progress=progress,
                file_under=file_under,
            ).travel_time.mean()
        )
        for name in ("POMWU", "cHedge")
    }


def relative_difference(first: float | np.ndarray, second: float | np.ndarray) -> float | np.ndarray:
    """``(first - second) / |second|``: below 0 when ``first`` is smaller. It equals ``first / second - 1`` for
    positive values and keeps that sign meaning when the normalised travel times are negative (agents faster
    than the best random profile), where the plain ratio would flip it."""
    return (np.asarray(first) - np.asarray(second)) / np.abs(np.asarray(second))


def t_interval(values: np.ndarray, level: float = 0.95) -> tuple[float, float]:
    """Student-t confidence interval of the mean of ``values`` (paired differences over seeds)."""
    from scipy import stats

    v = np.asarray(values, dtype=np.float64)
    if v.size < 2:
        return float("-inf"), float("inf")
    half = stats.t.ppf(0.5 + level / 2, v.size - 1) * v.std(ddof=1) / np.sqrt(v.size)
    return float(v.mean() - half), float(v.mean() + half)


def verdict(ci: tuple[float, float]) -> str:
    """Rule fixed before the runs: POMWU(pred) <= cHedge(pred) holds robustly only if the whole 95% interval
    of the mean relative difference (POMWU - cHedge) / |cHedge| over seeds is <= 0."""
    if ci[1] <= 0:
        return "POMWU <= cHedge"
    if ci[0] > 0:
        return "POMWU > cHedge"
    return "tie (95% interval contains 0)"


def _relative_stats(rel: np.ndarray) -> dict:
    """Mean, sd and paired 95% t-interval of per-seed relative differences ``(first - second) / |second|``."""
    return {
        "mean_relative_difference": float(rel.mean()),
        "sd_relative_difference": float(rel.std(ddof=1)) if rel.size > 1 else 0.0,
        "ci95_relative_difference": list(t_interval(rel)),
    }


def _summarise(rows: list[dict]) -> dict:
    rel = np.array([r["relative_difference"] for r in rows])
    stats = _relative_stats(rel)
    return {
        "per_seed": rows,
        "mean_POMWU": float(np.mean([r["POMWU"] for r in rows])),
        "mean_cHedge": float(np.mean([r["cHedge"] for r in rows])),
        **stats,
        "seeds_with_POMWU_le_cHedge": int(np.sum(rel <= 0)),
        "verdict": verdict(tuple(stats["ci95_relative_difference"])),
    }


def _seed_spread(
    main: dict, setup0: RoutingSetup, *, T: int, eta: float, seeds: list[int], progress: bool
) -> dict[str, dict]:
    """POMWU(pred) vs cHedge(pred) over ``seeds``, both feedback models and both ways of filing losses.

    ``seeds[0]`` is the main table's seed (``setup0``; its ``file_under="prediction"`` numbers are taken from
    ``main``); every later seed redraws capacities, contexts, covariates, predictions, loss bounds and path
    sampling. Returns ``{file_under: {feedback: summary}}``.
    """
    per_seed = {f: {fb: [] for fb in main} for f in FILINGS}
    for i, seed in enumerate(seeds):
        setup = setup0 if i == 0 else sioux_falls_setup(T=T, seed=seed)
        acc = float(np.mean(setup.predictions == setup.contexts))
        for filing in FILINGS:
            for feedback in main:
                if i == 0 and filing == "prediction":
                    res = main[feedback]["results"]
                    pair = {name: res[f"{name} (predicted)"]["avg_travel_time"] for name in ("POMWU", "cHedge")}
                else:
                    pair = _predicted_pair(
                        setup, eta=eta, feedback=feedback, seed=seed, progress=progress, file_under=filing
                    )
                per_seed[filing][feedback].append(
                    {
                        "seed": seed,
                        "prediction_accuracy": acc,
                        **pair,
                        "relative_difference": float(relative_difference(pair["POMWU"], pair["cHedge"])),
                    }
                )
    return {filing: {fb: _summarise(rows) for fb, rows in blocks.items()} for filing, blocks in per_seed.items()}


def reproduce(ctx: RunContext) -> None:
    """Sioux Falls: travel time, congestion, regret and distance to Wardrop of POMWU vs cHedge vs OMWU/Hedge,
    with true and predicted contexts, under expected (mean-field) and sampled feedback."""
    T = 120 if ctx.quick else 20000
    eta = 15.0  # on losses rescaled to [0, 1]; see README ("step size")
    start = time.perf_counter()
    setup = sioux_falls_setup(T=T, seed=ctx.seed)
    game = setup.game
    m = game.n_contexts
    accuracy = float(np.mean(setup.predictions == setup.contexts))
    wardrop = [wardrop_equilibrium(game, z, tol=1e-2 if ctx.quick else 1e-4) for z in range(m)]
    out, all_runs = {}, {}
    for feedback in ("expected", "sampled"):
        results, runs = _routing_table(
            game, setup, wardrop, eta=eta, feedback=feedback, seed=ctx.seed, progress=not ctx.quick
        )
        out[feedback] = {"results": results, "checks": _checks(results)}
        all_runs[feedback] = runs
    # Step-size sensitivity of the POMWU vs cHedge comparison (predicted contexts, expected feedback).
    sensitivity = {
        f"{name} (predicted), eta={alt:g}": tt
        for alt in (5.0,)
        for name, tt in _predicted_pair(
            setup, eta=alt, feedback="expected", seed=ctx.seed, progress=not ctx.quick
        ).items()
    }
    for name in ("POMWU", "cHedge"):
        sensitivity[f"{name} (predicted), eta={eta:g}"] = out["expected"]["results"][f"{name} (predicted)"][
            "avg_travel_time"
        ]
    # Seed spread of the same comparison: every seed redraws capacities, contexts, covariates, predictions,
    # loss bounds and path sampling; the first seed is the main table's.
    # Both filings (loss to the predicted state, as in the main table, or to the true context revealed after
    # the round) are run on every seed; the main table keeps "prediction" whatever the outcome (fixed in advance).
    seeds = [ctx.seed + i for i in range(N_SPREAD_SEEDS)]
    spreads = _seed_spread(out, setup, T=T, eta=eta, seeds=seeds, progress=not ctx.quick)
    spread = spreads["prediction"]
    ctx.write_json(
        {
            "step_size_sensitivity_expected_feedback": sensitivity,
            "seed_spread_predicted": spread,
            "seed_spread_predicted_file_under_truth": spreads["truth"],
            "setup": {
                "network": "Sioux Falls",
                "n_agents": game.n_agents,
                "n_links": game.network.n_links,
                "n_contexts": m,
                "rounds": T,
                "step_size": eta,
                "max_paths": int(game.n_actions.max()),
                "total_paths": int(game.n_actions.sum()),
                "prediction_accuracy": accuracy,
                "seed": ctx.seed,
                "quick": ctx.quick,
                "wardrop_relative_gaps": [w.relative_gap for w in wardrop],
            },
            **out,
            "seconds_total": time.perf_counter() - start,
        }
    )
    rows = []
    for feedback, block in out.items():
        rows += [
            f"**{feedback} feedback** (prediction accuracy {accuracy:.3f}, T = {T}, eta = {eta})",
            "",
            "| learner (contexts) | avg normalised travel time | last quarter | avg travel time (all agents) | "
            "avg congestion | social cost / Wardrop | contextual regret / agent | L1 distance to Wardrop |",
            "|---|---|---|---|---|---|---|---|",
        ]
        rows += [
            f"| {k} | {v['avg_travel_time']:.5f} | {v['avg_travel_time_last_quarter']:.5f} | "
            f"{v['avg_raw_travel_time']:.3f} | "
            f"{v['avg_congestion']:.4f} | {v['social_cost_over_wardrop']:.4f} | "
            f"{v['mean_contextual_regret']:.2f} | {v['wardrop_l1_distance']:.3f} |"
            for k, v in block["results"].items()
        ]
        rows += ["", "checks: " + ", ".join(f"{k}: {v}" for k, v in block["checks"].items()), ""]
    rows += [
        "**step size** (expected feedback, predicted contexts): avg normalised travel time",
        "",
        "| learner, step size | avg normalised travel time |",
        "|---|---|",
    ]
    rows += [f"| {k} | {v:.5f} |" for k, v in sorted(sensitivity.items())]
    rows += [
        "",
        f"**seed spread** (predicted contexts, eta = {eta:g}): avg normalised travel time; "
        "relative difference = (POMWU - cHedge) / |cHedge|; losses filed under the prediction (main table) or under "
        "the true context revealed after the round",
        "",
        "| losses filed under | feedback | seed | prediction accuracy | POMWU (predicted) | cHedge (predicted) "
        "| relative difference |",
        "|---|---|---|---|---|---|---|",
    ]
    for filing, blocks in spreads.items():
        for feedback, block in blocks.items():
            rows += [
                f"| {filing} | {feedback} | {r['seed']} | {r['prediction_accuracy']:.3f} | {r['POMWU']:.5f} | "
                f"{r['cHedge']:.5f} | {r['relative_difference']:+.4f} |"
                for r in block["per_seed"]
            ]
            lo, hi = block["ci95_relative_difference"]
            rows += [
                f"| {filing} | {feedback} | mean | | {block['mean_POMWU']:.5f} | {block['mean_cHedge']:.5f} | "
                f"{block['mean_relative_difference']:+.4f} (sd {block['sd_relative_difference']:.4f}, 95% CI "
                f"[{lo:+.4f}, {hi:+.4f}]): {block['verdict']} |"
            ]
    ctx.write_table("\n".join(rows))

    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 3, figsize=(16, 4), sharey=False)
    t = np.arange(1, T + 1)
    for ax, (feedback, runs) in zip(axes[:2], all_runs.items(), strict=True):
        for label, run in runs.items():
            ax.plot(t, np.cumsum(run.travel_time) / t, "--" if "true" in label else "-", label=label)
        ax.set_title(f"{feedback} feedback")
        ax.set_xlabel("round t")
        ax.set_xscale("log")
        ax.set_ylabel("time-averaged normalised travel time")
    axes[0].legend(fontsize=7)
    ax = axes[2]
    combos = [(filing, feedback, block) for filing, blocks in spreads.items() for feedback, block in blocks.items()]
    width = 0.8 / len(combos)
    for j, (filing, feedback, block) in enumerate(combos):
        rel = [100 * r["relative_difference"] for r in block["per_seed"]]
        ax.bar(
            np.arange(len(rel)) + width * (j - (len(combos) - 1) / 2),
            rel,
            width=width,
            label=f"{feedback} feedback, filed under {filing}",
        )
    ax.axhline(0.0, color="k", lw=0.8)
    ax.set_xticks(np.arange(len(seeds)), [f"seed {s}" for s in seeds])
    ax.set_ylabel("travel time, (POMWU - cHedge) / |cHedge| (%)")
    ax.set_title(f"POMWU vs cHedge (predicted), eta={eta:g}; < 0: POMWU better", fontsize=10)
    ax.legend(fontsize=7)
    fig.suptitle(
        f"Sioux Falls, {game.n_agents} agents, {m} contexts, seed {ctx.seed} (prediction accuracy {accuracy:.2f})"
    )
    ctx.save_figure(fig)


# ---------------------------------------------------------------------------------------------
# reproduce --tune-step-size: every learner at its own step size, tuned on seeds the test never uses
# ---------------------------------------------------------------------------------------------
FEEDBACKS = ("expected", "sampled")
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
                    _run(setup, name, TUNED_LEARNERS[name], eta=eta, feedback=feedback, seed=seed).travel_time.mean()
                    for seed, setup in setups.items()
                ]
            )
        )

    return objective


def tune_step_sizes(
    *, T: int, seeds: Sequence[int], grid: Sequence[float] = TUNE_GRID, max_extensions: int = 3
) -> dict[str, dict[str, StepSizeSearch]]:
    """``{feedback: {learner: search}}`` for the learners of :data:`TUNED_LEARNERS` on the ``seeds`` setups."""
    setups = {seed: sioux_falls_setup(T=T, seed=seed) for seed in seeds}
    return {
        feedback: {
            name: search_step_size(_tuning_objective(setups, name, feedback), grid, max_extensions=max_extensions)
            for name in TUNED_LEARNERS
        }
        for feedback in FEEDBACKS
    }


@dataclass(frozen=True)
class Clause:
    """A part of issue acceptance 3: it holds if the whole 95% t-interval of the mean over seeds of
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
    rel = np.array([relative_difference(r[clause.first], r[clause.second]) for r in rows])
    stats = _relative_stats(rel)
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
    for seed in seeds:
        setup = sioux_falls_setup(T=T, seed=seed)
        acc = float(np.mean(setup.predictions == setup.contexts))
        for feedback, etas in step_sizes.items():
            row: dict = {"seed": seed, "prediction_accuracy": acc}
            for name, source in TEST_CONFIGS:
                run = _run(setup, name, source, eta=etas[name], feedback=feedback, seed=seed)
                row[_label(name, source)] = float(run.travel_time.mean())
            rows[feedback].append(row)
    return {
        feedback: {"per_seed": r, "clauses": {c.name: _clause_summary(r, c) for c in CLAUSES}}
        for feedback, r in rows.items()
    }


def reproduce_tuned(ctx: RunContext) -> None:
    """Issue acceptance 3 with a step size tuned per (learner, feedback model) on held-out seeds; protocol in the
    README ("Step sizes tuned per learner"). Writes ``reproduce_tuned.json``, ``.md`` and ``.png``."""
    T = 120 if ctx.quick else 20000
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
