"""The accounting at the edges of its range: the right answer, or a ValueError that names the cause.

Each case raised a raw OverflowError, ZeroDivisionError, RuntimeError or MemoryError, hung, or returned a
negative or garbage value before.
"""

import math
import time

import numpy as np
import pytest

import dsi
from dsi import accounting
from dsi.accounting import DEFAULT_ORDERS, epsilon_from_rdp, rdp_subsampled_gaussian

mpmath = pytest.importorskip("mpmath")


def _mp_delta_gdp(mu, eps):
    """Delta of mu-GDP at eps in 60-digit arithmetic."""
    with mpmath.workdps(60):
        mu, eps = mpmath.mpf(mu), mpmath.mpf(eps)
        a, b = -eps / mu + mu / 2, -eps / mu - mu / 2
        return float(mpmath.ncdf(a) - mpmath.exp(eps) * mpmath.ncdf(b))


def _mp_rdp(q, sigma, alpha):
    """Renyi DP of the Poisson-subsampled Gaussian by 40-digit quadrature of E[(1 - q + q L)^alpha]."""
    with mpmath.workdps(40):
        q, s = mpmath.mpf(q), mpmath.mpf(sigma)

        def f(x):
            return mpmath.npdf(x, 0, s) * ((1 - q) + q * mpmath.e ** ((2 * x - 1) / (2 * s**2))) ** alpha

        return float(mpmath.log(mpmath.quad(f, [-mpmath.inf, -10 * s, -s, 0, s, 10 * s, mpmath.inf])) / (alpha - 1))


# -- Gaussian DP ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("epsilon", [30.0, 1e3, 1e4])
def test_gdp_at_large_epsilon_is_right(epsilon):
    # exp(epsilon) overflowed (epsilon > 709): OverflowError from sigma_from_epsilon, Mechanism, DSITrainer
    mu = dsi.gdp_mu_from_epsilon(epsilon, 1e-5)
    assert dsi.delta_from_gdp(mu, epsilon) == pytest.approx(1e-5, rel=1e-9)
    assert _mp_delta_gdp(mu, epsilon) == pytest.approx(1e-5, rel=1e-9)
    sigma = dsi.sigma_from_epsilon(epsilon, 1e-5, accountant="gdp")
    assert sigma == pytest.approx(1.0 / mu, rel=1e-12)
    assert dsi.epsilon_from_sigma(sigma, 1e-5, accountant="gdp") == pytest.approx(epsilon, rel=1e-9)


def test_delta_from_gdp_without_overflow_or_cancellation():
    for mu, eps in [(40.0, 800.0), (150.0, 1e4), (3.6e-12, 1e-12), (2.5e-5, 1e-12), (1e-3, 0.0)]:
        assert dsi.delta_from_gdp(mu, eps) == pytest.approx(_mp_delta_gdp(mu, eps), rel=1e-9)
    # tiny epsilon and delta: the two-term formula cancelled, delta_from_gdp(mu) was 3e-5 above delta
    mu = dsi.gdp_mu_from_epsilon(1e-12, 1e-12)
    assert _mp_delta_gdp(mu, 1e-12) == pytest.approx(1e-12, rel=1e-9)
    # far-out arguments: an answer, not a RuntimeError (brentq) or OverflowError
    assert 0.0 <= dsi.epsilon_from_sigma(1e30, 1e-300, accountant="gdp") < 1e-20
    with pytest.raises(ValueError, match="mu=.* is too large"):
        dsi.epsilon_from_gdp(1e200, 1e-5)
    with pytest.raises(ValueError, match="sigma=.* is too small.*accepted: sigma >="):
        dsi.gdp_mu(1e-300, steps=10**6, budget=1e300)


def test_mechanism_and_trainer_calibrate_at_epsilon_1e4():
    diffs = np.random.default_rng(0).standard_normal((4, 6))
    mech = dsi.Mechanism(epsilon=1e4, accountant="gdp", random_state=0).fit(diffs)
    assert mech.noise_multiplier_ == pytest.approx(dsi.sigma_from_epsilon(1e4, 1e-5, accountant="gdp"))
    # every difference's Mahalanobis norm is at most its budget (to the solver's tolerance)
    assert mech.epsilon_.max() <= 1e4 * (1 + 1e-9) and mech.epsilon_.max() == pytest.approx(1e4, rel=1e-5)


