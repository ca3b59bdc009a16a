import math

import numpy as np
import pytest
from scipy import stats
from scipy.integrate import trapezoid

import dsi
from dsi import (
    REFERENCE_MULTIPLIERS,
    compose,
    delta_from_gdp,
    epsilon_from_gdp,
    epsilon_from_rho,
    epsilon_from_sigma,
    gdp_mu,
    renyi_divergence,
    rho_from_epsilon,
    rho_from_sigma,
    sigma_from_epsilon,
    sigma_from_rho,
    tradeoff_power,
)


@pytest.mark.parametrize("eps", range(1, 9))
def test_reference_multipliers_both_directions(eps):
    sigma = REFERENCE_MULTIPLIERS[eps]
    assert abs(epsilon_from_sigma(sigma, 1e-5) - eps) < 1e-4
    assert abs(sigma_from_epsilon(eps, 1e-5) - sigma) < 1e-4


def test_zcdp_closed_forms_and_inverses():
    # rho = 1/(2 sigma^2); eps = rho + 2 sqrt(rho ln(1/delta))
    assert rho_from_sigma(2.0) == pytest.approx(0.125)
    assert epsilon_from_rho(0.125, 1e-5) == pytest.approx(0.125 + 2 * math.sqrt(0.125 * math.log(1e5)))
    for rho in [1e-6, 0.01, 0.5, 3.0, 40.0]:
        for delta in [1e-9, 1e-5, 0.1]:
            assert rho_from_epsilon(epsilon_from_rho(rho, delta), delta) == pytest.approx(rho, rel=1e-10)
    assert sigma_from_rho(rho_from_sigma(1.7, steps=9), steps=9) == pytest.approx(1.7)


def test_composition_over_steps():
    # T steps at sigma * sqrt(T) compose back to the one-step rho
    sigma, steps = 1.29608, 50
    per_step = rho_from_sigma(sigma * math.sqrt(steps))
    assert compose([per_step] * steps) == pytest.approx(rho_from_sigma(sigma))
    assert rho_from_sigma(sigma * math.sqrt(steps), steps=steps) == pytest.approx(rho_from_sigma(sigma))
    assert sigma_from_epsilon(4, 1e-5, steps=steps) == pytest.approx(
        REFERENCE_MULTIPLIERS[4] * math.sqrt(steps), rel=1e-5
    )
    assert epsilon_from_sigma(REFERENCE_MULTIPLIERS[4] * math.sqrt(steps), 1e-5, steps=steps) == pytest.approx(
        4, abs=1e-4
    )


def test_renyi_divergence_matches_gaussian_closed_form():
    # D_alpha(N(0, c^2 S) || N(s, c^2 S)) = alpha s^T S^-1 s / (2 c^2); check with a direct integral in 1-D
    alpha, c, s = 3.0, 1.5, 0.8
    x = np.linspace(-30, 30, 200001)
    p = stats.norm.pdf(x, 0, c)
    q = stats.norm.pdf(x, s, c)
    integral = trapezoid(p**alpha * q ** (1 - alpha), x)  # np.trapezoid needs numpy >= 2
    direct = math.log(integral) / (alpha - 1)
    assert renyi_divergence([s**2], alpha, sigma=c)[0] == pytest.approx(direct, rel=1e-6)
    assert renyi_divergence([1.0, 0.25], 2.0, sigma=2.0, steps=4).tolist() == pytest.approx([1.0, 0.25])


def test_gdp_conversions():
    # the analytic Gaussian mechanism: delta(eps) at mu = 1, eps = 1 (Balle & Wang formula)
    expected = stats.norm.cdf(-1 + 0.5) - math.e * stats.norm.cdf(-1 - 0.5)
    assert delta_from_gdp(1.0, 1.0) == pytest.approx(expected)
    eps = epsilon_from_gdp(1.0, 1e-5)
    assert delta_from_gdp(1.0, eps) == pytest.approx(1e-5, rel=1e-6)
    # the exact conversion is never looser than the zCDP one
    for sigma in REFERENCE_MULTIPLIERS.values():
        assert epsilon_from_gdp(gdp_mu(sigma), 1e-5) <= epsilon_from_sigma(sigma, 1e-5)
    assert tradeoff_power(0.05, 0.0) == pytest.approx(0.05)
    assert tradeoff_power(0.05, 1.0) == pytest.approx(stats.norm.cdf(stats.norm.ppf(0.05) + 1.0))


@pytest.mark.parametrize(
    "call, match",
    [
        (lambda: epsilon_from_rho(1.0, 0.0), "delta"),
        (lambda: epsilon_from_rho(1.0, 1.0), "delta"),
        (lambda: sigma_from_epsilon(1.0, 1.5), "delta"),
        (lambda: sigma_from_epsilon(0.0, 1e-5), "epsilon"),
        (lambda: rho_from_sigma(-1.0), "sigma"),
        (lambda: rho_from_sigma(1.0, steps=0), "steps"),
        (lambda: renyi_divergence([1.0], 1.0), "alpha"),
        (lambda: compose([]), "rhos"),
        (lambda: tradeoff_power(1.5, 1.0), "alpha"),
    ],
)
def test_bad_accounting_inputs(call, match):
    with pytest.raises(ValueError, match=match):
        call()


def test_public_api_is_exported():
    for name in dsi.__all__:
        assert hasattr(dsi, name)


@pytest.mark.parametrize("eps", [0.5, 1.0, 4.0, 8.0])
def test_gdp_accountant_roundtrip_and_is_tighter(eps):
    for steps in [1, 30]:
        sigma = sigma_from_epsilon(eps, 1e-5, steps=steps, accountant="gdp")
        assert epsilon_from_sigma(sigma, 1e-5, steps=steps, accountant="gdp") == pytest.approx(eps, rel=1e-9)
        assert sigma < sigma_from_epsilon(eps, 1e-5, steps=steps)
    with pytest.raises(ValueError, match="accountant"):
        sigma_from_epsilon(eps, 1e-5, accountant="moments")
