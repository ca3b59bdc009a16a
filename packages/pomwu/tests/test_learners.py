"""Learners against hand-written scalar references (exact to 1e-12) and input validation."""

import numpy as np
import pytest

from pomwu import POMWU, ContextualHedge, Hedge, OptimisticHedge
from pomwu.games import random_zero_sum_games


class RefOMWU:
    """Textbook optimistic MWU for one agent: x_t ∝ exp(-eta (L_{t-1} + l_{t-1}))."""

    def __init__(self, k, eta, optimistic=True):
        self.cum, self.last, self.eta, self.opt = np.zeros(k), np.zeros(k), eta, optimistic

    def act(self):
        s = self.cum + (self.last if self.opt else 0.0)
        w = np.exp(-self.eta * (s - s.min()))
        return w / w.sum()

    def update(self, loss):
        self.cum = self.cum + loss
        self.last = np.array(loss, dtype=float)


def test_one_context_equals_reference_omwu_adversarial_losses():
    rng = np.random.default_rng(0)
    losses = rng.random((500, 4))
    ours, ref = POMWU(n_actions=4, n_contexts=1, step_size=0.3), RefOMWU(4, 0.3)
    for t in range(500):
        np.testing.assert_allclose(ours.act(0)[0], ref.act(), rtol=0, atol=1e-12)
        ours.update(losses[t])
        ref.update(losses[t])


def test_perfect_predictions_equal_independent_omwu_per_context_in_a_game():
    """m contexts, perfect predictions: each context runs its own OMWU on its sub-sequence."""
    rng = np.random.default_rng(1)
    m, eta = 3, 0.2
    game = random_zero_sum_games(m, 3, 4, rng=rng)
    contexts = rng.integers(m, size=800)
    ours = POMWU(n_actions=[3, 4], n_contexts=m, step_size=eta)
    refs = [[RefOMWU(3, eta), RefOMWU(4, eta)] for _ in range(m)]
    for z in contexts:
        x = ours.act(int(z))
        xr, yr = refs[z][0].act(), refs[z][1].act()
        np.testing.assert_allclose(x[0, :3], xr, rtol=0, atol=1e-12)
        np.testing.assert_allclose(x[1, :4], yr, rtol=0, atol=1e-12)
        assert x[0, 3] == 0.0  # padded action never played
        lr, lc = game.loss_vectors(xr, yr, int(z))
        loss = np.zeros((2, 4))
        loss[0, :3], loss[1] = lr, lc
        ours.update(loss)
        refs[z][0].update(lr)
        refs[z][1].update(lc)


@pytest.mark.parametrize(
    "cls,optimistic,contextual",
    [(Hedge, False, False), (OptimisticHedge, True, False), (ContextualHedge, False, True), (POMWU, True, True)],
)
def test_each_learner_matches_reference(cls, optimistic, contextual):
    rng = np.random.default_rng(2)
    m, k, eta = 3, 5, 0.7
    losses, contexts = rng.random((300, k)), rng.integers(m, size=300)
    ours = cls(n_actions=k, n_contexts=m, step_size=eta)
    refs = [RefOMWU(k, eta, optimistic) for _ in range(m if contextual else 1)]
    for t in range(300):
        ref = refs[contexts[t] if contextual else 0]
        np.testing.assert_allclose(ours.act(int(contexts[t]))[0], ref.act(), rtol=0, atol=1e-12)
        ours.update(losses[t])
        ref.update(losses[t])


def test_vectorised_agents_with_different_action_counts_equal_separate_learners():
    rng = np.random.default_rng(3)
    counts = [2, 5, 3, 1]
    ours = POMWU(n_actions=counts, n_contexts=2, step_size=0.5)
    refs = [[RefOMWU(k, 0.5) for k in counts] for _ in range(2)]
    for _ in range(200):
        pred = rng.integers(2, size=4)  # each agent its own prediction
        x = ours.act(pred)
        loss = rng.random((4, 5))
        for j, k in enumerate(counts):
            np.testing.assert_allclose(x[j, :k], refs[pred[j]][j].act(), rtol=0, atol=1e-12)
            assert np.all(x[j, k:] == 0)
            refs[pred[j]][j].update(loss[j, :k])
        ours.update(loss)


def test_large_losses_stay_finite():
    ours = POMWU(n_actions=3, n_contexts=1, step_size=10.0)
    for _ in range(100):
        ours.act(0)
        ours.update(np.array([1e3, 0.0, 5e2]))
    x = ours.act(0)
    assert np.all(np.isfinite(x)) and x[0, 1] == pytest.approx(1.0)


def test_bad_inputs_raise_clear_errors():
    learner = POMWU(n_actions=3, n_contexts=4, step_size=0.1)
    with pytest.raises(RuntimeError, match="act"):
        learner.update(np.zeros(3))
    learner.act(1)
    with pytest.raises(ValueError, match=r"shape \(1, 3\)"):
        learner.update(np.zeros(4))
    with pytest.raises(ValueError, match=r"outside the declared set \{0, \.\.\., 3\}"):
        learner.act(4)
    with pytest.raises(ValueError, match="outside the declared set"):
        learner.act(-1)
    with pytest.raises(ValueError, match="pass the \\(predicted\\) context"):
        learner.act()
    for eta in (0.0, -1.0, float("nan")):
        with pytest.raises(ValueError, match=r"step_size must be a float in \(0, inf\)"):
            POMWU(n_actions=3, step_size=eta).act(0)
    assert POMWU(n_actions=3, step_size=np.int64(2)).act(0).shape == (1, 3)  # any real number is a step size
    with pytest.raises(ValueError, match="n_contexts"):
        POMWU(n_actions=3, n_contexts=0).act(0)
    with pytest.raises(ValueError, match="at least one action"):
        Hedge(n_actions=[2, 0]).act()
    with pytest.raises(ValueError, match="NaN"):
        h = Hedge(n_actions=2)
        h.act()
        h.update(np.array([np.nan, 0.0]))


