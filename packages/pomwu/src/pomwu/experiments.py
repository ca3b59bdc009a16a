"""The ``demo`` and ``reproduce`` commands of ``python -m pomwu``.

``demo`` plays four zero-sum 3x3 games with predicted contexts; ``reproduce`` runs the Sioux Falls
traffic-routing experiment and compares POMWU with contextual Hedge over five seeds (paired
differences with 95% Student-t intervals, :func:`icml25_shared.stats.paired_difference`).
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass
from typing import Any

import numpy as np
from icml25_shared.cli import RunContext, progress
from icml25_shared.random import spawn
from icml25_shared.stats import mean_sd, paired_difference
from icml25_shared.tables import markdown_table

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
"""Learner classes by the short names used in the tables."""

N_SPREAD_SEEDS = 5
"""Seeds of the POMWU vs cHedge comparison in ``reproduce`` (``--seed`` to ``--seed + 4``)."""

FILINGS = ("prediction", "truth")
"""Which state receives a round's loss (``file_under`` of the contextual learners)."""

FEEDBACKS = ("expected", "sampled")
"""Feedback models of :func:`pomwu.play_routing_game`."""


# ---------------------------------------------------------------------------------------------
# demo: zero-sum 3x3 games per context
# ---------------------------------------------------------------------------------------------
def demo(ctx: RunContext) -> None:
    """Play four zero-sum 3x3 games with oracle, noisy and learned context predictions.

    Compares POMWU, contextual Hedge and (context-blind) optimistic Hedge; writes ``demo.md`` (summed
    contextual regret and the largest per-context duality gap of average play) and ``demo.png``
    (regret curves).

    Parameters
    ----------
    ctx : icml25_shared.cli.RunContext
        Output folder, seed and ``quick`` flag (T = 400 instead of 4000).
    """
    m, T, eta = 4, (400 if ctx.quick else 4000), 0.25
    rng = ctx.rng
    game = random_zero_sum_games(m, 3, 3, rng=rng)
    contexts = rng.integers(m, size=T)
    covariates, _ = make_covariates(contexts, n_contexts=m, dim=4, noise=0.7, rng=rng)
    predictions = {
        "oracle": predict_contexts(OracleContext(n_contexts=m), contexts),
        "noisy p=0.2": predict_contexts(NoisyOracle(n_contexts=m, error_rate=0.2, random_state=ctx.seed), contexts),
        "logistic": predict_contexts(OnlineLogisticRegression(n_contexts=m), contexts, covariates),
    }
    configs = [
        (pred_name, name)
        for pred_name in predictions
        for name in ("POMWU", "cHedge", "OMWU")
        if name != "OMWU" or pred_name == "oracle"  # OMWU ignores contexts: one run is enough
    ]
    rows, curves = [], {}
    for pred_name, name in progress(configs, desc="demo", enabled=not ctx.quick):
        preds = predictions[pred_name]
        learner = LEARNERS[name](n_actions=[3, 3], n_contexts=m, step_size=eta)
        run = play_matrix_game(game, learner, contexts, preds, record_curve=True)
        curves[name if name == "OMWU" else f"{name} ({pred_name})"] = run.regret_curve
        rows.append(
            [
                name,
                "none" if name == "OMWU" else pred_name,
                "-" if name == "OMWU" else f"{np.mean(preds == contexts):.2f}",
                f"{run.regret.contextual.sum():.1f}",
                f"{np.nanmax(run.duality_gaps):.4f}",
            ]
        )
    headers = ["learner", "predictions", "accuracy", "summed contextual regret", "max duality gap (avg play)"]
    ctx.write_table(rows, headers=headers)

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
    """Everything the compared learners share on one seed.

    Attributes
    ----------
    game : RoutingGame
        Sioux Falls with one capacity vector per context.
    contexts : ndarray of int, shape (T,)
        True context of every round.
    predictions : ndarray of int, shape (T,)
        Online logistic-regression predictions of ``contexts``.
    loss_bounds : tuple of two ndarrays, shape (n_agents,)
        Per-agent min and max travel time over 100 random joint actions (the loss rescaling).
    random_state : int
        The seed; its second :func:`icml25_shared.random.spawn` stream drives path sampling.
    """

    game: RoutingGame
    contexts: np.ndarray
    predictions: np.ndarray
    loss_bounds: tuple[np.ndarray, np.ndarray]
    random_state: int = 0


