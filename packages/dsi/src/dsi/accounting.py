"""Privacy accounting for Gaussian DSI releases: noise multiplier <-> zCDP rho <-> (epsilon, delta).

A release F(D) + c * N(0, Sigma) whose differences satisfy s_i^T Sigma^{-1} s_i <= b_i (the budget of
:func:`dsi.optimal_covariance`) has Renyi divergence alpha * b_i / (2 c^2) between the pair (D, D_i),
i.e. rho_i = b_i / (2 c^2) zero-concentrated DP; T adaptive releases compose by adding rho. The paper's
code converts with epsilon = rho + 2 sqrt(rho ln(1/delta)) and spreads the budget over T steps with
per-step multiplier sigma * sqrt(T). The exact Gaussian-DP trade-off (Dong, Roth & Su) is also given,
both for the hypothesis-test bound and for a tighter (epsilon, delta) reading.

With subsampling (each round sees a random part of the protected groups), pair i is a subsampled Gaussian
mechanism with sensitivity sqrt(b_i) and noise c: ``accountant="rdp"`` composes its Renyi DP (Mironov,
Talwar & Zhang 2019 for Poisson sampling, the same quantity opacus's RDP accountant computes; Wang, Balle
& Kasiviswanathan 2019, Theorem 9, for a fixed-size sample), and ``accountant="prv"`` runs opacus's PRV
accountant (Gopi, Lee & Wutschitz 2021) on it.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from scipy import optimize, special

from dsi._validation import as_numpy, check_delta, check_positive, check_steps

__all__ = [
    "DEFAULT_ORDERS",
    "REFERENCE_MULTIPLIERS",
    "compose",
    "delta_from_gdp",
    "epsilon_from_gdp",
    "epsilon_from_rdp",
    "epsilon_from_rho",
    "epsilon_from_sigma",
    "gdp_mu",
    "gdp_mu_from_epsilon",
    "rdp_subsampled_gaussian",
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
"""Noise multipliers of the paper's code (``utils.multiplier``) for epsilon = 1..8 at delta = 1e-5, one step."""


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


_ACCOUNTANTS = ("zcdp", "gdp", "rdp", "prv")
_SAMPLING = ("poisson", "fixed")
# opacus's RDPAccountant.DEFAULT_ALPHAS: 1.1, 1.2, ..., 10.9, then 12, ..., 63
DEFAULT_ORDERS: tuple[float, ...] = tuple([1 + x / 10.0 for x in range(1, 100)] + [float(a) for a in range(12, 64)])
"""Renyi orders the ``"rdp"`` accountant minimises over (opacus's default grid)."""


def _check_accountant(accountant: str, sample_rate: float = 1.0, sampling: str = "poisson") -> None:
    if accountant not in _ACCOUNTANTS:
        raise ValueError(f"accountant must be one of {_ACCOUNTANTS}, got {accountant!r}")
    if sampling not in _SAMPLING:
        raise ValueError(f"sampling must be one of {_SAMPLING}, got {sampling!r}")
    if sample_rate < 1.0 and accountant in ("zcdp", "gdp"):
        raise ValueError(
            f"accountant={accountant!r} has no subsampling amplification; with sample_rate={sample_rate:g} < 1 "
            "use accountant='rdp' or 'prv'"
        )
    if sample_rate < 1.0 and accountant == "prv" and sampling == "fixed":
        raise ValueError("accountant='prv' covers Poisson sampling only; use accountant='rdp' for sampling='fixed'")


def _check_rate(sample_rate: Any) -> float:
    try:
        q = float(sample_rate)
    except (TypeError, ValueError):
        raise TypeError(f"sample_rate must be a number in (0, 1], got {sample_rate!r}") from None
    if not 0.0 < q <= 1.0:
        raise ValueError(f"sample_rate must lie in (0, 1], got {sample_rate!r}")
    return q


