import numpy as np
import pytest
from scipy import stats
from sklearn.exceptions import NotFittedError

from dsi import Mechanism, epsilon_from_sigma, tradeoff_power

RANDOM_20x6 = np.random.default_rng(0).standard_normal((20, 6)).T


def test_calibration_and_fitted_attributes():
    mech = Mechanism(epsilon=4.0, delta=1e-5, steps=10, random_state=0).fit(RANDOM_20x6)
    assert mech.noise_multiplier_ == pytest.approx(1.29608 * np.sqrt(10), rel=1e-5)
    # every difference with a tight constraint is exactly at the target epsilon, the rest below it
    assert np.all(mech.epsilon_ <= 4.0 + 1e-6)
    assert mech.epsilon_.max() == pytest.approx(4.0, abs=1e-4)
    assert mech.noise_trace_ == pytest.approx(mech.noise_multiplier_**2 * mech.covariance_.trace)
    iso = Mechanism(epsilon=4.0, steps=10, noise="isotropic").fit(RANDOM_20x6)
    assert iso.noise_trace_ > mech.noise_trace_
    assert iso.epsilon_.max() == pytest.approx(4.0, abs=1e-4)


def test_privatize_numpy_and_torch_reproducible():
    torch = pytest.importorskip("torch")
    outcome = np.arange(20.0)
    a = Mechanism(noise_multiplier=1.0, random_state=3).fit(RANDOM_20x6)
    b = Mechanism(noise_multiplier=1.0, random_state=3).fit(RANDOM_20x6)
    out_a = a.privatize(outcome)
    out_b = b.privatize(torch.tensor(outcome.reshape(4, 5), dtype=torch.float32))
    assert isinstance(out_b, torch.Tensor) and out_b.shape == (4, 5) and out_b.dtype == torch.float32
    np.testing.assert_allclose(out_b.numpy().ravel(), out_a, rtol=1e-6)
    # noise lies in the span of the differences
    basis = a.covariance_.basis()
    resid = (out_a - outcome) - basis @ (basis.T @ (out_a - outcome))
    assert np.linalg.norm(resid) < 1e-9 * np.linalg.norm(out_a - outcome)
    assert not np.allclose(a.privatize(outcome), out_a)  # the stream advances


def test_likelihood_ratio_test_respects_gaussian_tradeoff():
    """Monte-Carlo Neyman-Pearson test between N(F(D), c^2 Sigma) and N(F(D_i), c^2 Sigma), 10^5 draws each."""
    c = 0.9
    mech = Mechanism(noise_multiplier=c, random_state=11).fit(RANDOM_20x6)
    outcome = np.random.default_rng(4).standard_normal(20)
    n = 100_000
    null = outcome + mech.sample_noise(n)
    pinv = np.linalg.pinv(mech.covariance_.covariance())
    alpha = 0.05
    for i, s in enumerate(RANDOM_20x6):
        alt = (outcome - s) + mech.sample_noise(n)
        w = pinv @ s  # the log-likelihood ratio is linear in this direction
        threshold = np.quantile(null @ w, alpha)  # reject H0 (D produced it) when the statistic is small
        tpr = np.mean(alt @ w < threshold)
        bound = tradeoff_power(alpha, np.sqrt(mech.covariance_.mahalanobis[i]) / c)
        # standard error of the TPR plus that of the estimated threshold (delta method through the ROC slope)
        slope = stats.norm.pdf(stats.norm.ppf(bound)) / stats.norm.pdf(stats.norm.ppf(alpha))
        se = np.sqrt(bound * (1 - bound) / n + slope**2 * alpha * (1 - alpha) / n)
        assert tpr <= bound + 3 * se, (i, tpr, bound)
        assert tpr >= bound - 6 * se  # the bound is attained: the noise is not larger than it needs to be
    # the tight constraints give mu = 1/c
    assert mech.gdp_mu().max() == pytest.approx(1 / c, rel=1e-6)
    assert stats.norm.cdf(stats.norm.ppf(alpha) + 1 / c) == pytest.approx(float(tradeoff_power(alpha, 1 / c)))


def test_mechanism_errors():
    with pytest.raises(ValueError, match="exactly one of epsilon"):
        Mechanism().fit(RANDOM_20x6)
    with pytest.raises(ValueError, match="exactly one of epsilon"):
        Mechanism(epsilon=1.0, noise_multiplier=1.0).fit(RANDOM_20x6)
    with pytest.raises(ValueError, match="delta must be a float in \\(0, 1\\)"):
        Mechanism(epsilon=1.0, delta=1.0).fit(RANDOM_20x6)
    with pytest.raises(ValueError, match="noise must be one of"):
        Mechanism(epsilon=1.0, noise="laplace").fit(RANDOM_20x6)
    with pytest.raises(NotFittedError, match="call fit"):
        Mechanism(epsilon=1.0).privatize(np.zeros(20))
    with pytest.raises(ValueError, match="call fit"):  # NotFittedError is a ValueError, as in scikit-learn
        Mechanism(epsilon=1.0).gdp_mu()
    mech = Mechanism(epsilon=1.0).fit(RANDOM_20x6)
    with pytest.raises(ValueError, match="20"):
        mech.privatize(np.zeros(21))
    assert "epsilon=1" in repr(mech)
    assert epsilon_from_sigma(mech.noise_multiplier_, 1e-5) == pytest.approx(1.0)


def test_random_state_int_and_generator_give_the_same_stream():
    new = Mechanism(noise_multiplier=1.0, random_state=7).fit(RANDOM_20x6).sample_noise(3)
    np.testing.assert_array_equal(new, Mechanism(noise_multiplier=1.0, random_state=7).fit(RANDOM_20x6).sample_noise(3))
    # a Generator is used as the stream itself (scikit-learn semantics)
    gen = np.random.default_rng(7)
    mech = Mechanism(noise_multiplier=1.0, random_state=gen).fit(RANDOM_20x6)
    np.testing.assert_array_equal(mech.sample_noise(3), new)


def test_auxiliary_streams_do_not_overlap_other_seeds():
    from dsi.applications import _stream

    first = {name: _stream(0, name).standard_normal(4) for name in ("augment", "exposure-noise")}
    assert not np.allclose(first["augment"], first["exposure-noise"])
    for k in range(3):  # neither stream of seed 0 is another seed's main stream
        main = np.random.default_rng(k).standard_normal(4)
        assert not any(np.allclose(v, main) for v in first.values())
    np.testing.assert_array_equal(_stream(0, "augment").standard_normal(4), first["augment"])
