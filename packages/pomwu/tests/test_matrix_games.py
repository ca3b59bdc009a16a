"""Acceptance 2: zero-sum 3x3 games per context (m = 4) with predicted contexts."""

import nashpy
import numpy as np
import pytest

from pomwu import (
    POMWU,
    MatrixGame,
    NoisyOracle,
    duality_gap,
    play_matrix_game,
    predict_contexts,
    random_zero_sum_games,
    zero_sum_value,
)

M, ETA = 4, 0.25  # eta = 1/(4(n-1)) for n = 2 players (Syrgkanis et al., 2015)


@pytest.fixture(scope="module")
def game():
    return random_zero_sum_games(M, 3, 3, rng=np.random.default_rng(7))


def _nash_value(a):
    """Value for the row player (who pays a) from nashpy's support enumeration."""
    eqs = list(nashpy.Game(-a, a).support_enumeration())
    assert eqs, "nashpy found no equilibrium"
    x, y = eqs[0]
    return float(x @ a @ y)


def _run(game, T, p, cls=POMWU):
    contexts = np.random.default_rng(1).integers(M, size=T)
    preds = np.stack(
        [predict_contexts(NoisyOracle(n_contexts=M, error_rate=p, random_state=s), contexts) for s in (2, 3)], 1
    )
    return play_matrix_game(game, cls(n_actions=[3, 3], n_contexts=M, step_size=ETA), contexts, preds)


@pytest.fixture(scope="module")
def runs(game):
    return {(T, p): _run(game, T, p) for T, p in [(1000, 0.0), (10000, 0.0), (10000, 0.05), (10000, 0.2)]}


def test_lp_value_matches_nashpy(game):
    for z in range(M):
        assert zero_sum_value(game.row_losses[z]) == pytest.approx(_nash_value(game.row_losses[z]), abs=1e-9)


def test_summed_regret_stays_bounded_with_perfect_predictions(runs):
    r3, r4 = runs[1000, 0.0].regret.contextual.sum(), runs[10000, 0.0].regret.contextual.sum()
    # OMWU's RVU bound: constant in T (per context ~ 2 ln 3 / eta + O(eta) summed over players).
    assert 0 <= r4 <= 1.2 * r3 + 1.0
    assert r4 < 40.0


def test_duality_gap_of_average_play_below_005_against_nashpy_value(game, runs):
    run = runs[10000, 0.0]
    for z in range(M):
        a = game.row_losses[z]
        x, y = run.avg_strategies[z, 0, :3], run.avg_strategies[z, 1, :3]
        gap = duality_gap(a, x, y)
        assert gap == pytest.approx(run.duality_gaps[z], abs=1e-12)
        assert gap < 0.05
        v = _nash_value(a)
        # The gap brackets the equilibrium value: min_i (A y)_i <= v <= max_j (x^T A)_j.
        assert np.min(a @ y) - 1e-9 <= v <= np.max(x @ a) + 1e-9
        assert abs(float(x @ a @ y) - v) < 0.05


def test_regret_grows_at_most_linearly_in_error_rate_times_T(runs):
    r0 = runs[10000, 0.0].regret.contextual.sum()
    r5, r20 = runs[10000, 0.05].regret.contextual.sum(), runs[10000, 0.2].regret.contextual.sum()
    assert r0 < r5 < r20  # mispredictions cost regret
    # Each misprediction costs at most the loss range (1 per player here), so slope <= 2 players * 1.
    for p, r in [(0.05, r5), (0.2, r20)]:
        slope = (r - r0) / (p * 10000)
        assert 0 < slope <= 2.0
    # Linear, not faster: quadrupling the error rate at most ~quadruples the excess regret.
    assert (r20 - r0) <= 4.5 * (r5 - r0)


def test_general_sum_game_has_no_gap_and_validates_shapes():
    rng = np.random.default_rng(0)
    g = MatrixGame(rng.random((2, 2, 3)), rng.random((2, 2, 3)))
    assert not g.is_zero_sum
    run = play_matrix_game(g, POMWU(n_actions=[2, 3], n_contexts=2, step_size=0.2), rng.integers(2, size=50))
    assert np.all(np.isnan(run.duality_gaps))
    with pytest.raises(ValueError, match="n_actions"):
        play_matrix_game(g, POMWU(n_actions=[3, 3], n_contexts=2), np.zeros(5, dtype=int))
    with pytest.raises(ValueError, match="predictions must have shape"):
        play_matrix_game(g, POMWU(n_actions=[2, 3], n_contexts=2), np.zeros(5, dtype=int), np.zeros(4, dtype=int))
    with pytest.raises(ValueError, match="same|both"):
        MatrixGame(rng.random((2, 2, 3)), rng.random((2, 3, 3)))
