"""Benchmark pomwu against its anchors in one process; writes JSON and prints a markdown table.

Rows:
1. Vectorised POMWU on Sioux Falls (528 agents, 76 links) vs a per-agent loop in the style of the
   Sessa et al. (2020) research code (each agent's travel times computed separately), same rounds.
2. Throughput: 2*10^4 rounds of POMWU on Sioux Falls, timed once (no peer).
3. Our online softmax logistic regression vs scikit-learn's ``SGDClassifier.partial_fit``
   (one update per round, same covariate stream), with the accuracy of each.
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np
from icml25_shared.bench import BenchmarkReport, compare

from pomwu import (
    POMWU,
    OnlineLogisticRegression,
    SGDContextPredictor,
    make_covariates,
    play_routing_game,
    predict_contexts,
)
from pomwu.experiments import sioux_falls_setup


def per_agent_loop(game, learner, contexts, lo, hi, rng):
    """Anchor: the same dynamics with one Python iteration per agent and path (no vectorisation)."""
    net = game.network
    paths = [[np.asarray(p) for p in agent] for agent in game.paths]
    for z in contexts:
        x = learner.act(int(z))
        actions = game.sample_actions(x, rng)
        flows = np.zeros(net.n_links)
        for j, a in enumerate(actions):
            flows[paths[j][a]] += game.demands[j]
        loss = np.zeros(x.shape)
        for j, agent in enumerate(paths):
            own = np.zeros(net.n_links)
            own[agent[actions[j]]] = game.demands[j]
            for k, p in enumerate(agent):
                dev = flows - own
                dev[p] += game.demands[j]
                t = net.link_costs(dev, game.capacities[z])
                loss[j, k] = (t[p].sum() - lo[j]) / (hi[j] - lo[j])
        learner.update(loss)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--out", type=Path, default=Path("out/pomwu/benchmark.json"))
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--rounds", type=int, default=20000, help="rounds for the throughput row")
    args = parser.parse_args()
    report = BenchmarkReport("pomwu", packages=["pomwu", "numpy", "scikit-learn", "networkx"])

    setup = sioux_falls_setup(T=max(args.rounds, 1000), random_state=0)
    game, lo_hi = setup.game, setup.loss_bounds
    n_loop = 20
    ctx_short = setup.contexts[:n_loop]

    def ours_short():
        play_routing_game(
            game,
            POMWU(n_actions=game.n_actions, n_contexts=10, step_size=5.0),
            ctx_short,
            loss_bounds=lo_hi,
            rng=np.random.default_rng(0),
        )

    def peer_short():
        per_agent_loop(
            game,
            POMWU(n_actions=game.n_actions, n_contexts=10, step_size=5.0),
            ctx_short,
            *lo_hi,
            np.random.default_rng(0),
        )

    sizes = {
        "agents": game.n_agents,
        "links": game.network.n_links,
        "paths": int(game.n_actions.sum()),
        "rounds": n_loop,
    }
    report.add(
        compare(
            ours_short,
            peer_short,
            label="POMWU rounds on Sioux Falls: vectorised vs per-agent loop",
            ours_name="pomwu (vectorised)",
            peer_name="per-agent loop",
            repeats=args.repeats,
            sizes=sizes,
        )
    )

    ctx_full = setup.contexts[: args.rounds]
    holder = {}

    def ours_full():
        holder["run"] = play_routing_game(
            game,
            POMWU(n_actions=game.n_actions, n_contexts=10, step_size=5.0),
            ctx_full,
            setup.predictions[: args.rounds],
            loss_bounds=lo_hi,
            rng=np.random.default_rng(0),
        )

    row = compare(
        ours_full,
        None,
        label=f"POMWU, {args.rounds} rounds, Sioux Falls (target < 120 s)",
        ours_name="pomwu",
        warmup=0,
        repeats=1,
        sizes={**sizes, "rounds": args.rounds},
    )
    row.metrics["under_120_s"] = row.ours.median_s < 120
    row.metrics["us_per_round"] = 1e6 * row.ours.median_s / args.rounds
    row.metrics["avg_travel_time"] = float(holder["run"].travel_time.mean())
    report.add(row)

    rng = np.random.default_rng(0)
    z = rng.integers(10, size=2000)
    x, _ = make_covariates(z, n_contexts=10, dim=5, noise=0.5, rng=rng)
    acc = {}

    def ours_lr():
        acc["ours"] = float(np.mean(predict_contexts(OnlineLogisticRegression(n_contexts=10), z, x)[1000:] == z[1000:]))

    def peer_lr():
        acc["sgd"] = float(np.mean(predict_contexts(SGDContextPredictor(n_contexts=10), z, x)[1000:] == z[1000:]))

    row = compare(
        ours_lr,
        peer_lr,
        label="online context prediction, 2000 rounds, 10 classes, 5 covariates",
        ours_name="OnlineLogisticRegression",
        peer_name="sklearn SGDClassifier.partial_fit",
        repeats=args.repeats,
        sizes={"rounds": 2000, "classes": 10, "dim": 5},
    )
    row.metrics.update({"accuracy_ours_2nd_half": acc["ours"], "accuracy_sgd_2nd_half": acc["sgd"]})
    report.add(row)

    report.write_json(args.out)
    print(report.to_markdown())


if __name__ == "__main__":
    main()
