"""The mirror-ascent solver against cvxpy's SDP solver (an independent formulation of the primal)."""

import numpy as np
import pytest

from dsi import optimal_covariance

pytest.importorskip("cvxpy")

RANDOM_20x6 = np.random.default_rng(0).standard_normal((20, 6)).T


def test_random_20x6_matches_sdp():
    ours = optimal_covariance(RANDOM_20x6)
    sdp = optimal_covariance(RANDOM_20x6, method="sdp")
    assert sdp.method == "sdp" and sdp.converged
    assert abs(ours.trace - sdp.trace) / sdp.trace < 1e-4
    # the SDP's dual variables (corner of each LMI multiplier) are the same mu
    np.testing.assert_allclose(ours.dual, sdp.dual, rtol=2e-3)
    np.testing.assert_allclose(ours.reduced_covariance, sdp.reduced_covariance, atol=2e-3 * ours.max_eigenvalue)


@pytest.mark.parametrize("seed, n, d", [(1, 8, 5), (2, 5, 30), (3, 12, 4)])
def test_random_problems_with_budgets_match_sdp(seed, n, d):
    rng = np.random.default_rng(seed)
    diffs = rng.standard_normal((n, d)) * rng.uniform(0.2, 3.0, size=(n, 1))
    budgets = rng.uniform(0.3, 3.0, size=n)
    ours = optimal_covariance(diffs, budgets, tol=1e-7)
    sdp = optimal_covariance(diffs, budgets, method="sdp")
    assert abs(ours.trace - sdp.trace) / sdp.trace < 1e-4
    assert np.all(sdp.mahalanobis <= budgets * (1 + 1e-9))
