"""Privacy accounting for Gaussian DSI releases: noise multiplier <-> zCDP rho <-> (epsilon, delta).

A release F(D) + c * N(0, Sigma) whose differences satisfy s_i^T Sigma^{-1} s_i <= b_i (the budget of
:func:`dsi.optimal_covariance`) has Renyi divergence alpha * b_i / (2 c^2) between the pair (D, D_i),
i.e. rho_i = b_i / (2 c^2) zero-concentrated DP; T adaptive releases compose by adding rho. The paper's
code converts with epsilon = rho + 2 sqrt(rho ln(1/delta)) and spreads the budget over T steps with
per-step multiplier sigma * sqrt(T). The exact Gaussian-DP trade-off (Dong, Roth & Su) is also given,
both for the hypothesis-test bound and for a tighter (epsilon, delta) reading.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from scipy import optimize, special

from dsi._validation import as_numpy, check_delta, check_positive, check_steps

__all__ = [
    "REFERENCE_MULTIPLIERS",
    "compose",
    "delta_from_gdp",
    "epsilon_from_gdp",
    "epsilon_from_rho",
    "epsilon_from_sigma",
    "gdp_mu",
    "gdp_mu_from_epsilon",
    "renyi_divergence",
    "rho_from_epsilon",
    "rho_from_sigma",
    "sigma_from_epsilon",
    "sigma_from_rho",
    "tradeoff_power",
]

# The paper's code (utils.multiplier) for epsilon = 1..8 at delta = 1e-5, one step.
REFERENCE_MULTIPLIERS: dict[int, float] = {
    1: 4.90056,
    2: 2.49929,
    3: 1.69768,
    4: 1.29608,
    5: 1.05453,
    6: 0.893066,
    7: 0.777387,
    8: 0.69035,
}


def _nonneg(value: Any, *, name: str) -> float:
    try:
        out = float(value)
    except (TypeError, ValueError):
        raise TypeError(f"{name} must be a non-negative number, got {value!r}") from None
    if math.isnan(out) or out < 0 or math.isinf(out):
        raise ValueError(f"{name} must be a non-negative finite number, got {value!r}")
    return out


def rho_from_sigma(sigma: float, *, steps: int = 1, budget: float = 1.0) -> float:
    """The zCDP rho of ``steps`` releases at noise multiplier ``sigma``.

    Each release has squared-Mahalanobis budget ``budget``: rho = steps * budget / (2 sigma^2).
    """
    sigma = check_positive(sigma, name="sigma")
    return check_steps(steps) * check_positive(budget, name="budget") / (2.0 * sigma**2)


def sigma_from_rho(rho: float, *, steps: int = 1, budget: float = 1.0) -> float:
    """Per-step noise multiplier that makes ``steps`` releases total ``rho`` (inverse of rho_from_sigma)."""
    rho = check_positive(rho, name="rho")
    return math.sqrt(check_steps(steps) * check_positive(budget, name="budget") / (2.0 * rho))


def epsilon_from_rho(rho: float, delta: float) -> float:
    """(epsilon, delta)-DP implied by rho-zCDP: epsilon = rho + 2 sqrt(rho ln(1/delta)) (Bun & Steinke)."""
    rho = _nonneg(rho, name="rho")
    delta = check_delta(delta)
    return rho + 2.0 * math.sqrt(rho * math.log(1.0 / delta))


def rho_from_epsilon(epsilon: float, delta: float) -> float:
    """Largest rho whose epsilon_from_rho equals ``epsilon``: rho = (sqrt(L + eps) - sqrt(L))^2, L = ln(1/delta)."""
    epsilon = _nonneg(epsilon, name="epsilon")
    big_l = math.log(1.0 / check_delta(delta))
    # (sqrt(L+e) - sqrt(L))^2 written as e^2 / (sqrt(L+e) + sqrt(L))^2 to avoid cancellation for small e
    return epsilon**2 / (math.sqrt(big_l + epsilon) + math.sqrt(big_l)) ** 2


_ACCOUNTANTS = ("zcdp", "gdp")


def _check_accountant(accountant: str) -> None:
    if accountant not in _ACCOUNTANTS:
        raise ValueError(f"accountant must be one of {_ACCOUNTANTS}, got {accountant!r}")


def epsilon_from_sigma(
    sigma: float, delta: float, *, steps: int = 1, budget: float = 1.0, accountant: str = "zcdp"
) -> float:
    """Epsilon at ``delta`` after ``steps`` releases with per-step multiplier ``sigma``.

    ``accountant="zcdp"`` is the paper's conversion; ``"gdp"`` is the exact Gaussian-DP one (tighter).
    """
    _check_accountant(accountant)
    if accountant == "gdp":
        return epsilon_from_gdp(gdp_mu(sigma, steps=steps, budget=budget), delta)
    return epsilon_from_rho(rho_from_sigma(sigma, steps=steps, budget=budget), delta)


def sigma_from_epsilon(
    epsilon: float, delta: float, *, steps: int = 1, budget: float = 1.0, accountant: str = "zcdp"
) -> float:
    """Per-step noise multiplier so that ``steps`` releases are (epsilon, delta)-DP; sigma_1 * sqrt(steps)."""
    epsilon = check_positive(epsilon, name="epsilon")
    _check_accountant(accountant)
    if accountant == "gdp":
        mu = gdp_mu_from_epsilon(epsilon, delta)
        return math.sqrt(check_steps(steps) * check_positive(budget, name="budget")) / mu
    return sigma_from_rho(rho_from_epsilon(epsilon, delta), steps=steps, budget=budget)


def compose(rhos: Any) -> float:
    """ZCDP composition: the rho of a sequence of (adaptive) releases is the sum of their rhos."""
    arr = np.asarray(as_numpy(rhos, name="rhos"), dtype=np.float64).ravel()
    if arr.size == 0 or not np.all(np.isfinite(arr)) or np.any(arr < 0):
        raise ValueError("rhos must be a non-empty sequence of non-negative finite numbers")
    return float(arr.sum())


def renyi_divergence(mahalanobis: Any, alpha: float, *, sigma: float = 1.0, steps: int = 1) -> np.ndarray:
    """D_alpha(N(F(D), c^2 Sigma) || N(F(D_i), c^2 Sigma)) = alpha * m_i / (2 c^2) per difference, times steps.

    ``mahalanobis`` holds m_i = s_i^T Sigma^{-1} s_i (e.g. ``OptimalCovariance.mahalanobis``); c = sigma.
    """
    m = np.asarray(as_numpy(mahalanobis, name="mahalanobis"), dtype=np.float64)
    if not np.all(np.isfinite(m)) or np.any(m < 0):
        raise ValueError("mahalanobis values must be non-negative and finite")
    alpha = float(alpha)
    if not alpha > 1.0 or math.isinf(alpha):
        raise ValueError(f"alpha (the Renyi order) must be a finite number > 1, got {alpha!r}")
    sigma = check_positive(sigma, name="sigma")
    return check_steps(steps) * alpha * m / (2.0 * sigma**2)


def gdp_mu(sigma: float, *, steps: int = 1, budget: float = 1.0) -> float:
    """Gaussian-DP parameter of ``steps`` releases: mu = sqrt(steps * budget) / sigma."""
    sigma = check_positive(sigma, name="sigma")
    return math.sqrt(check_steps(steps) * check_positive(budget, name="budget")) / sigma


def tradeoff_power(alpha: Any, mu: float) -> np.ndarray:
    """The most powerful test's true-positive rate at false-positive rate ``alpha``.

    Between N(0,1) and N(mu,1) it is Phi(Phi^{-1}(alpha) + mu). No test on a mu-GDP release can exceed it.
    """
    a = np.asarray(alpha, dtype=np.float64)
    if np.any((a < 0) | (a > 1)):
        raise ValueError("alpha (false-positive rate) must lie in [0, 1]")
    mu = _nonneg(mu, name="mu")
    return special.ndtr(special.ndtri(a) + mu)


def delta_from_gdp(mu: float, epsilon: float) -> float:
    """Exact delta(epsilon) of mu-GDP: Phi(-eps/mu + mu/2) - e^eps Phi(-eps/mu - mu/2) (Balle & Wang 2018)."""
    mu = check_positive(mu, name="mu")
    epsilon = _nonneg(epsilon, name="epsilon")
    return float(special.ndtr(-epsilon / mu + mu / 2) - math.exp(epsilon) * special.ndtr(-epsilon / mu - mu / 2))


def gdp_mu_from_epsilon(epsilon: float, delta: float) -> float:
    """Largest mu whose mu-GDP implies (epsilon, delta)-DP (inverse of epsilon_from_gdp)."""
    epsilon = check_positive(epsilon, name="epsilon")
    delta = check_delta(delta)
    hi = 1.0
    while delta_from_gdp(hi, epsilon) < delta:
        hi *= 2.0
    return float(optimize.brentq(lambda m: delta_from_gdp(m, epsilon) - delta, 1e-12, hi, xtol=1e-14, rtol=1e-13))


def epsilon_from_gdp(mu: float, delta: float) -> float:
    """Smallest epsilon with delta_from_gdp(mu, epsilon) <= delta (tighter than the zCDP conversion)."""
    mu = check_positive(mu, name="mu")
    delta = check_delta(delta)
    if delta_from_gdp(mu, 0.0) <= delta:
        return 0.0
    hi = 1.0
    while delta_from_gdp(mu, hi) > delta:
        hi *= 2.0
    return float(optimize.brentq(lambda e: delta_from_gdp(mu, e) - delta, 0.0, hi, xtol=1e-12, rtol=1e-12))