# -- zCDP ------------------------------------------------------------------------------------------------


def test_zcdp_extremes():
    # sigma^2 underflowed (ZeroDivisionError) or overflowed (OverflowError)
    with pytest.raises(ValueError, match="sigma=1e-300 is too small.*accepted: sigma >= "):
        dsi.rho_from_sigma(1e-300)
    assert dsi.rho_from_sigma(1e300) == 0.0
    assert dsi.epsilon_from_sigma(1e300, 1e-5) == 0.0
    # epsilon^2 overflowed
    eps = 1e300
    rho = dsi.rho_from_epsilon(eps, 1e-5)
    assert dsi.epsilon_from_rho(rho, 1e-5) == pytest.approx(eps, rel=1e-12)
    assert dsi.sigma_from_epsilon(eps, 1e-5) == pytest.approx(math.sqrt(1 / (2 * rho)), rel=1e-12)
    assert dsi.sigma_from_epsilon(1e4, 1e-5) == pytest.approx(
        math.sqrt(1 / (2 * dsi.rho_from_epsilon(1e4, 1e-5))), rel=1e-12
    )
    with pytest.raises(ValueError, match="too small: its zCDP rho underflows"):
        dsi.sigma_from_epsilon(1e-300, 1e-5)
    with pytest.raises(ValueError, match="overflows float64"):
        dsi.renyi_divergence([1e300], 2.0, sigma=1e-300)
    with pytest.raises(ValueError, match="overflows float64"):
        dsi.compose([1e308, 1e308])


# -- Renyi DP --------------------------------------------------------------------------------------------


def test_rdp_tiny_and_huge_noise():
    # tiny noise: ZeroDivisionError or inf before
    for q in (1e-12, 0.5, 1.0):
        with pytest.raises(ValueError, match="noise_multiplier=1e-300 is too small.*accepted"):
            rdp_subsampled_gaussian(q, 1e-300)
    # huge noise: OverflowError (sigma**2) or negative values before; now in [0, alpha / (2 sigma^2)]
    for q, sigma in [(0.5, 1e8), (0.5, 1e300), (1 - 1e-12, 1e300), (1e-6, 1e8)]:
        values = rdp_subsampled_gaussian(q, sigma)
        assert np.all(values >= 0) and np.all(values <= np.asarray(DEFAULT_ORDERS) / 2 / sigma / sigma + 1e-300)
    # integer orders keep their relative accuracy at large sigma and tiny q (1.8e-19 instead of 1e-28 before)
    q, sigma = 1e-6, 1e8
    expected = [math.log1p(a * (a - 1) / 2 * q**2 * math.expm1(1 / sigma**2)) / (a - 1) for a in (2, 10)]
    np.testing.assert_allclose(rdp_subsampled_gaussian(q, sigma, [2.0, 10.0]), expected, rtol=1e-6)


def test_rdp_fractional_orders_where_the_series_cancels():
    # opacus (and this package before) gave -0.669 at q = 0.5, sigma = 30, order 62.5
    ref = _mp_rdp(0.5, 30.0, 62.5)
    got = rdp_subsampled_gaussian(0.5, 30.0, [62.5])[0]
    assert ref <= got <= ref * (1 + 1e-3)  # the convex-interpolation upper bound
    # the small-q expansion against quadrature (the two-sided series: 2e-7 off at the first)
    for q, sigma, alpha in [(1e-4, 30.0, 2.5), (0.01, 1e3, 30.5)]:
        assert rdp_subsampled_gaussian(q, sigma, [alpha])[0] == pytest.approx(_mp_rdp(q, sigma, alpha), rel=1e-9)
    # large sigma, large q: an upper bound, tight at the high orders that set epsilon
    ref = _mp_rdp(0.5, 1e4, 10.5)
    assert ref <= rdp_subsampled_gaussian(0.5, 1e4, [10.5])[0] <= ref * 1.003


