"""Every public entry point rejects a wrong type with TypeError and a wrong value with ValueError, naming it."""

import numpy as np
import pytest
from icml25_shared.testing import assert_rejects

import dsi

DIFFS = np.random.default_rng(0).standard_normal((4, 6))


def test_optimal_covariance():
    assert_rejects(dsi.optimal_covariance, "tol", wrong_type="small", wrong_value=-1.0, differences=DIFFS)
    assert_rejects(dsi.optimal_covariance, "method", wrong_type=3, wrong_value="newton", differences=DIFFS)
    assert_rejects(dsi.optimal_covariance, "max_iter", wrong_type=2.5, wrong_value=0, differences=DIFFS)
    assert_rejects(dsi.optimal_covariance, "rank_tol", wrong_type="x", wrong_value=0.0, differences=DIFFS)


def test_isotropic_covariance():
    assert_rejects(dsi.isotropic_covariance, "rank_tol", wrong_type="x", wrong_value=-1.0, differences=DIFFS)


def test_mechanism():
    fit = lambda m: m.fit(DIFFS)  # noqa: E731 - parameters are validated in fit, as scikit-learn does
    assert_rejects(dsi.Mechanism, "epsilon", wrong_type="4", wrong_value=-4.0, call=fit)
    assert_rejects(dsi.Mechanism, "delta", wrong_type="1e-5", wrong_value=2.0, call=fit, epsilon=1.0)
    assert_rejects(dsi.Mechanism, "steps", wrong_type=1.5, wrong_value=0, call=fit, epsilon=1.0)
    assert_rejects(dsi.Mechanism, "noise", wrong_type=1, wrong_value="laplace", call=fit, epsilon=1.0)
    assert_rejects(dsi.Mechanism, "random_state", wrong_type="seed", wrong_value=-1, call=fit, epsilon=1.0)


def test_accounting():
    assert_rejects(dsi.sigma_from_epsilon, "epsilon", wrong_type="1", wrong_value=-1.0, delta=1e-5)
    assert_rejects(dsi.epsilon_from_sigma, "delta", wrong_type="d", wrong_value=1.5, sigma=1.0)
    assert_rejects(dsi.gdp_mu_from_epsilon, "epsilon", wrong_type=None, wrong_value=0.0, delta=1e-5)


def test_trainer():
    torch = pytest.importorskip("torch")
    X, y = torch.randn(16, 3), torch.randint(0, 2, (16,))
    fit = lambda t: t.fit(X, y, groups=np.repeat(np.arange(4), 4))  # noqa: E731
    model = torch.nn.Linear(3, 2)
    assert_rejects(dsi.DSITrainer, "lr", wrong_type="fast", wrong_value=-0.1, call=fit, model=model, epsilon=1.0)
    assert_rejects(dsi.DSITrainer, "rounds", wrong_type=2.0, wrong_value=0, call=fit, model=model, epsilon=1.0)
    assert_rejects(dsi.DSITrainer, "batch_size", wrong_type="all", wrong_value=0, call=fit, model=model,
                   epsilon=1.0)
    assert_rejects(dsi.DSITrainer, "sample_rate", wrong_type="q", wrong_value=1.5, call=fit, model=model,
                   epsilon=1.0)


def test_applications():
    pytest.importorskip("torch")
    from dsi.applications import TaskConfig, backdoor_defense, backdoor_expectation, memorization_mitigation

    tiny = TaskConfig(hidden=4, rounds=1, local_steps=1)
    assert_rejects(backdoor_defense, "noise_random_state", wrong_type="one", wrong_value=-1, config=tiny)
    assert_rejects(backdoor_defense, "blend", wrong_type="0.3", wrong_value=1.5, config=tiny)
    assert_rejects(backdoor_defense, "regime", wrong_type=1, wrong_value="laplace", config=tiny)
    assert_rejects(memorization_mitigation, "n_canaries", wrong_type=2.5, wrong_value=0, config=tiny)
    assert_rejects(backdoor_expectation, "draws", wrong_type=2.5, wrong_value=1, config=tiny)
