"""Routing games: shipped Sioux Falls data, BPR costs, counterfactual losses, Frank-Wolfe Wardrop."""

import numpy as np
import pytest
from scipy.optimize import minimize

from pomwu import (
    POMWU,
    Hedge,
    RoutingGame,
    RoutingNetwork,
    context_capacities,
    load_sioux_falls,
    load_sioux_falls_demands,
    play_routing_game,
    read_network_csv,
    wardrop_equilibrium,
)


def _affine(a, beta):
    """BPR parameters for the affine cost a + beta * x (power 1, capacity 1)."""
    return a, beta / a


def braess():
    # s=1, a=2, b=3, t=4; costs 1+10x, 50+x, 50+x, 1+10x and the bridge a->b 10+x.
    costs = [(1, 10), (50, 1), (50, 1), (1, 10), (10, 1)]
    t0, b = zip(*[_affine(*c) for c in costs], strict=False)
    net = RoutingNetwork(
        np.array([1, 2, 1, 3, 2]),
        np.array([2, 4, 3, 4, 3]),
        np.array(t0, float),
        np.ones(5),
        np.array(b, float),
        np.ones(5),
        np.ones(5),
    )
    return RoutingGame(net, [[[0, 1], [2, 3], [0, 4, 3]]], np.array([6.0]))


@pytest.fixture(scope="module")
def sioux():
    net = load_sioux_falls()
    caps = context_capacities(net, 10, rng=np.random.default_rng(0))
    return RoutingGame.from_od_matrix(net, load_sioux_falls_demands(), capacities=caps)


def test_sioux_falls_data_matches_the_published_network(sioux):
    net = sioux.network
    assert net.n_links == 76
    assert sorted(set(net.init_node) | set(net.term_node)) == list(range(1, 25))
    assert np.all(net.b == 0.15) and np.all(net.power == 4)
    od = load_sioux_falls_demands(scale=1.0)
    assert od.sum() == 360600 and np.count_nonzero(od) == 528
    assert sioux.n_agents == 528 and sioux.demands.sum() == pytest.approx(3606.0)
    assert 1 <= sioux.n_actions.min() and sioux.n_actions.max() == 5
    # Sessa et al.'s rule: every kept path is under 3x the free-flow time of the shortest.
    fft = sioux.path_costs(net.free_flow_time)
    assert np.all(fft[sioux.mask] < 3 * np.repeat(fft[:, 0], sioux.n_actions))


def test_counterfactual_times_equal_brute_force_deviation(sioux):
    rng = np.random.default_rng(1)
    actions = (rng.random(sioux.n_agents) * sioux.n_actions).astype(np.int64)
    cf = sioux.counterfactual_times(actions, 3)
    for j in rng.choice(sioux.n_agents, size=15, replace=False):
        for k in range(sioux.n_actions[j]):
            dev = actions.copy()
            dev[j] = k
            assert cf[j, k] == pytest.approx(sioux.travel_times(dev, 3)[j], rel=1e-12)
    assert np.all(cf[~sioux.mask] == 0)


def test_link_costs_are_bpr():
    net = load_sioux_falls()
    x = np.linspace(0, 300, net.n_links)
    expected = net.free_flow_time * (1 + 0.15 * (x / net.capacity) ** 4)
    np.testing.assert_allclose(net.link_costs(x), expected, rtol=1e-14)


def test_frank_wolfe_solves_braess_exactly():
    res = wardrop_equilibrium(braess(), tol=1e-10, max_iter=20000)
    # Hand solution: f1 = f2 = 27/13, f3 = 24/13, common path cost 1200/13.
    np.testing.assert_allclose(res.path_flows[0], [27 / 13, 27 / 13, 24 / 13], atol=1e-4)
    pc = braess().path_costs(res.link_costs)[0]
    np.testing.assert_allclose(pc, 1200 / 13, rtol=1e-5)
    assert res.converged and res.relative_gap <= 1e-10


def test_frank_wolfe_matches_scipy_on_two_bpr_links():
    net = RoutingNetwork(
        np.array([1, 1]),
        np.array([2, 2]),
        np.array([10.0, 15.0]),
        np.array([4.0, 9.0]),
        np.array([0.15, 0.15]),
        np.array([4.0, 4.0]),
        np.ones(2),
    )
    game = RoutingGame(net, [[[0], [1]]], np.array([20.0]))
    res = wardrop_equilibrium(game, tol=1e-12)
    peer = minimize(
        lambda f: net.link_cost_integrals(np.array([f[0], 20 - f[0]])).sum(),
        x0=[10.0],
        bounds=[(0, 20)],
        method="L-BFGS-B",
        options={"ftol": 1e-15, "gtol": 1e-12},
    )
    assert res.link_flows[0] == pytest.approx(peer.x[0], abs=1e-4)
    costs = net.link_costs(res.link_flows)
    assert costs[0] == pytest.approx(costs[1], rel=1e-8)  # Wardrop: used paths have equal cost


