"""Deterministic equivalents: identities, the K = I limit, and agreement with simulation."""

import numpy as np
import pytest

from corrgcv import ExponentialCorrelation, deterministic_equivalent, power_law_problem, simulate_risk

PROBLEM = power_law_problem(100, capacity=1.8, source=0.3, noise_std=0.05)


@pytest.mark.parametrize("K", [None, ExponentialCorrelation(xi=5.0), ExponentialCorrelation(xi=100.0)])
@pytest.mark.parametrize("T", [10, 100, 1000])
def test_duality_and_matching_degrees_of_freedom(K, T):
    lams = np.logspace(-6, 1, 8)
    de = deterministic_equivalent(PROBLEM.spectrum, PROBLEM.target, n_samples=T, ridge=lams, K=K, noise_variance=0.0025)
    np.testing.assert_allclose(de.kappa * de.kappa_tilde / lams, 1 / de.df1_tilde, rtol=1e-10)
    np.testing.assert_allclose(de.df1_tilde, de.df1 * 100 / T, rtol=1e-10)  # df1_tilde = q df1
    assert np.all(de.kappa >= lams) and np.all((de.gamma > 0) & (de.gamma < 1))


def test_independent_samples_reduce_to_classical_self_consistent_equation():
    T, lam = 80, 1e-3
    de = deterministic_equivalent(PROBLEM.spectrum, PROBLEM.target, n_samples=T, ridge=lam, noise_variance=0.01)
    eta, kappa = PROBLEM.spectrum, de.kappa[0]
    # kappa = lambda + kappa / T * tr Sigma (Sigma + kappa)^{-1};  gamma = (1/T) tr Sigma^2 (Sigma + kappa)^{-2}
    assert kappa == pytest.approx(lam + kappa * np.sum(eta / (eta + kappa)) / T, rel=1e-12)
    gamma = np.sum(eta**2 / (eta + kappa) ** 2) / T
    assert de.gamma[0] == pytest.approx(gamma, rel=1e-12)
    bias = kappa**2 * np.sum(eta * PROBLEM.target**2 / (eta + kappa) ** 2) / (1 - gamma)
    assert de.generalization_error[0] == pytest.approx(bias + gamma / (1 - gamma) * 0.01, rel=1e-12)


@pytest.mark.parametrize("xi,lam", [(100.0, 1e-4), (0.01, 1e-2)], ids=["strong", "weak"])
def test_theory_matches_simulation_over_q(xi, lam):
    # q = N / T from 10 down to 0.1; more seeds at small T where fluctuations are larger.
    corr = ExponentialCorrelation(xi=xi)
    for T in (10, 40, 158, 1000):
        seeds = range(max(10, 2000 // T))
        sim = simulate_risk(PROBLEM, corr, T, lam * T, seeds=seeds)
        de = deterministic_equivalent(
            PROBLEM.spectrum, PROBLEM.target, n_samples=T, ridge=lam, K=corr, noise_variance=PROBLEM.noise_std**2
        )
        ratio = sim.out_of_sample_risk.mean() / de.out_of_sample_risk[0]
        assert abs(ratio - 1) <= 0.10, (T, ratio)


def test_strong_correlation_raises_risk_relative_to_independent():
    kw = dict(n_samples=100, ridge=1e-4, noise_variance=0.0025)
    indep = deterministic_equivalent(PROBLEM.spectrum, PROBLEM.target, **kw)
    strong = deterministic_equivalent(PROBLEM.spectrum, PROBLEM.target, K=ExponentialCorrelation(xi=100.0), **kw)
    assert strong.out_of_sample_risk[0] > 1.5 * indep.out_of_sample_risk[0]
