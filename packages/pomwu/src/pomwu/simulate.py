"""Repeated play: learners against a context-dependent game, with (predicted) contexts."""

from __future__ import annotations

import logging
import time
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
from icml25_shared.cli import progress as _progress

from pomwu.games import MatrixGame, RoutingGame
from pomwu.learners import MultiplicativeWeights
from pomwu.metrics import RegretSummary, RegretTracker, duality_gap

__all__ = ["predict_contexts", "MatrixGameRun", "play_matrix_game", "RoutingRun", "play_routing_game"]

log = logging.getLogger(__name__)


def predict_contexts(predictor, contexts: np.ndarray, covariates: np.ndarray | None = None) -> np.ndarray:
    """Run a predictor online: predict round ``t`` from ``covariates[t]``, then learn the true ``contexts[t]``.

    Returns the predictions ``(T,)`` (int). ``covariates`` is ``(T, dim)`` or None for oracles.
    """
    contexts = np.asarray(contexts)
    if covariates is not None and len(covariates) != len(contexts):
        raise ValueError(f"covariates has {len(covariates)} rows but contexts has {len(contexts)}")
    out = np.empty(len(contexts), dtype=np.int64)
    for t, z in enumerate(contexts):
        x = None if covariates is None else covariates[t]
        out[t] = predictor.predict(x, int(z))
        predictor.update(x, int(z))
    return out


def _check_sequences(
    contexts: np.ndarray, predictions: np.ndarray | None, n_agents: int, n_contexts: int
) -> tuple[np.ndarray, np.ndarray]:
    contexts = np.asarray(contexts)
    if contexts.ndim != 1 or not np.issubdtype(contexts.dtype, np.integer):
        raise ValueError(f"contexts must be a 1-D int array (T,), got shape {contexts.shape}, dtype {contexts.dtype}")
    if contexts.size and (contexts.min() < 0 or contexts.max() >= n_contexts):
        raise ValueError(f"contexts must lie in {{0, ..., {n_contexts - 1}}}")
    preds = contexts if predictions is None else np.asarray(predictions)
    if preds.shape not in ((contexts.size,), (contexts.size, n_agents)):
        raise ValueError(
            f"predictions must have shape ({contexts.size},) or ({contexts.size}, {n_agents}), got {preds.shape}"
        )
    return contexts, preds


@dataclass(frozen=True)
class MatrixGameRun:
    """Result of :func:`play_matrix_game` (player 0 = row, player 1 = column).

    regret : summary over the two players (arrays of shape (2,))
    avg_strategies : per true context, time-averaged strategies ``(n_contexts, 2, max_actions)``
    duality_gaps : per context, duality gap of the time-averaged play ``(n_contexts,)`` (NaN for
        general-sum games or contexts never seen)
    regret_curve : summed contextual regret of both players after each round ``(T,)`` when
        ``record_curve`` else an empty array
    """

    regret: RegretSummary
    avg_strategies: np.ndarray
    duality_gaps: np.ndarray
    regret_curve: np.ndarray