def _log_add(a: float, b: float) -> float:
    lo, hi = min(a, b), max(a, b)
    return hi if lo == -math.inf else hi + math.log1p(math.exp(lo - hi))


def _log_sub(a: float, b: float) -> float:
    """log(e^a - e^b) for a >= b."""
    if b == -math.inf:
        return a
    if a <= b:
        return -math.inf
    return a + math.log(-math.expm1(b - a))


def _log_a_int(q: float, sigma: float, alpha: int) -> float:
    """Log A_alpha = log sum_k C(alpha, k) q^k (1-q)^(alpha-k) exp((k^2 - k) / (2 sigma^2)) (integer alpha)."""
    out = -math.inf
    for k in range(alpha + 1):
        term = (
            math.log(special.binom(alpha, k))
            + k * math.log(q)
            + (alpha - k) * math.log1p(-q)
            + (k * k - k) / (2.0 * sigma**2)
        )
        out = _log_add(out, term)
    return out


def _log_a_frac(q: float, sigma: float, alpha: float) -> float:
    """Log A_alpha for fractional alpha: the two-sided series of Mironov, Talwar & Zhang (2019), Sec. 3.3."""
    log_a0, log_a1 = -math.inf, -math.inf
    z0 = sigma**2 * math.log(1.0 / q - 1.0) + 0.5
    k = 0
    while True:
        coef = special.binom(alpha, k)
        log_coef = math.log(abs(coef))
        j = alpha - k
        log_t0 = log_coef + k * math.log(q) + j * math.log1p(-q)
        log_t1 = log_coef + j * math.log(q) + k * math.log1p(-q)
        # log(erfc(x) / 2) = log_ndtr(-sqrt(2) x)
        log_e0 = float(special.log_ndtr(-(k - z0) / sigma))
        log_e1 = float(special.log_ndtr(-(z0 - j) / sigma))
        log_s0 = log_t0 + (k * k - k) / (2.0 * sigma**2) + log_e0
        log_s1 = log_t1 + (j * j - j) / (2.0 * sigma**2) + log_e1
        if coef > 0:
            log_a0, log_a1 = _log_add(log_a0, log_s0), _log_add(log_a1, log_s1)
        else:
            log_a0, log_a1 = _log_sub(log_a0, log_s0), _log_sub(log_a1, log_s1)
        k += 1
        if max(log_s0, log_s1) < -30:
            return _log_add(log_a0, log_a1)


def _rdp_fixed(gamma: float, sigma: float, alpha: int) -> float:
    """Wang, Balle & Kasiviswanathan (2019), Theorem 9, for the Gaussian (eps(inf) = inf), integer alpha >= 2."""
    e2 = 2.0 / (2.0 * sigma**2)
    terms = [
        0.0,
        2.0 * math.log(gamma)
        + math.log(special.binom(alpha, 2))
        + min(math.log(4.0) + _log_sub(e2, 0.0), math.log(2.0) + e2),
    ]
    for j in range(3, alpha + 1):
        terms.append(
            j * math.log(gamma) + math.log(special.binom(alpha, j)) + (j - 1) * j / (2.0 * sigma**2) + math.log(2.0)
        )
    out = -math.inf
    for t in terms:
        out = _log_add(out, t)
    return min(out / (alpha - 1), alpha / (2.0 * sigma**2))


