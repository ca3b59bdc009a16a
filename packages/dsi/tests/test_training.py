import numpy as np
import pytest

torch = pytest.importorskip("torch")

from dsi import DSITrainer  # noqa: E402


def _problem(n=60, d=5, seed=0):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((n, d)).astype(np.float32)
    y = (x @ rng.standard_normal(d) > 0).astype(np.int64)
    groups = np.arange(n) % 4
    return torch.tensor(x), torch.tensor(y), groups


def _linear(d=5, seed=0):
    torch.manual_seed(seed)
    return torch.nn.Linear(d, 2)


def test_sgd_differences_are_leave_one_group_out_gradient_differences():
    x, y, groups = _problem()
    model = _linear()
    theta0 = torch.nn.utils.parameters_to_vector(model.parameters()).detach().clone()

    def grad_on(mask):
        m = _linear()
        torch.nn.utils.vector_to_parameters(theta0.clone(), m.parameters())
        torch.nn.functional.cross_entropy(m(x[mask]), y[mask]).backward()
        return torch.cat([p.grad.ravel() for p in m.parameters()]).double().numpy()

    lr = 0.3
    trainer = DSITrainer(model, optimizer="sgd", lr=lr, rounds=1, epsilon=2.0, random_state=0).fit(x, y, groups)
    full = -lr * grad_on(np.ones(len(y), bool))
    np.testing.assert_allclose(trainer.last_update_, full, rtol=1e-5, atol=1e-7)
    expected = np.stack([full + lr * grad_on(groups != j) for j in range(4)])
    np.testing.assert_allclose(trainer.last_differences_, expected, rtol=1e-4, atol=1e-6)
    # the released parameters differ from theta0 + update only inside the span of the differences
    theta1 = torch.nn.utils.parameters_to_vector(model.parameters()).detach().double().numpy()
    noise = theta1 - theta0.double().numpy() - full
    q, _ = np.linalg.qr(trainer.last_differences_.T)
    assert np.linalg.norm(noise - q @ (q.T @ noise)) < 1e-5 * np.linalg.norm(noise)
    assert np.linalg.norm(noise) > 0
    assert trainer.epsilon_ == pytest.approx([2.0] * 4, abs=1e-4)
    rec = trainer.history_[0]
    # equal-size groups: s_j is proportional to g - g_j, and these sum to zero, so the exact span has
    # rank 3; the float32 updates leave a fourth direction at ~5e-7 of the largest singular value,
    # below rank_tol = 1e-6, which is recorded and covered by its own (tiny) noise
    sv = np.linalg.svd(trainer.last_differences_, compute_uv=False)
    assert 1e-7 * sv[0] < sv[3] < 1e-6 * sv[0]
    assert rec.n_differences == 4 and rec.rank == 3 and rec.noise_trace > 0
    assert 0 < rec.residual_norm < 1e-6 * sv[0] and 0 < rec.residual_trace < 1e-6 * rec.noise_trace


@pytest.mark.parametrize("optimizer", ["sgd", "adam"])
def test_training_learns_with_weak_noise_and_is_reproducible(optimizer):
    x, y, groups = _problem(n=200)
    lr = 0.5 if optimizer == "sgd" else 0.05
    params = []
    for _ in range(2):
        model = _linear()
        trainer = DSITrainer(model, optimizer=optimizer, lr=lr, local_steps=3, rounds=15, epsilon=200.0, random_state=1)
        trainer.fit(x, y, groups)
        params.append(torch.nn.utils.parameters_to_vector(model.parameters()).detach().clone())
    torch.testing.assert_close(params[0], params[1])
    acc = (model(x).argmax(1) == y).float().mean().item()
    assert acc > 0.85
    assert trainer.history_[-1].loss < trainer.history_[0].loss


def test_custom_optimizer_batches_and_unprotected_samples():
    x, y, groups = _problem(n=80)
    groups = groups.copy()
    groups[:40] = -1  # unprotected half
    model = _linear()
    trainer = DSITrainer(
        model,
        optimizer=lambda p: torch.optim.SGD(p, lr=0.1, momentum=0.9),
        local_steps=4,
        batch_size=16,
        rounds=2,
        noise_multiplier=1.0,
        noise="isotropic",
        random_state=0,
    ).fit(x, y, groups)
    assert trainer.groups_.tolist() == [0, 1, 2, 3]
    assert all(r.n_differences <= 4 for r in trainer.history_)
    assert trainer.history_[0].solver_iterations == 0  # isotropic: no solver