def test_frank_wolfe_on_sioux_falls_satisfies_wardrop_conditions(sioux):
    res = wardrop_equilibrium(sioux, 2, tol=1e-4)
    assert res.converged
    np.testing.assert_allclose(res.path_flows.sum(1), sioux.demands, rtol=1e-10)
    pc = sioux.path_costs(res.link_costs)
    best = np.min(np.where(sioux.mask, pc, np.inf), axis=1)
    # Total excess cost over shortest paths is the (tiny) relative gap.
    excess = float(np.sum(res.path_flows * (pc - best[:, None])))
    assert excess / float(res.link_flows @ res.link_costs) == pytest.approx(res.relative_gap, rel=1e-6)


def test_learners_reduce_travel_time_on_sioux_falls(sioux):
    rng = np.random.default_rng(0)
    lo, hi = sioux.loss_bounds(20, rng=rng)
    contexts = rng.integers(10, size=300)
    run = play_routing_game(
        sioux,
        POMWU(n_actions=sioux.n_actions, n_contexts=10, step_size=5.0),
        contexts,
        loss_bounds=(lo, hi),
        rng=np.random.default_rng(1),
    )
    assert run.prediction_accuracy == 1.0
    assert run.travel_time[-50:].mean() < 0.7 * run.travel_time[:10].mean()
    assert run.mean_link_flows.shape == (10, 76)
    np.testing.assert_allclose(run.mean_link_flows.sum(1) > 0, np.bincount(contexts, minlength=10) > 0)
    with pytest.raises(ValueError, match="learner action counts"):
        play_routing_game(sioux, Hedge(n_actions=3, n_agents=528), contexts, loss_bounds=(lo, hi), rng=rng)


def test_network_file_with_missing_link_attribute(tmp_path):
    bad = tmp_path / "net.csv"
    bad.write_text("Init_node,Term_node,Capacity,Free_Flow_Time,Power\n1,2,10,3,4\n")
    with pytest.raises(ValueError, match=r"missing link attribute column\(s\) \['B'\]"):
        read_network_csv(bad)
    blank = tmp_path / "blank.csv"
    blank.write_text("Init_node,Term_node,Capacity,Free_Flow_Time,B,Power\n1,2,10,,0.15,4\n")
    with pytest.raises(ValueError, match="no value for 'Free_Flow_Time'"):
        read_network_csv(blank)


def test_routing_game_validation(sioux):
    with pytest.raises(ValueError, match="outside the declared set"):
        sioux.counterfactual_times(np.zeros(528, dtype=int), 10)
    net = sioux.network
    with pytest.raises(ValueError, match="demands must have shape"):
        RoutingGame(net, [[[0]]], np.array([1.0, 2.0]))
    with pytest.raises(ValueError, match="link ids"):
        RoutingGame(net, [[[0, 99]]], np.array([1.0]))
    with pytest.raises(ValueError, match="capacity must be > 0"):
        RoutingNetwork(
            np.array([1]),
            np.array([2]),
            np.array([1.0]),
            np.array([0.0]),
            np.array([0.15]),
            np.array([4.0]),
            np.array([1.0]),
        )


def test_expected_feedback_equals_sampled_feedback_at_pure_strategies(sioux):
    rng = np.random.default_rng(4)
    actions = (rng.random(sioux.n_agents) * sioux.n_actions).astype(np.int64)
    x = np.zeros(sioux.mask.shape)
    x[np.arange(sioux.n_agents), actions] = 1.0
    np.testing.assert_allclose(sioux.expected_link_flows(x), sioux.link_flows(actions), rtol=1e-13)
    np.testing.assert_allclose(
        sioux.expected_counterfactual_times(x, 5), sioux.counterfactual_times(actions, 5), rtol=1e-13
    )


def test_expected_counterfactual_times_equal_brute_force_at_mixed_strategies(sioux):
    rng = np.random.default_rng(5)
    x = rng.random(sioux.mask.shape) * sioux.mask
    x /= x.sum(1, keepdims=True)
    cf = sioux.expected_counterfactual_times(x, 1)
    cap = sioux.capacities[1]
    for j in rng.choice(sioux.n_agents, size=10, replace=False):
        others = x.copy()
        others[j] = 0.0
        base = sioux.expected_link_flows(others)
        for k in range(sioux.n_actions[j]):
            flows = base + sioux.demands[j] * sioux.incidence[j, k]
            expected = sioux.network.link_costs(flows, cap)[sioux.incidence[j, k]].sum()
            assert cf[j, k] == pytest.approx(expected, rel=1e-12)


def test_play_routing_game_rejects_unknown_feedback(sioux):
    lo, hi = np.zeros(sioux.n_agents), np.ones(sioux.n_agents)
    with pytest.raises(ValueError, match="feedback must be 'sampled' or 'expected'"):
        play_routing_game(
            sioux,
            POMWU(n_actions=sioux.n_actions, n_contexts=10),
            np.zeros(3, dtype=int),
            loss_bounds=(lo, hi),
            rng=np.random.default_rng(0),
            feedback="bandit",
        )