def rdp_subsampled_gaussian(
    sample_rate: float,
    noise_multiplier: float,
    orders: Any = DEFAULT_ORDERS,
    *,
    steps: int = 1,
    budget: float = 1.0,
    sampling: str = "poisson",
) -> np.ndarray:
    """Renyi DP of ``steps`` releases of the subsampled Gaussian mechanism, at each order.

    Pair i of a DSI release is a Gaussian mechanism with sensitivity sqrt(budget) (its Mahalanobis norm)
    and noise multiplier c, so it is the subsampled Gaussian with noise c / sqrt(budget).

    Parameters
    ----------
    sample_rate : float
        Probability q in (0, 1] that the pair's group is in a round's sample (Poisson), or the sampled
        fraction of groups (fixed size).
    noise_multiplier : float
        The per-round multiplier c.
    orders : sequence of float, default DEFAULT_ORDERS
        Renyi orders alpha > 1 (opacus's default list); with ``sampling="fixed"`` fractional orders are
        rounded up to the next integer (the bound is monotone in alpha).
    steps : int, default 1
        Number of composed rounds.
    budget : float, default 1.0
        The pair's squared-Mahalanobis budget b.
    sampling : {"poisson", "fixed"}, default "poisson"
        Poisson sampling (Mironov, Talwar & Zhang 2019; exact RDP of the mixture) or a fixed-size sample
        without replacement (Wang, Balle & Kasiviswanathan 2019, Theorem 9; an upper bound).

    Returns
    -------
    numpy.ndarray
        RDP epsilon at each order, float64.

    Examples
    --------
    Without subsampling it is alpha * b / (2 c^2) per round:

    >>> from dsi import rdp_subsampled_gaussian
    >>> rdp_subsampled_gaussian(1.0, 2.0, [2.0, 8.0], steps=3).tolist()
    [0.75, 3.0]
    """
    q = _check_rate(sample_rate)
    if sampling not in _SAMPLING:
        raise ValueError(f"sampling must be one of {_SAMPLING}, got {sampling!r}")
    sigma = check_positive(noise_multiplier, name="noise_multiplier") / math.sqrt(check_positive(budget, name="budget"))
    steps = check_steps(steps)
    alphas = np.atleast_1d(np.asarray(orders, dtype=np.float64))
    if alphas.ndim != 1 or not np.all(np.isfinite(alphas)) or np.any(alphas <= 1.0):
        raise ValueError("orders must be finite Renyi orders > 1")
    out = np.empty(alphas.shape)
    for k, alpha in enumerate(alphas):
        if q == 1.0:
            out[k] = alpha / (2.0 * sigma**2)
        elif sampling == "fixed":
            out[k] = _rdp_fixed(q, sigma, int(math.ceil(alpha)))
        elif float(alpha).is_integer():
            out[k] = _log_a_int(q, sigma, int(alpha)) / (alpha - 1.0)
        else:
            out[k] = _log_a_frac(q, sigma, float(alpha)) / (alpha - 1.0)
    return steps * out


def epsilon_from_rdp(rdp: Any, orders: Any, delta: float) -> tuple[float, float]:
    """(epsilon, best order) at ``delta`` from RDP values (Balle et al. 2020, Theorem 21, as opacus).

    epsilon = min_alpha rdp_alpha - (log(delta) + log(alpha)) / (alpha - 1) + log((alpha - 1) / alpha).
    """
    delta = check_delta(delta)
    r = np.atleast_1d(np.asarray(rdp, dtype=np.float64))
    a = np.atleast_1d(np.asarray(orders, dtype=np.float64))
    if r.shape != a.shape:
        raise ValueError(f"rdp and orders must have the same length, got {r.shape} and {a.shape}")
    eps = r - (math.log(delta) + np.log(a)) / (a - 1.0) + np.log((a - 1.0) / a)
    k = int(np.nanargmin(eps))
    return max(float(eps[k]), 0.0), float(a[k])


def _prv_epsilon(sigma: float, q: float, steps: int, delta: float, eps_error: float) -> float:
    try:
        from opacus.accountants import PRVAccountant
    except ImportError as exc:  # pragma: no cover - depends on the environment
        raise ImportError("accountant='prv' uses opacus; install it with `pip install dsi[peers]`") from exc
    acc = PRVAccountant()
    acc.history = [(sigma, q, steps)]
    return float(acc.get_epsilon(delta, eps_error=eps_error))