def play_matrix_game(
    game: MatrixGame,
    learner: MultiplicativeWeights,
    contexts: np.ndarray,
    predictions: np.ndarray | None = None,
    *,
    record_curve: bool = False,
    progress: bool = False,
) -> MatrixGameRun:
    """Both players learn with ``learner`` (two agents) under full information (expected losses).

    The learner continues from its current state (a warm start); call ``learner.reset()`` for a fresh run.
    Regrets and averages cover this call's rounds only.

    ``contexts`` ``(T,)`` are the true contexts; ``predictions`` ``(T,)`` (shared) or ``(T, 2)``
    (per player) are those the learner is told (default: the true ones).
    """
    n_rows, n_cols = game.row_losses.shape[1:]
    learner._ensure()
    if learner.mask_.shape[0] != 2 or list(learner.n_actions_) != [n_rows, n_cols]:
        raise ValueError(
            f"learner must have 2 agents with n_actions=[{n_rows}, {n_cols}], "
            f"got n_actions={learner.n_actions_.tolist()}"
        )
    contexts, preds = _check_sequences(contexts, predictions, 2, game.n_contexts)
    k = learner.mask_.shape[1]
    tracker = RegretTracker(game.n_contexts, learner.mask_)
    sums = np.zeros((game.n_contexts, 2, k))
    counts = np.bincount(contexts, minlength=game.n_contexts)
    curve = np.empty(contexts.size if record_curve else 0)
    loss = np.zeros((2, k))
    for t in _progress(range(contexts.size), enabled=progress, desc="matrix game"):
        x = learner.act(preds[t])
        z = int(contexts[t])
        lr, lc = game.loss_vectors(x[0, :n_rows], x[1, :n_cols], z)
        loss[0, :n_rows], loss[1, :n_cols] = lr, lc
        tracker.add(x, loss, z)
        learner.update(loss, true_context=z)
        sums[z] += x
        if record_curve:
            curve[t] = tracker.summary().contextual.sum()
    avg = sums / np.maximum(counts, 1)[:, None, None]
    gaps = np.full(game.n_contexts, np.nan)
    if game.is_zero_sum:
        for k in np.flatnonzero(counts):
            gaps[k] = duality_gap(game.row_losses[k], avg[k, 0, :n_rows], avg[k, 1, :n_cols])
    return MatrixGameRun(regret=tracker.summary(), avg_strategies=avg, duality_gaps=gaps, regret_curve=curve)


@dataclass(frozen=True)
class RoutingRun:
    """Result of :func:`play_routing_game`.

    travel_time : average normalised travel time per round ``(T,)``: each agent's travel time rescaled by
        ``loss_bounds`` (the loss the learners see), averaged over the agents that have a choice (at least two
        paths; all agents if none has)
    raw_travel_time : mean over all agents of the travel time itself, per round ``(T,)`` (Sessa et al.'s
        reported "avg mean loss")
    congestion : mean BPR delay ratio over links, per round ``(T,)``
    social_cost : total travel time ``sum_e x_e t_e(x_e)`` (flow x time units), per round ``(T,)``
    regret : per-agent regret summary on normalised losses (arrays ``(n_agents,)``)
    mean_link_flows : per true context, time-averaged link flows ``(n_contexts, n_links)``
    prediction_accuracy : fraction of rounds where the prediction equalled the true context
    seconds : wall-clock time of the loop
    regret_checkpoints : the round counts at which ``summed_contextual_regret`` was taken ``(n_checkpoints,)``
    summed_contextual_regret : contextual regret summed over agents after each checkpoint ``(n_checkpoints,)``
    """

    travel_time: np.ndarray
    raw_travel_time: np.ndarray
    congestion: np.ndarray
    social_cost: np.ndarray
    regret: RegretSummary
    mean_link_flows: np.ndarray
    prediction_accuracy: float
    seconds: float
    regret_checkpoints: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))
    summed_contextual_regret: np.ndarray = field(default_factory=lambda: np.zeros(0))