def _regret(learner, losses, contexts, m):
    from pomwu import RegretTracker

    tracker = RegretTracker(m, np.ones((1, losses.shape[1]), bool))
    for t in range(len(losses)):
        x = learner.act(int(contexts[t]))
        tracker.add(x, losses[t][None], int(contexts[t]))
        learner.update(losses[t])
    return tracker.summary()


@pytest.mark.parametrize("eta", [0.05, 0.3])
def test_hedge_meets_the_textbook_regret_bound(eta):
    """Hedge on losses in [0, 1]: R_T <= ln K / eta + eta T / 8 (Cesa-Bianchi & Lugosi, Thm 2.2)."""
    rng = np.random.default_rng(6)
    T, K = 3000, 6
    losses = (rng.random((T, K)) < np.linspace(0.3, 0.6, K)).astype(float)
    r = _regret(Hedge(n_actions=K, step_size=eta), losses, np.zeros(T, int), 1).external[0]
    assert r <= np.log(K) / eta + eta * T / 8
    assert r > 0.05 * (np.log(K) / eta + eta * T / 8)  # the bound is not vacuous here


def test_pomwu_meets_the_per_context_rvu_bound_on_drifting_losses():
    """Perfect predictions, m contexts: contextual regret <= sum_z [ln K / eta + eta sum ||l_t - l_prev^z||_inf^2]
    (optimistic FTRL bound, Syrgkanis et al. 2015, Prop. 7 without the negative term)."""
    rng = np.random.default_rng(7)
    T, K, m, eta = 4000, 4, 3, 0.5
    contexts = rng.integers(m, size=T)
    phase = rng.random((m, K)) * 2 * np.pi
    t = np.arange(T)[:, None]
    losses = 0.5 + 0.4 * np.sin(2 * np.pi * t / 1500 + phase[contexts])  # slowly drifting, per context
    r_pomwu = _regret(POMWU(n_actions=K, n_contexts=m, step_size=eta), losses, contexts, m).contextual[0]
    last = np.zeros((m, K))
    variation = 0.0
    for s in range(T):
        z = contexts[s]
        variation += np.max(np.abs(losses[s] - last[z])) ** 2
        last[z] = losses[s]
    assert r_pomwu <= m * np.log(K) / eta + eta * variation
    # Optimism pays off on predictable losses: less regret than contextual Hedge at the same eta.
    r_chedge = _regret(ContextualHedge(n_actions=K, n_contexts=m, step_size=eta), losses, contexts, m).contextual[0]
    assert r_pomwu < r_chedge


@pytest.mark.parametrize("cls", [POMWU, ContextualHedge])
def test_file_under_truth_equals_default_with_perfect_predictions(cls):
    rng = np.random.default_rng(8)
    m, K, T = 3, 4, 300
    contexts, losses = rng.integers(m, size=T), rng.random((T, K))
    a = cls(n_actions=K, n_contexts=m, step_size=0.4)
    b = cls(n_actions=K, n_contexts=m, step_size=0.4, file_under="truth")
    for t in range(T):
        z = int(contexts[t])
        np.testing.assert_array_equal(a.act(z), b.act(z))
        a.update(losses[t], true_context=z)
        b.update(losses[t], true_context=z)


def test_file_under_truth_files_mispredicted_rounds_under_the_revealed_context():
    """Predicted 0, truth 2: 'prediction' files the loss (and the optimistic hint) under 0, 'truth' under 2;
    the next round played in context 2 differs accordingly and matches a reference OMWU fed context 2's losses."""
    loss = np.array([0.9, 0.1, 0.5])
    by_pred, by_truth = (POMWU(n_actions=3, n_contexts=3, step_size=0.7, file_under=f) for f in ("prediction", "truth"))
    for learner in (by_pred, by_truth):
        learner.act(0)
        learner.update(loss, true_context=2)
    np.testing.assert_array_equal(by_pred.cum_loss_[:, 0], [loss, np.zeros(3), np.zeros(3)])
    np.testing.assert_array_equal(by_truth.cum_loss_[:, 0], [np.zeros(3), np.zeros(3), loss])
    np.testing.assert_array_equal(by_truth.last_loss_[2, 0], loss)
    ref = RefOMWU(3, 0.7)
    ref.update(loss)
    np.testing.assert_allclose(by_truth.act(2)[0], ref.act(), rtol=0, atol=1e-12)
    np.testing.assert_allclose(by_pred.act(2)[0], np.full(3, 1 / 3), rtol=0, atol=1e-12)


def test_file_under_bad_inputs():
    with pytest.raises(ValueError, match="file_under must be one of"):
        POMWU(n_actions=3, n_contexts=2, file_under="both").act(0)
    learner = ContextualHedge(n_actions=3, n_contexts=2, file_under="truth")
    learner.act(0)
    with pytest.raises(ValueError, match="true_context=z"):
        learner.update(np.zeros(3))
    with pytest.raises(ValueError, match="outside the declared set"):
        learner.update(np.zeros(3), true_context=2)