def sioux_falls_setup(
    *, T: int, n_contexts: int = 10, covariate_noise: float = 0.5, random_state: int = 0
) -> RoutingSetup:
    """Build the Sessa et al. (2020) Sioux Falls setup with covariates and predicted contexts.

    Parameters
    ----------
    T : int
        Number of rounds.
    n_contexts : int, default 10
        Capacity contexts, each the network's capacities scaled elementwise by U[0.7, 1.2].
    covariate_noise : float, default 0.5
        Standard deviation of the 5-dimensional Gaussian covariates around their context's mean.
    random_state : int, default 0
        Seed. ``spawn(random_state, 2)`` gives two independent streams: the first draws the
        capacities, contexts, covariates and loss bounds, the second the path sampling.

    Returns
    -------
    RoutingSetup
        528 agents, 76 links, ``n_contexts`` contexts, ``T`` rounds.
    """
    rng = spawn(random_state, 2)[0]
    net = load_sioux_falls()
    caps = context_capacities(net, n_contexts, rng=rng)
    game = RoutingGame.from_od_matrix(net, load_sioux_falls_demands(), n_paths=5, capacities=caps)
    contexts = rng.integers(n_contexts, size=T)
    covariates, _ = make_covariates(contexts, n_contexts=n_contexts, dim=5, noise=covariate_noise, rng=rng)
    predictions = predict_contexts(OnlineLogisticRegression(n_contexts=n_contexts), contexts, covariates)
    return RoutingSetup(game, contexts, predictions, game.loss_bounds(100, rng=rng), random_state)


def run_learner(
    setup: RoutingSetup,
    name: str,
    source: str,
    *,
    eta: float,
    feedback: str,
    progress: bool = False,
    file_under: str = "prediction",
    regret_checkpoints: tuple[int, ...] = (),
) -> RoutingRun:
    """Play one learner on ``setup``.

    Parameters
    ----------
    setup : RoutingSetup
        The seed's game, contexts, predictions and loss bounds.
    name : {"POMWU", "cHedge", "OMWU", "Hedge"}
        The learner (see :data:`LEARNERS`).
    source : {"predicted", "true", "none"}
        Contexts given to the learner; "none" for the context-blind OMWU and Hedge.
    eta : float
        Step size on the rescaled losses.
    feedback : {"expected", "sampled"}
        Feedback model of :func:`pomwu.play_routing_game`.
    progress : bool, default False
        Show a progress bar over the rounds.
    file_under : {"prediction", "truth"}, default "prediction"
        Where a contextual learner files a round's loss.
    regret_checkpoints : tuple of int, default ()
        Rounds after which the summed contextual regret is recorded (see :func:`pomwu.play_routing_game`).

    Returns
    -------
    RoutingRun
        The run. Path sampling uses the seed's second spawned stream, so every learner on a seed
        sees the same draws.
    """
    extra: dict[str, Any] = {"file_under": file_under} if source != "none" else {}  # context-blind: no filing
    learner = LEARNERS[name](
        n_actions=setup.game.n_actions.tolist(), n_contexts=setup.game.n_contexts, step_size=eta, **extra
    )
    return play_routing_game(
        setup.game,
        learner,
        setup.contexts,
        setup.predictions if source == "predicted" else setup.contexts,
        loss_bounds=setup.loss_bounds,
        rng=spawn(setup.random_state, 2)[1],
        feedback=feedback,
        progress=progress,
        regret_checkpoints=regret_checkpoints,
    )


CONFIGS = (
    ("POMWU", "predicted"),
    ("cHedge", "predicted"),
    ("POMWU", "true"),
    ("cHedge", "true"),
    ("OMWU", "none"),
    ("Hedge", "none"),
)
"""(learner, context source) pairs of the main ``reproduce`` table."""


def _label(name: str, source: str) -> str:
    return name if source == "none" else f"{name} ({source})"


