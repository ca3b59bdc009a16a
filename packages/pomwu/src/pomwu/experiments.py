"""``python -m pomwu demo`` (zero-sum games with predicted contexts) and ``reproduce`` (Sioux Falls routing)."""

from __future__ import annotations

import logging
import time
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
from pomwu.simulate import play_matrix_game, play_routing_game, predict_contexts
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


def sioux_falls_setup(*, T: int, n_contexts: int = 10, covariate_noise: float = 0.5, seed: int = 0) -> RoutingSetup:
    """Sessa et al. (2020) Sioux Falls setup plus covariates and online logistic-regression predictions."""
    rng = np.random.default_rng(seed)
    net = load_sioux_falls()
    caps = context_capacities(net, n_contexts, rng=rng)
    game = RoutingGame.from_od_matrix(net, load_sioux_falls_demands(), n_paths=5, capacities=caps)
    contexts = rng.integers(n_contexts, size=T)
    covariates, _ = make_covariates(contexts, n_contexts=n_contexts, dim=5, noise=covariate_noise, rng=rng)
    predictions = predict_contexts(OnlineLogisticRegression(n_contexts=n_contexts), contexts, covariates)
    return RoutingSetup(game, contexts, predictions, game.loss_bounds(100, rng=rng))


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
        learner = LEARNERS[name](n_actions=game.n_actions, n_contexts=m, step_size=eta)
        preds = setup.predictions if source == "predicted" else setup.contexts
        run = play_routing_game(
            game,
            learner,
            setup.contexts,
            preds,
            loss_bounds=setup.loss_bounds,
            rng=np.random.default_rng(seed + 1),
            feedback=feedback,
            progress=progress,
        )
        label = f"{name} ({source})" if source != "none" else name
        runs[label] = run
        dist = [
            np.abs(run.mean_link_flows[z] - wardrop[z].link_flows).sum() / wardrop[z].link_flows.sum()
            for z in np.flatnonzero(counts)
        ]
        results[label] = {
            "avg_travel_time": float(run.travel_time.mean()),
            "avg_travel_time_last_quarter": float(run.travel_time[3 * T // 4 :].mean()),
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
        "POMWU(true) within 5% of cHedge(true)": abs(tt["POMWU (true)"] / tt["cHedge (true)"] - 1) <= 0.05,
    }


N_SPREAD_SEEDS = 5
FILINGS = ("prediction", "truth")  # which state receives a round's loss; see learners.MultiplicativeWeights


def _predicted_pair(
    setup: RoutingSetup, *, eta: float, feedback: str, seed: int, progress: bool, file_under: str = "prediction"
) -> dict:
    """Average normalised travel time of POMWU and cHedge with predicted contexts (same rng as the main table)."""
    out = {}
    for name in ("POMWU", "cHedge"):
        learner = LEARNERS[name](
            n_actions=setup.game.n_actions, n_contexts=setup.game.n_contexts, step_size=eta, file_under=file_under
        )
        run = play_routing_game(
            setup.game,
            learner,
            setup.contexts,
            setup.predictions,
            loss_bounds=setup.loss_bounds,
            rng=np.random.default_rng(seed + 1),
            feedback=feedback,
            progress=progress,
        )
        out[name] = float(run.travel_time.mean())
    return out


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
    of the mean relative difference POMWU / cHedge - 1 over seeds is <= 0."""
    if ci[1] <= 0:
        return "POMWU <= cHedge"
    if ci[0] > 0:
        return "POMWU > cHedge"
    return "tie (95% interval contains 0)"


def _summarise(rows: list[dict]) -> dict:
    rel = np.array([r["relative_difference"] for r in rows])
    ci = t_interval(rel)
    return {
        "per_seed": rows,
        "mean_POMWU": float(np.mean([r["POMWU"] for r in rows])),
        "mean_cHedge": float(np.mean([r["cHedge"] for r in rows])),
        "mean_relative_difference": float(rel.mean()),
        "sd_relative_difference": float(rel.std(ddof=1)) if rel.size > 1 else 0.0,
        "ci95_relative_difference": list(ci),
        "seeds_with_POMWU_le_cHedge": int(np.sum(rel <= 0)),
        "verdict": verdict(ci),
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
                        "relative_difference": pair["POMWU"] / pair["cHedge"] - 1,
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
            "| learner (contexts) | avg normalised travel time | last quarter | avg congestion | "
            "social cost / Wardrop | contextual regret / agent | L1 distance to Wardrop |",
            "|---|---|---|---|---|---|---|",
        ]
        rows += [
            f"| {k} | {v['avg_travel_time']:.5f} | {v['avg_travel_time_last_quarter']:.5f} | "
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
        "relative difference = POMWU / cHedge - 1; losses filed under the prediction (main table) or under "
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
    ax.set_ylabel("travel time, POMWU / cHedge - 1 (%)")
    ax.set_title(f"POMWU vs cHedge (predicted), eta={eta:g}; < 0: POMWU better", fontsize=10)
    ax.legend(fontsize=7)
    fig.suptitle(
        f"Sioux Falls, {game.n_agents} agents, {m} contexts, seed {ctx.seed} (prediction accuracy {accuracy:.2f})"
    )
    ctx.save_figure(fig)