def test_trainer_errors():
    x, y, groups = _problem()
    with pytest.raises(ValueError, match="same length"):
        DSITrainer(_linear(), epsilon=1.0).fit(x, y[:-1], groups)
    with pytest.raises(ValueError, match="no protected group"):
        DSITrainer(_linear(), epsilon=1.0).fit(x, y, np.full(len(y), -1))
    with pytest.raises(ValueError, match="optimizer must be"):
        DSITrainer(_linear(), epsilon=1.0, optimizer="lbfgs").fit(x, y, groups)
    with pytest.raises(ValueError, match="exactly one of epsilon"):
        DSITrainer(_linear()).fit(x, y, groups)
    with pytest.raises(ValueError, match="delta"):
        DSITrainer(_linear(), epsilon=1.0, delta=0.0).fit(x, y, groups)
    with pytest.raises(ValueError, match="budgets"):
        DSITrainer(_linear(), epsilon=1.0, budgets=[1.0, 2.0]).fit(x, y, groups)
    with pytest.raises(TypeError, match="integer group ids"):
        DSITrainer(_linear(), epsilon=1.0).fit(x, y, groups.astype(float))
    with pytest.raises(TypeError, match="torch.nn.Module"):
        DSITrainer(lambda t: t, epsilon=1.0).fit(x, y, groups)


def test_per_sample_clipping_matches_a_manual_loop():
    from dsi.training import backward

    x, y, _ = _problem(n=12)
    model = _linear()
    clip = 0.3
    manual = []
    for i in range(len(y)):
        model.zero_grad()
        torch.nn.functional.cross_entropy(model(x[i : i + 1]), y[i : i + 1]).backward()
        g = torch.cat([p.grad.ravel() for p in model.parameters()])
        manual.append(g * min(1.0, clip / float(g.norm())))
    expected = torch.stack(manual).mean(0)
    model.zero_grad()
    backward(model, torch.nn.functional.cross_entropy, x, y, clip)
    got = torch.cat([p.grad.ravel() for p in model.parameters()])
    torch.testing.assert_close(got, expected, rtol=1e-5, atol=1e-7)
    # clipping bounds every group's leave-out difference for one SGD step: ||s_j|| <= 2 lr C n_j / (N - n_j)
    groups = np.arange(len(y)) % 3
    trainer = DSITrainer(_linear(), lr=0.5, rounds=1, epsilon=1.0, max_grad_norm=clip, random_state=0).fit(x, y, groups)
    bound = 2 * 0.5 * clip * 4 / (12 - 4)
    assert np.linalg.norm(trainer.last_differences_, axis=1).max() <= bound + 1e-6
    with pytest.raises(ValueError, match="max_grad_norm"):
        DSITrainer(_linear(), epsilon=1.0, max_grad_norm=0.0).fit(x, y, groups)


def test_every_round_releases_update_at_released_params_plus_calibrated_noise():
    """Issue #10 audit: round t's update is taken at the released theta_{t-1} (not stale), the last round
    is noised too, the noise is c * N(0, Sigma(differences)) drawn from the seeded stream, and the whole
    run is mu-GDP for every group with mu the target's (gdp composition over ``rounds``)."""
    from dsi import optimal_covariance
    from dsi.accounting import gdp_mu_from_epsilon

    x, y, groups = _problem(n=60)
    vec = torch.nn.utils.parameters_to_vector

    def run(rounds, model=None, seed=5):
        model = model or _linear()
        start = vec(model.parameters()).detach().double().numpy().copy()
        tr = DSITrainer(model, lr=0.3, local_steps=3, rounds=rounds, noise_multiplier=2.0, random_state=seed)
        tr.fit(x, y, groups)
        return tr, start, vec(model.parameters()).detach().double().numpy()

    one, theta0, theta1 = run(1)
    two, _, theta2 = run(2)
    rng = np.random.default_rng(5)
    rng.integers(2**62)  # the trainer's torch-generator seed comes first
    noise1 = 2.0 * optimal_covariance(one.last_differences_).sample(rng)
    np.testing.assert_allclose(theta1, theta0 + one.last_update_ + noise1, atol=1e-6)
    # round 2 starts from the released theta1: its update equals a fresh run started there
    fresh = _linear()
    torch.nn.utils.vector_to_parameters(torch.as_tensor(theta1, dtype=torch.float32), fresh.parameters())
    at_theta1, _, _ = run(1, fresh, seed=99)
    np.testing.assert_allclose(two.last_update_, at_theta1.last_update_, rtol=1e-5, atol=1e-7)
    noise2 = 2.0 * optimal_covariance(two.last_differences_).sample(rng)
    np.testing.assert_allclose(theta2, theta1 + two.last_update_ + noise2, atol=1e-6)
    assert np.linalg.norm(noise2) > 0
    # calibration: rounds releases of m_j <= 1 compose to the target mu exactly
    tr = DSITrainer(_linear(), lr=0.3, local_steps=2, rounds=3, epsilon=1.0, accountant="gdp", random_state=0)
    tr.fit(x, y, groups)
    assert np.sqrt(3.0) / tr.noise_multiplier_ == pytest.approx(gdp_mu_from_epsilon(1.0, 1e-5), rel=1e-9)
    assert optimal_covariance(tr.last_differences_).mahalanobis.max() <= 1.0 + 1e-9