def play_routing_game(
    game: RoutingGame,
    learner: MultiplicativeWeights,
    contexts: np.ndarray,
    predictions: np.ndarray | None = None,
    *,
    loss_bounds: tuple[np.ndarray, np.ndarray],
    rng: np.random.Generator,
    feedback: str = "sampled",
    progress: bool = False,
    regret_checkpoints: Sequence[int] = (),
) -> RoutingRun:
    """Repeated routing with full-information feedback, losses rescaled by ``loss_bounds = (lo, hi)``.

    The rescaling is affine and not clipped: Sessa et al. (2020) clip payoffs to the bounds first, which
    makes every path faster than ``lo`` look equally good; without the clip, rescaling is a per-agent step
    size on the travel times, and losses can leave [0, 1] (play better or worse than the random profiles).

    ``feedback="sampled"`` (Sessa et al., 2020): every agent samples a path from its strategy and
    observes the travel times of all its paths given the others' sampled choices.
    ``feedback="expected"``: no sampling; losses are path travel times at the others' expected flows
    (:meth:`RoutingGame.expected_counterfactual_times`), and the reported travel time is ``<x, l>``.

    Per round ``O(sum_j sum_k |path_jk| + n_links)`` work, vectorised over agents. The learner continues from
    its current state (a warm start); call ``learner.reset()`` for a fresh run. ``regret_checkpoints``: round
    counts in ``[1, T]`` after which the summed contextual regret is recorded (the regret of the run's
    first ``t`` rounds, i.e. of a run of length ``t`` with the same step size).
    """
    if feedback not in ("sampled", "expected"):
        raise ValueError(f"feedback must be 'sampled' or 'expected', got {feedback!r}")
    learner._ensure()
    if learner.mask_.shape != game.mask.shape or not np.array_equal(learner.n_actions_, game.n_actions):
        raise ValueError(
            f"learner action counts must match the game's paths per agent ({game.n_agents} agents, "
            f"max {game.mask.shape[1]} paths)"
        )
    contexts, preds = _check_sequences(contexts, predictions, game.n_agents, game.n_contexts)
    checkpoints = np.asarray(regret_checkpoints, dtype=np.int64).ravel()
    if checkpoints.size and (
        np.any(checkpoints < 1) or np.any(checkpoints > contexts.size) or np.any(np.diff(checkpoints) <= 0)
    ):
        raise ValueError(
            f"regret_checkpoints must be increasing round counts in [1, {contexts.size}], got {checkpoints.tolist()}"
        )
    checkpoint_regret = np.zeros(checkpoints.size)
    lo, hi = (np.asarray(b, dtype=np.float64) for b in loss_bounds)
    if lo.shape != (game.n_agents,) or hi.shape != (game.n_agents,) or np.any(hi <= lo):
        raise ValueError(f"loss_bounds must be two ({game.n_agents},) arrays with hi > lo")
    scale = 1.0 / (hi - lo)
    rows = np.arange(game.n_agents)
    # The travel-time average covers the agents with a choice: a one-path agent's range (hi - lo) can be a few
    # hundredths, so its rescaled time swings over [0, 1] with others' congestion and would dominate the mean.
    choosing = game.n_actions > 1 if np.any(game.n_actions > 1) else np.ones(game.n_agents, dtype=bool)
    tracker = RegretTracker(game.n_contexts, game.mask)
    flow_sums = np.zeros((game.n_contexts, game.network.n_links))
    travel, raw_travel = np.empty(contexts.size), np.empty(contexts.size)
    cong, social = np.empty(contexts.size), np.empty(contexts.size)
    start = time.perf_counter()
    for t in _progress(range(contexts.size), enabled=progress, desc="routing"):
        z = int(contexts[t])
        x = learner.act(preds[t])
        if feedback == "sampled":
            actions = game.sample_actions(x, rng)
            flows = game.link_flows(actions)
            times = game.counterfactual_times(actions, z, flows)
            loss = (times - lo[:, None]) * scale[:, None]
            travel[t] = loss[rows, actions][choosing].mean()
            raw_travel[t] = times[rows, actions].mean()
        else:
            flows = game.expected_link_flows(x)
            times = game.expected_counterfactual_times(x, z)
            loss = (times - lo[:, None]) * scale[:, None]
            travel[t] = np.einsum("jk,jk->j", x, loss)[choosing].mean()
            raw_travel[t] = np.einsum("jk,jk->j", x, times).mean()
        cong[t] = game.congestion(flows, z)
        social[t] = flows @ game.network.link_costs(flows, game.capacities[z])
        tracker.add(x, loss, z)
        learner.update(loss, true_context=z)
        flow_sums[z] += flows
        if checkpoints.size and t + 1 in checkpoints:
            checkpoint_regret[np.searchsorted(checkpoints, t + 1)] = tracker.summary().contextual.sum()
    seconds = time.perf_counter() - start
    log.debug("routing: %d rounds in %.1f s", contexts.size, seconds)
    counts = np.bincount(contexts, minlength=game.n_contexts)
    acc = float(np.mean(preds == (contexts if preds.ndim == 1 else contexts[:, None])))
    return RoutingRun(
        travel_time=travel,
        raw_travel_time=raw_travel,
        congestion=cong,
        social_cost=social,
        regret=tracker.summary(),
        mean_link_flows=flow_sums / np.maximum(counts, 1)[:, None],
        prediction_accuracy=acc,
        seconds=seconds,
        regret_checkpoints=checkpoints,
        summed_contextual_regret=checkpoint_regret,
    )