def epsilon_from_sigma(
    sigma: float,
    delta: float,
    *,
    steps: int = 1,
    budget: float = 1.0,
    accountant: str = "zcdp",
    sample_rate: float = 1.0,
    sampling: str = "poisson",
) -> float:
    """Epsilon at ``delta`` after ``steps`` releases with per-step multiplier ``sigma``.

    ``accountant="zcdp"`` is the paper's conversion; ``"gdp"`` is the exact Gaussian-DP one (tighter);
    ``"rdp"`` composes Renyi DP over :data:`DEFAULT_ORDERS` and ``"prv"`` runs opacus's PRV accountant
    (eps_error 1e-3). Only ``"rdp"`` and ``"prv"`` take ``sample_rate`` < 1 (subsampling amplification;
    ``sampling="fixed"`` with ``"rdp"`` only).
    """
    q = _check_rate(sample_rate)
    _check_accountant(accountant, q, sampling)
    if accountant == "gdp":
        return epsilon_from_gdp(gdp_mu(sigma, steps=steps, budget=budget), delta)
    if accountant == "rdp":
        rdp = rdp_subsampled_gaussian(q, sigma, DEFAULT_ORDERS, steps=steps, budget=budget, sampling=sampling)
        return epsilon_from_rdp(rdp, DEFAULT_ORDERS, delta)[0]
    if accountant == "prv":
        sigma_eff = check_positive(sigma, name="sigma") / math.sqrt(check_positive(budget, name="budget"))
        return _prv_epsilon(sigma_eff, q, check_steps(steps), check_delta(delta), 1e-3)
    return epsilon_from_rho(rho_from_sigma(sigma, steps=steps, budget=budget), delta)


def sigma_from_epsilon(
    epsilon: float,
    delta: float,
    *,
    steps: int = 1,
    budget: float = 1.0,
    accountant: str = "zcdp",
    sample_rate: float = 1.0,
    sampling: str = "poisson",
) -> float:
    """Per-step noise multiplier so that ``steps`` releases are (epsilon, delta)-DP.

    Closed form for "zcdp" and "gdp" (sigma_1 * sqrt(steps)); Brent's root of :func:`epsilon_from_sigma`
    (relative 1e-7, on the safe side) for "rdp" and "prv".
    """
    epsilon = check_positive(epsilon, name="epsilon")
    q = _check_rate(sample_rate)
    _check_accountant(accountant, q, sampling)
    if accountant == "gdp":
        mu = gdp_mu_from_epsilon(epsilon, delta)
        return math.sqrt(check_steps(steps) * check_positive(budget, name="budget")) / mu
    if accountant == "zcdp":
        return sigma_from_rho(rho_from_epsilon(epsilon, delta), steps=steps, budget=budget)

    def eps_at(s: float) -> float:
        return epsilon_from_sigma(
            s, delta, steps=steps, budget=budget, accountant=accountant, sample_rate=q, sampling=sampling
        )

    if accountant == "rdp":
        # as sigma grows the RDP of every order tends to 0, so epsilon cannot fall below its value at 0
        floor = epsilon_from_rdp(np.zeros(len(DEFAULT_ORDERS)), DEFAULT_ORDERS, delta)[0]
        if epsilon <= floor:
            raise ValueError(
                f"epsilon={epsilon!r} is at or below {floor:.4g}, the smallest epsilon the Renyi orders up to "
                f"{max(DEFAULT_ORDERS):g} can certify at delta={delta!r}; use accountant='prv' or 'gdp'"
            )
    # bracket from the no-subsampling Gaussian-DP multiplier (an upper bound on the answer)
    hi = 1.01 * sigma_from_epsilon(epsilon, delta, steps=steps, budget=budget, accountant="gdp")
    while eps_at(hi) > epsilon:
        hi *= 2.0
    lo = 0.5 * hi
    while eps_at(lo) <= epsilon:
        lo *= 0.5
    root = optimize.brentq(lambda s: math.log(eps_at(s) / epsilon), lo, hi, xtol=1e-9, rtol=1e-7)
    return float(root) if eps_at(root) <= epsilon else float(root) * (1 + 1e-7)


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