def _routing_table(
    setup: RoutingSetup, wardrop: list, *, eta: float, feedback: str, progress: bool
) -> tuple[dict, dict]:
    """Run :data:`CONFIGS`; return (metrics per label, runs per label)."""
    m, T = setup.game.n_contexts, setup.contexts.size
    counts = np.bincount(setup.contexts, minlength=m)
    wardrop_cost = np.array([w.link_flows @ w.link_costs for w in wardrop])
    runs, results = {}, {}
    for name, source in CONFIGS:
        run = run_learner(setup, name, source, eta=eta, feedback=feedback, progress=progress)
        label = _label(name, source)
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


def compare_over_seeds(rows: list[dict], first: str = "POMWU", second: str = "cHedge") -> dict:
    """Paired comparison of two learners' average normalised travel times over seeds.

    Parameters
    ----------
    rows : list of dict
        One row per seed with the two learners' values under the keys ``first`` and ``second``.
    first, second : str
        The compared keys.

    Returns
    -------
    dict
        ``per_seed`` (the rows, each with ``relative_difference`` = (first - second) / |second|,
        below 0 when ``first`` is faster), the means of both, and the mean, sd and 95% Student-t
        interval of the relative difference, with the number of seeds where ``first`` is faster.
    """
    a = np.array([r[first] for r in rows], dtype=np.float64)
    b = np.array([r[second] for r in rows], dtype=np.float64)
    rel = (a - b) / np.abs(b)
    diff = paired_difference(a, b, relative=True)
    return {
        "per_seed": [{**r, "relative_difference": float(d)} for r, d in zip(rows, rel, strict=True)],
        f"mean_{first}": float(a.mean()),
        f"mean_{second}": float(b.mean()),
        "mean_relative_difference": diff.estimate,
        "sd_relative_difference": mean_sd(rel).sd,
        "ci95_relative_difference": [diff.low, diff.high],
        f"seeds_{first}_faster": diff.wins,
    }


def _predicted_pair(setup: RoutingSetup, *, eta: float, feedback: str, file_under: str = "prediction") -> dict:
    """Average normalised travel time of POMWU and cHedge with predicted contexts."""
    return {
        name: float(
            run_learner(setup, name, "predicted", eta=eta, feedback=feedback, file_under=file_under).travel_time.mean()
        )
        for name in ("POMWU", "cHedge")
    }


def _seed_spread(main: dict, setup0: RoutingSetup, *, T: int, eta: float, seeds: list[int], bar: bool) -> dict:
    """POMWU(pred) vs cHedge(pred) over ``seeds``, both feedback models and both filings.

    ``seeds[0]`` is the main table's seed (``setup0``; its ``file_under="prediction"`` values are taken
    from ``main``); every later seed redraws capacities, contexts, covariates, predictions, loss bounds
    and path sampling. Returns ``{file_under: {feedback: compare_over_seeds(...)}}``.
    """
    per_seed: dict = {f: {fb: [] for fb in main} for f in FILINGS}
    for i, seed in enumerate(progress(seeds, desc="seeds", enabled=bar)):
        setup = setup0 if i == 0 else sioux_falls_setup(T=T, random_state=seed)
        acc = float(np.mean(setup.predictions == setup.contexts))
        for filing in FILINGS:
            for feedback in main:
                if i == 0 and filing == "prediction":
                    res = main[feedback]["results"]
                    pair = {name: res[f"{name} (predicted)"]["avg_travel_time"] for name in ("POMWU", "cHedge")}
                else:
                    pair = _predicted_pair(setup, eta=eta, feedback=feedback, file_under=filing)
                per_seed[filing][feedback].append({"seed": seed, "prediction_accuracy": acc, **pair})
    return {
        filing: {fb: compare_over_seeds(rows) for fb, rows in blocks.items()} for filing, blocks in per_seed.items()
    }


