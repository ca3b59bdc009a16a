"""The expected-exposure code path (dsi.exposure) on a reduced memorisation setup (40 steps, 255
candidates, exploratory seed 0); about 8 s single-threaded."""

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from dsi.accounting import gdp_mu_from_epsilon  # noqa: E402
from dsi.exposure import candidate_exposures, expected_exposure, memorization_data, train_one_round  # noqa: E402


@pytest.fixture(scope="module")
def small():
    data = memorization_data(0, n_references=255)
    return data, train_one_round(data, 0, 0.05, local_steps=40)


def _gap(rnd, data, scale, draws, seed=1):
    """Mean over paired draws and canaries of exposure(M(D)) - exposure(M(D_-j)), both with the same noise
    ``scale * c * N(0, Sigma)`` (DSI's counterfactual: Sigma fitted on D)."""
    gen = np.random.default_rng(seed)
    gaps = []
    for _ in range(draws):
        z = scale * rnd.draw_noise(gen)
        e_d = candidate_exposures(rnd.release(z), data)[0]
        e_cf = [candidate_exposures(rnd.release(z - rnd.differences[j]), data)[0][j] for j in range(data.n_canaries)]
        gaps.append(np.mean(e_d - np.array(e_cf)))
    return float(np.mean(gaps))


def test_release_matches_trainer_and_noise_is_calibrated(small):
    data, rnd = small
    assert rnd.noise_multiplier == pytest.approx(1.0 / gdp_mu_from_epsilon(0.05, data.config.delta), rel=1e-9)
    # noise of c * N(0, Sigma) leaves every canary's difference at Mahalanobis distance <= 1/c (= mu)
    assert np.max(rnd.covariance.mahalanobis) <= 1.0 + 1e-6
    # the trainer's own release lies at theta0 + Delta + (noise in the span of the differences)
    params = list(rnd.model.parameters())
    released = torch.nn.utils.parameters_to_vector(params).detach().double().numpy()
    noise = released - rnd.theta0 - rnd.update
    basis = rnd.covariance.basis()
    assert np.linalg.norm(noise - basis @ (basis.T @ noise)) <= 1e-3 * np.linalg.norm(noise)


def test_expected_exposure_at_small_epsilon_approaches_dsis_counterfactual(small):
    """As epsilon -> 0 (mu = 0.014 at epsilon 0.05) the release on D and DSI's counterfactual without canary j
    (same Sigma, same noise) must give the same expected exposure; at epsilon 8 (mu = 1.67) they must not,
    or the noise would be miscalibrated or the canaries not learned."""
    data, rnd = small
    assert abs(_gap(rnd, data, 1.0, draws=12)) < 0.2
    c8 = 1.0 / gdp_mu_from_epsilon(8.0, data.config.delta)
    assert _gap(rnd, data, c8 / rnd.noise_multiplier, draws=12) > 0.8


def test_expected_exposure_summaries_are_consistent(small):
    data, _ = small
    res = expected_exposure(0, 8.0, 4, local_steps=40, data=data)
    assert res.per_draw.shape == (4,) and res.per_canary.shape == (data.n_canaries,)
    assert res.exposure == pytest.approx(res.per_draw.mean()) == pytest.approx(res.per_canary.mean())
    assert 0.0 <= res.exposure <= np.log2(data.n_references + 1)
    assert res.noise_multiplier == pytest.approx(1.0 / gdp_mu_from_epsilon(8.0, data.config.delta))
    # Delta does not depend on epsilon: the same round as the fixture's (trained at epsilon 0.05)
    np.testing.assert_array_equal(res.update, small[1].update)
    with pytest.raises(ValueError):
        expected_exposure(0, 8.0, 1, local_steps=40, data=data)