def test_rdp_order_range_and_rdp_values():
    start = time.perf_counter()
    with pytest.raises(ValueError, match=r"orders must lie in \(1, 10000\]"):
        rdp_subsampled_gaussian(0.1, 1.0, [1e6, 1e12])  # looped for minutes before
    with pytest.raises(ValueError, match=r"orders must lie in \(1, 10000\]"):
        rdp_subsampled_gaussian(0.1, 1.0, [1e6], sampling="fixed")  # NaN before
    assert time.perf_counter() - start < 5
    assert np.isfinite(rdp_subsampled_gaussian(0.1, 1.0, [2000.0, 10_000.0], sampling="fixed")).all()
    with pytest.raises(ValueError, match="non-negative finite"):
        epsilon_from_rdp([np.inf, np.inf], [2.0, 3.0], 1e-5)  # returned (inf, 2.0)
    with pytest.raises(ValueError, match="non-negative finite"):
        epsilon_from_rdp([np.nan, np.nan], [2.0, 3.0], 1e-5)  # "All-NaN slice" before
    with pytest.raises(ValueError, match="orders must be finite Renyi orders > 1"):
        epsilon_from_rdp([1.0], [0.5], 1e-5)


@pytest.mark.parametrize("epsilon", [1e4, 1e8, 1e300])
def test_rdp_sigma_at_large_epsilon(epsilon):
    sigma = dsi.sigma_from_epsilon(epsilon, 1e-5, accountant="rdp", sample_rate=0.5)
    back = dsi.epsilon_from_sigma(sigma, 1e-5, accountant="rdp", sample_rate=0.5)
    assert back <= epsilon and back == pytest.approx(epsilon, rel=1e-6)


# -- PRV (opacus) ----------------------------------------------------------------------------------------


def test_prv_refuses_a_grid_that_does_not_fit():
    pytest.importorskip("opacus")
    accounting.epsilon_from_sigma(2.0, 1e-5, accountant="prv")  # opacus imported before the clock starts
    start = time.perf_counter()
    # opacus asks for an 838 GiB array here (MemoryError); the message names the grid and the accepted range
    with pytest.raises(ValueError, match=r"grid of 3\.56e\+09 points.*noise multipliers >= 0\.05"):
        dsi.epsilon_from_sigma(1e-3, 1e-5, accountant="prv")
    smallest = accounting._prv_smallest_sigma(1.0, 1, 1e-5)
    assert accounting._prv_grid(smallest, 1.0, 1, 1e-5) <= accounting._PRV_MAX_GRID
    assert accounting._prv_grid(smallest / 1.02, 1.0, 1, 1e-5) > accounting._PRV_MAX_GRID
    with pytest.raises(ValueError, match="no noise multiplier fits at this many steps"):
        dsi.epsilon_from_sigma(1.0, 1e-5, steps=10**6, accountant="prv", sample_rate=0.01)
    with pytest.raises(ValueError, match="below the PRV accountant's resolution"):
        dsi.sigma_from_epsilon(1e-3, 1e-5, accountant="prv")
    assert time.perf_counter() - start < 20


@pytest.mark.slow
def test_prv_sigma_at_epsilon_1e4_names_the_range():
    pytest.importorskip("opacus")
    # the answer (about 0.0073, as "gdp" gives) lies below the grid's range: refused with the largest epsilon
    # the grid reaches (about 264 at multiplier 0.052); a multiplier inside the range is found
    with pytest.raises(ValueError, match="above the PRV accountant's range.*noise multipliers >= 0\\.05"):
        dsi.sigma_from_epsilon(1e4, 1e-5, accountant="prv")
    sigma = dsi.sigma_from_epsilon(200.0, 1e-5, accountant="prv")
    assert sigma == pytest.approx(dsi.sigma_from_epsilon(200.0, 1e-5, accountant="gdp"), rel=1e-3)