def test_expected_feedback_first_round_social_cost_is_uniform_play(sioux):
    lo, hi = sioux.loss_bounds(5, rng=np.random.default_rng(0))
    run = play_routing_game(
        sioux,
        POMWU(n_actions=sioux.n_actions, n_contexts=10, step_size=5.0),
        np.array([4, 4, 7]),
        loss_bounds=(lo, hi),
        rng=np.random.default_rng(0),
        feedback="expected",
    )
    uniform = sioux.mask / sioux.n_actions[:, None]
    flows = sioux.expected_link_flows(uniform)
    assert run.social_cost[0] == pytest.approx(flows @ sioux.network.link_costs(flows, sioux.capacities[4]), rel=1e-12)
    times = sioux.expected_counterfactual_times(uniform, 4)
    loss = (times - lo[:, None]) / (hi - lo)[:, None]
    choosing = sioux.n_actions > 1
    assert 0 < choosing.sum() < sioux.n_agents
    assert run.travel_time[0] == pytest.approx(np.mean(np.sum(uniform * loss, axis=1)[choosing]), rel=1e-12)
    assert run.raw_travel_time[0] == pytest.approx(np.mean(np.sum(uniform * times, axis=1)), rel=1e-12)


def test_counterfactual_times_with_mixed_link_powers(sioux):
    net = sioux.network
    mixed = RoutingNetwork(
        net.init_node,
        net.term_node,
        net.free_flow_time,
        net.capacity,
        net.b,
        np.where(np.arange(net.n_links) % 2 == 0, 4.0, 2.0),
        net.length,
    )
    game = RoutingGame(mixed, sioux.paths[:40], sioux.demands[:40], sioux.capacities)
    rng = np.random.default_rng(8)
    actions = (rng.random(40) * game.n_actions).astype(np.int64)
    cf = game.counterfactual_times(actions, 6)
    for j in range(0, 40, 7):
        for k in range(game.n_actions[j]):
            dev = actions.copy()
            dev[j] = k
            assert cf[j, k] == pytest.approx(game.travel_times(dev, 6)[j], rel=1e-12)


def test_od_pair_without_path_is_reported():
    net = braess().network
    od = np.zeros((4, 4))
    od[3, 0] = 1.0  # t -> s: every link points the other way
    with pytest.raises(ValueError, match=r"OD pair \(4, 1\) has demand 1 but no path"):
        RoutingGame.from_od_matrix(net, od)
    od = np.zeros((4, 4))
    od[0, 3] = 6.0
    game = RoutingGame.from_od_matrix(net, od, max_ratio=10.0)
    assert sorted(map(tuple, game.paths[0])) == [(0, 1), (0, 4, 3), (2, 3)]  # all three Braess paths


def test_from_od_matrix_rejects_bad_path_settings():
    net = load_sioux_falls()
    for n_paths in (0, -1, 2.5, True):
        with pytest.raises(ValueError, match="n_paths must be a positive int"):
            RoutingGame.from_od_matrix(net, load_sioux_falls_demands(), n_paths=n_paths)
    with pytest.raises(ValueError, match="max_ratio must be >= 1"):
        RoutingGame.from_od_matrix(net, load_sioux_falls_demands(), max_ratio=0.5)


def test_frank_wolfe_warns_when_it_stops_before_the_tolerance(sioux):
    with pytest.warns(RuntimeWarning, match="stopped after max_iter=3"):
        res = wardrop_equilibrium(sioux, 0, tol=1e-9, max_iter=3)
    assert not res.converged and res.n_iter == 3


def test_regret_checkpoints_equal_the_regret_of_shorter_runs(sioux):
    """The regret recorded after t rounds is the regret of a fresh run of length t (constant step size)."""
    rng = np.random.default_rng(3)
    bounds = sioux.loss_bounds(20, rng=rng)
    contexts = rng.integers(10, size=40)

    def play(n, checkpoints=()):
        learner = POMWU(n_actions=sioux.n_actions, n_contexts=10, step_size=5.0)
        return play_routing_game(
            sioux, learner, contexts[:n], loss_bounds=bounds, rng=np.random.default_rng(0), feedback="expected",
            regret_checkpoints=checkpoints,
        )

    long = play(40, (10, 25, 40))
    np.testing.assert_array_equal(long.regret_checkpoints, [10, 25, 40])
    for t, value in zip((10, 25, 40), long.summed_contextual_regret, strict=True):
        assert value == pytest.approx(play(t).regret.contextual.sum(), rel=1e-12)
    with pytest.raises(ValueError, match="regret_checkpoints"):
        play(40, (25, 10))
    with pytest.raises(ValueError, match="regret_checkpoints"):
        play(40, (41,))