def reproduce(ctx: RunContext) -> None:
    """Run the Sioux Falls traffic-routing experiment.

    528 agents, 10 contexts, T = 2*10^4 rounds (120 with ``--quick``), step size 15 on the rescaled
    losses: travel time, congestion, regret and distance to the per-context Wardrop equilibrium of
    POMWU, contextual Hedge, OMWU and Hedge with true and predicted contexts under expected and
    sampled feedback, then POMWU vs contextual Hedge (predicted contexts) over five seeds. Writes
    ``reproduce.json``, ``reproduce.md`` and ``reproduce.png``.

    Parameters
    ----------
    ctx : icml25_shared.cli.RunContext
        Output folder, seed and ``quick`` flag.
    """
    T = 120 if ctx.quick else 20000
    eta = 15.0  # on the min/max-rescaled losses; see the README's Limits
    bar = not ctx.quick
    start = time.perf_counter()
    setup = sioux_falls_setup(T=T, random_state=ctx.seed)
    game = setup.game
    m = game.n_contexts
    accuracy = float(np.mean(setup.predictions == setup.contexts))
    wardrop = [wardrop_equilibrium(game, z, tol=1e-2 if ctx.quick else 1e-4) for z in range(m)]
    out, all_runs = {}, {}
    for feedback in FEEDBACKS:
        results, runs = _routing_table(setup, wardrop, eta=eta, feedback=feedback, progress=bar)
        out[feedback] = {"results": results}
        all_runs[feedback] = runs
    # Step-size sensitivity of the POMWU vs cHedge comparison (predicted contexts, expected feedback).
    sensitivity = {
        f"{name} (predicted), eta=5": tt for name, tt in _predicted_pair(setup, eta=5.0, feedback="expected").items()
    }
    for name in ("POMWU", "cHedge"):
        sensitivity[f"{name} (predicted), eta={eta:g}"] = out["expected"]["results"][f"{name} (predicted)"][
            "avg_travel_time"
        ]
    seeds = [ctx.seed + i for i in range(N_SPREAD_SEEDS)]
    spreads = _seed_spread(out, setup, T=T, eta=eta, seeds=seeds, bar=bar)
    payload = {
        "step_size_sensitivity_expected_feedback": sensitivity,
        "seed_spread_predicted": spreads["prediction"],
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
    ctx.write_json(payload)
    ctx.write_table(reproduce_tables(payload))
    curves = {
        feedback: {label: np.asarray(run.travel_time) for label, run in runs.items()}
        for feedback, runs in all_runs.items()
    }
    ctx.save_figure(reproduce_figure(payload, curves))


def reproduce_tables(payload: dict) -> str:
    """Render the markdown tables of ``reproduce.md`` from the ``reproduce.json`` payload.

    Parameters
    ----------
    payload : dict
        What :func:`reproduce` writes to ``reproduce.json``.

    Returns
    -------
    str
        The main table per feedback model, the step-size rows and the seed comparison.
    """
    s = payload["setup"]
    parts = []
    headers = [
        "learner (contexts)",
        "avg normalised travel time",
        "last quarter",
        "avg travel time (all agents)",
        "avg congestion",
        "social cost / Wardrop",
        "contextual regret / agent",
        "L1 distance to Wardrop",
    ]
    for feedback in FEEDBACKS:
        rows = [
            [
                k,
                f"{v['avg_travel_time']:.5f}",
                f"{v['avg_travel_time_last_quarter']:.5f}",
                f"{v['avg_raw_travel_time']:.3f}",
                f"{v['avg_congestion']:.4f}",
                f"{v['social_cost_over_wardrop']:.4f}",
                f"{v['mean_contextual_regret']:.2f}",
                f"{v['wardrop_l1_distance']:.3f}",
            ]
            for k, v in payload[feedback]["results"].items()
        ]
        parts += [
            f"**{feedback} feedback** (prediction accuracy {s['prediction_accuracy']:.3f}, T = {s['rounds']}, "
            f"eta = {s['step_size']})",
            "",
            markdown_table(rows, headers),
            "",
        ]
    sens = payload["step_size_sensitivity_expected_feedback"]
    parts += [
        "**step size** (expected feedback, predicted contexts)",
        "",
        markdown_table(
            [[k, f"{v:.5f}"] for k, v in sorted(sens.items())], ["learner, step size", "avg normalised travel time"]
        ),
        "",
        f"**seeds** (predicted contexts, eta = {s['step_size']:g}): avg normalised travel time; relative difference "
        "= (POMWU - cHedge) / |cHedge|, below 0 when POMWU is faster; 95% Student-t interval of its mean over seeds; "
        "losses filed under the prediction or under the true context revealed after the round",
        "",
    ]
    rows = []
    for filing, key in (("prediction", "seed_spread_predicted"), ("truth", "seed_spread_predicted_file_under_truth")):
        for feedback, block in payload[key].items():
            rows += [
                [
                    filing,
                    feedback,
                    r["seed"],
                    f"{r['prediction_accuracy']:.3f}",
                    f"{r['POMWU']:.5f}",
                    f"{r['cHedge']:.5f}",
                    f"{r['relative_difference']:+.4f}",
                ]
                for r in block["per_seed"]
            ]
            lo, hi = block["ci95_relative_difference"]
            n = len(block["per_seed"])
            rows.append(
                [
                    filing,
                    feedback,
                    "mean",
                    "",
                    f"{block['mean_POMWU']:.5f}",
                    f"{block['mean_cHedge']:.5f}",
                    f"{block['mean_relative_difference']:+.4f} (sd {block['sd_relative_difference']:.4f}, 95% CI "
                    f"[{lo:+.4f}, {hi:+.4f}]; POMWU faster on {block['seeds_POMWU_faster']}/{n})",
                ]
            )
    headers = [
        "losses filed under",
        "feedback",
        "seed",
        "prediction accuracy",
        "POMWU (predicted)",
        "cHedge (predicted)",
        "relative difference",
    ]
    parts.append(markdown_table(rows, headers))
    return "\n".join(parts)


def reproduce_figure(payload: dict, travel_times: dict[str, dict[str, np.ndarray]]) -> Any:
    """The reproduce figure: time-averaged travel time per feedback model, and the per-seed POMWU vs cHedge bars.

    ``payload`` is the reproduce JSON; ``travel_times[feedback][learner label]`` one run's per-round travel time.
    """
    import matplotlib.pyplot as plt

    s = payload["setup"]
    T = s["rounds"]
    fig, axes = plt.subplots(1, 3, figsize=(16, 4), sharey=False)
    t = np.arange(1, T + 1)
    for ax, (feedback, runs) in zip(axes[:2], travel_times.items(), strict=True):
        for label, travel_time in runs.items():
            ax.plot(t, np.cumsum(travel_time) / t, "--" if "true" in label else "-", label=label)
        ax.set_title(f"{feedback} feedback")
        ax.set_xlabel("round t")
        ax.set_xscale("log")
        ax.set_ylabel("time-averaged normalised travel time")
    axes[0].legend(fontsize=7)
    ax = axes[2]
    spreads = {
        "prediction": payload["seed_spread_predicted"],
        "truth": payload["seed_spread_predicted_file_under_truth"],
    }
    combos = [(filing, feedback, block) for filing, blocks in spreads.items() for feedback, block in blocks.items()]
    width = 0.8 / len(combos)
    seeds = [r["seed"] for r in combos[0][2]["per_seed"]]
    for j, (filing, feedback, block) in enumerate(combos):
        rel = [100 * r["relative_difference"] for r in block["per_seed"]]
        ax.bar(
            np.arange(len(rel)) + width * (j - (len(combos) - 1) / 2),
            rel,
            width=width,
            label=f"{feedback} feedback, filed under {filing}",
        )
    ax.axhline(0.0, color="k", lw=0.8)
    ax.set_xticks(np.arange(len(seeds)), [f"seed {x}" for x in seeds])
    ax.set_xlabel("test seed")
    ax.set_ylabel("travel time, (POMWU - cHedge) / |cHedge| (%)")
    ax.set_title(f"POMWU vs cHedge (predicted), eta={s['step_size']:g}; < 0: POMWU better", fontsize=10)
    ax.legend(fontsize=7)
    fig.suptitle(
        f"Sioux Falls, {s['n_agents']} agents, {s['n_contexts']} contexts, seed {s['seed']} "
        f"(prediction accuracy {s['prediction_accuracy']:.2f})"
    )
    return fig
