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

import functools
import math
from typing import Any

import numpy as np
from scipy import special

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


def _brentq(*args: Any, **kwargs: Any) -> float:
    """scipy.optimize.brentq, imported on first use (scipy.optimize alone takes ~0.7 s to import)."""
    from scipy.optimize import brentq

    return brentq(*args, **kwargs)


_FLOAT_MAX = float(np.finfo(np.float64).max)


def _nonneg(value: Any, *, name: str) -> float:
    try:
        out = float(value)
    except (TypeError, ValueError):
        raise TypeError(f"{name} must be a non-negative number, got {value!r}") from None
    if math.isnan(out) or out < 0 or math.isinf(out):
        raise ValueError(f"{name} must be a non-negative finite number, got {value!r}")
    return out


def _over_sigma_sq(numerator: float, sigma: float) -> float:
    """Return numerator / sigma^2 without an OverflowError or ZeroDivisionError (inf or 0 where float64 ends)."""
    sq = sigma * sigma
    return numerator / sq if 0.0 < sq < math.inf else numerator / sigma / sigma


def _sqrt_product(steps: int, budget: float) -> float:
    """sqrt(steps * budget), also where the product overflows float64."""
    prod = steps * budget
    return math.sqrt(prod) if math.isfinite(prod) else math.sqrt(steps) * math.sqrt(budget)


def _too_small(name: str, value: float, what: str, floor: float) -> ValueError:
    return ValueError(
        f"{name}={value!r} is too small: {what} overflows float64 (no finite privacy guarantee); "
        f"accepted: {name} >= {floor:.3g}"
    )


def rho_from_sigma(sigma: float, *, steps: int = 1, budget: float = 1.0) -> float:
    """The zCDP rho of ``steps`` releases at noise multiplier ``sigma``.

    Each release has squared-Mahalanobis budget ``budget``: rho = steps * budget / (2 sigma^2). A sigma so
    small that rho overflows float64 raises a ValueError naming the smallest accepted sigma.
    """
    sigma = check_positive(sigma, name="sigma")
    steps = check_steps(steps)
    budget = check_positive(budget, name="budget")
    rho = _over_sigma_sq(steps * budget / 2.0, sigma)
    if not math.isfinite(rho):
        floor = _sqrt_product(steps, budget) / math.sqrt(2.0) / math.sqrt(_FLOAT_MAX)
        raise _too_small(
            "sigma", sigma, f"rho = steps * budget / (2 sigma^2) (steps={steps}, budget={budget!r})", floor
        )
    return rho


def sigma_from_rho(rho: float, *, steps: int = 1, budget: float = 1.0) -> float:
    """Per-step noise multiplier that makes ``steps`` releases total ``rho`` (inverse of rho_from_sigma)."""
    rho = check_positive(rho, name="rho")
    steps = check_steps(steps)
    budget = check_positive(budget, name="budget")
    ratio = steps * budget / (2.0 * rho)
    sigma = math.sqrt(ratio) if math.isfinite(ratio) else _sqrt_product(steps, budget) / math.sqrt(2.0) / math.sqrt(rho)
    if not math.isfinite(sigma):
        floor = (_sqrt_product(steps, budget) / math.sqrt(2.0) / _FLOAT_MAX) ** 2
        raise _too_small(
            "rho", rho, f"sigma = sqrt(steps * budget / (2 rho)) (steps={steps}, budget={budget!r})", floor
        )
    return sigma


def epsilon_from_rho(rho: float, delta: float) -> float:
    """(epsilon, delta)-DP implied by rho-zCDP: epsilon = rho + 2 sqrt(rho ln(1/delta)) (Bun & Steinke)."""
    rho = _nonneg(rho, name="rho")
    delta = check_delta(delta)
    eps = rho + 2.0 * math.sqrt(rho * math.log(1.0 / delta))
    if not math.isfinite(eps):
        raise ValueError(f"rho={rho!r} is too large: epsilon = rho + 2 sqrt(rho ln(1/delta)) overflows float64")
    return eps


def rho_from_epsilon(epsilon: float, delta: float) -> float:
    """Largest rho whose epsilon_from_rho equals ``epsilon``: rho = (sqrt(L + eps) - sqrt(L))^2, L = ln(1/delta)."""
    epsilon = _nonneg(epsilon, name="epsilon")
    big_l = math.log(1.0 / check_delta(delta))
    # (sqrt(L+e) - sqrt(L))^2 written as e^2 / (sqrt(L+e) + sqrt(L))^2 to avoid cancellation for small e
    # (and as (e / (sqrt(L+e) + sqrt(L)))^2 where e^2 overflows)
    denom = (math.sqrt(big_l + epsilon) + math.sqrt(big_l)) ** 2
    if epsilon < 1e150:
        return epsilon**2 / denom
    return (epsilon / (math.sqrt(big_l + epsilon) + math.sqrt(big_l))) ** 2


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


def _log_binom(n: float, k: Any) -> Any:
    return special.gammaln(n + 1.0) - special.gammaln(k + 1.0) - special.gammaln(n - k + 1.0)


def _log1p_exp(x: float) -> float:
    """log(1 + e^x) without overflow."""
    return math.log1p(math.exp(x)) if x < 30.0 else x + math.log1p(math.exp(-x))


def _log_a_int(q: float, sigma: float, alpha: int) -> float:
    """Log A_alpha = log sum_k C(alpha, k) q^k (1-q)^(alpha-k) exp((k^2 - k) / (2 sigma^2)) (integer alpha).

    Written as log(1 + sum_{k >= 2} C(alpha, k) q^k (1-q)^(alpha-k) (exp((k^2 - k) / (2 sigma^2)) - 1)), a sum
    of non-negative terms, so that it keeps its relative accuracy for a large sigma or a tiny q.
    """
    k = np.arange(2, alpha + 1, dtype=np.float64)
    c = _over_sigma_sq(1.0, sigma) * (k * k - k) / 2.0
    log_expm1 = c + np.log(-np.expm1(-c))
    log_terms = _log_binom(float(alpha), k) + k * math.log(q) + (alpha - k) * math.log1p(-q) + log_expm1
    return _log1p_exp(float(special.logsumexp(log_terms)))


def _log_a_series(q: float, sigma: float, alpha: float, terms: int = 14) -> float:
    """Log A_alpha from its expansion sum_k C(alpha, k) q^k E[Y^k], Y = e^((2x - 1) / (2 sigma^2)) - 1.

    E[Y^k] = sum_j C(k, j) (-1)^(k-j) (e^(j (j-1) / (2 sigma^2)) - 1); used where sigma >= 10 and alpha q <= min(0.5, sigma / 100),
    where the terms fall by that factor and the two-sided series would lose its relative accuracy.
    """
    inv = _over_sigma_sq(1.0, sigma) / 2.0
    total, coef = 0.0, alpha  # coef = C(alpha, k), generalised binomial
    for k in range(2, terms + 1):
        coef *= (alpha - k + 1) / k
        # E[Y^k]; the j = 0 and j = 1 terms vanish once sum_j C(k, j) (-1)^(k-j) = 0 is subtracted
        moment = sum(special.binom(k, j) * (-1) ** (k - j) * math.expm1(j * (j - 1) * inv) for j in range(2, k + 1))
        total += coef * q**k * moment
    return math.log1p(max(total, 0.0))


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


def _frac_checked(q: float, sigma: float, alpha: float, cache: dict[int, float]) -> float:
    """RDP at a fractional order by the two-sided series, checked against the neighbouring integer orders.

    The RDP is non-decreasing in the order and (alpha - 1) RDP(alpha) is convex, so it lies between the exact
    value at floor(alpha) and the linear interpolation of (alpha - 1) RDP between the neighbouring integer
    orders. Where the series' cancellation leaves that interval (a large sigma with a high order; opacus
    returns a negative value there, e.g. -0.67 at q = 0.5, sigma = 30, order 62.5), and for sigma >= 100,
    where the series needs about 8 sigma terms, the upper bound is used.
    """

    def at(order: int) -> float:
        if order not in cache:
            cache[order] = _log_a_int(q, sigma, order) / (order - 1.0)
        return cache[order]

    low = math.floor(alpha)
    # (alpha - 1) RDP(alpha) = log A_alpha is convex in alpha: interpolating it linearly between the integer
    # orders bounds it from above
    log_a_low = at(low) * (low - 1.0) if low >= 2 else 0.0
    upper = ((low + 1.0 - alpha) * log_a_low + (alpha - low) * at(low + 1) * low) / (alpha - 1.0)
    if sigma >= 100.0:  # the two-sided series needs about 8 sigma terms and loses its accuracy
        return upper
    value = _log_a_frac(q, sigma, alpha) / (alpha - 1.0)
    lower = at(low) if alpha >= 2.0 else 0.0
    if math.isfinite(value) and lower * (1 - 1e-9) <= value <= upper * (1 + 1e-9):
        return value
    return upper


_MAX_ORDER = 10_000.0


def _rdp_fixed(gamma: float, sigma: float, alpha: int) -> float:
    """Wang, Balle & Kasiviswanathan (2019), Theorem 9, for the Gaussian (eps(inf) = inf), integer alpha >= 2."""
    e2 = _over_sigma_sq(1.0, sigma)
    terms = [
        0.0,
        2.0 * math.log(gamma)
        + float(_log_binom(float(alpha), 2.0))
        + min(math.log(4.0) + _log_sub(e2, 0.0), math.log(2.0) + e2),
    ]
    for j in range(3, alpha + 1):
        terms.append(
            j * math.log(gamma)
            + float(_log_binom(float(alpha), float(j)))
            + _over_sigma_sq((j - 1) * j / 2.0, sigma)
            + math.log(2.0)
        )
    out = -math.inf
    for t in terms:
        out = _log_add(out, t)
    return min(out / (alpha - 1), _over_sigma_sq(alpha / 2.0, sigma))


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
        Renyi orders in (1, 10000] (opacus's default list); with ``sampling="fixed"`` fractional orders are
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
        RDP epsilon at each order, float64, in [0, alpha * b / (2 c^2)]. Integer orders are exact to
        float64 at any c and q. A fractional order comes from the two-sided series of Mironov, Talwar &
        Zhang (as opacus), from its expansion in q where that is small (c / sqrt(b) >= 10), and otherwise
        (c / sqrt(b) >= 100, or where the series cancels) from the upper bound that interpolates
        (alpha - 1) * RDP linearly between the neighbouring integer orders.

    Raises
    ------
    ValueError
        When c / sqrt(b) is so small that alpha * b / (2 c^2) overflows float64, or an order lies outside
        (1, 10000].

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
    c = check_positive(noise_multiplier, name="noise_multiplier")
    budget = check_positive(budget, name="budget")
    sigma = c / math.sqrt(budget)
    steps = check_steps(steps)
    alphas = np.atleast_1d(np.asarray(orders, dtype=np.float64))
    if alphas.ndim != 1 or alphas.size == 0 or not np.all(np.isfinite(alphas)) or np.any(alphas <= 1.0):
        raise ValueError("orders must be a non-empty sequence of finite Renyi orders > 1")
    if np.any(alphas > _MAX_ORDER):
        raise ValueError(f"orders must lie in (1, {_MAX_ORDER:g}], got a largest order of {alphas.max():g}")
    # the Gaussian's own RDP alpha / (2 sigma^2) bounds the subsampled one from above
    full = np.array([_over_sigma_sq(a / 2.0, sigma) if sigma > 0 else math.inf for a in alphas])
    if not np.all(np.isfinite(full)):
        floor = math.sqrt(budget) * math.sqrt(alphas.max() / 2.0) / math.sqrt(_FLOAT_MAX)
        raise _too_small(
            "noise_multiplier", c, f"the Renyi divergence alpha * budget / (2 c^2) (budget={budget!r})", floor
        )
    out = np.empty(alphas.shape)
    cache: dict[int, float] = {}  # integer orders bracketing the fractional ones
    for k, alpha in enumerate(alphas):
        if q == 1.0:
            out[k] = full[k]
        elif sampling == "fixed":
            out[k] = _rdp_fixed(q, sigma, int(math.ceil(alpha)))
        elif float(alpha).is_integer():
            out[k] = _log_a_int(q, sigma, int(alpha)) / (alpha - 1.0)
        elif sigma >= 10.0 and alpha * q <= min(0.5, 0.01 * sigma):
            out[k] = _log_a_series(q, sigma, float(alpha)) / (alpha - 1.0)
        else:
            out[k] = _frac_checked(q, sigma, float(alpha), cache)
    out = steps * np.clip(out, 0.0, full)
    if not np.all(np.isfinite(out)):
        raise ValueError(
            f"the Renyi DP of {steps} steps at noise_multiplier={c!r} overflows float64 (no finite guarantee); "
            "use fewer steps or more noise"
        )
    return out


def epsilon_from_rdp(rdp: Any, orders: Any, delta: float) -> tuple[float, float]:
    """(epsilon, best order) at ``delta`` from RDP values (Balle et al. 2020, Theorem 21, as opacus).

    epsilon = min_alpha rdp_alpha - (log(delta) + log(alpha)) / (alpha - 1) + log((alpha - 1) / alpha).
    """
    delta = check_delta(delta)
    r = np.atleast_1d(np.asarray(rdp, dtype=np.float64))
    a = np.atleast_1d(np.asarray(orders, dtype=np.float64))
    if r.shape != a.shape:
        raise ValueError(f"rdp and orders must have the same length, got {r.shape} and {a.shape}")
    if r.size == 0 or not np.all(np.isfinite(r)) or np.any(r < 0):
        raise ValueError("rdp must be a non-empty sequence of non-negative finite Renyi DP values")
    if not np.all(np.isfinite(a)) or np.any(a <= 1.0):
        raise ValueError("orders must be finite Renyi orders > 1")
    eps = r - (math.log(delta) + np.log(a)) / (a - 1.0) + np.log((a - 1.0) / a)
    k = int(np.nanargmin(eps))
    return max(float(eps[k]), 0.0), float(a[k])


_PRV_EPS_ERROR = 1e-3
_PRV_MAX_GRID = 2_000_000  # points of opacus's discretisation, about 180 bytes each (0.35 GiB at the limit)


def _prv_grid(sigma: float, q: float, steps: int, delta: float) -> float:
    """Points of the grid opacus's PRV accountant builds, inf where it cannot be bounded.

    Opacus's domain rule (``compute_safe_domain_size``: the RDP epsilon of all steps at delta_error / 4
    and of one step at delta_error / (8 steps), plus 3) evaluated with this module's RDP, which refuses
    extreme arguments at once where opacus's own RDP can loop for minutes.
    """
    delta_error = delta / 1000.0  # opacus's default
    mesh = _PRV_EPS_ERROR / math.sqrt(steps * math.log(12.0 / delta_error) / 2.0)
    try:
        one = rdp_subsampled_gaussian(q, sigma, DEFAULT_ORDERS)
        half = (
            max(
                epsilon_from_rdp(steps * one, DEFAULT_ORDERS, delta_error / 4.0)[0],
                epsilon_from_rdp(one, DEFAULT_ORDERS, delta_error / (8.0 * steps))[0],
                _PRV_EPS_ERROR,
            )
            + 3.0
        )
    except (ArithmeticError, ValueError):
        return math.inf
    size = 2.0 * half / mesh
    return size if math.isfinite(size) else math.inf


@functools.lru_cache(maxsize=64)
def _prv_smallest_sigma(q: float, steps: int, delta: float) -> float:
    """Smallest noise multiplier whose PRV grid fits in _PRV_MAX_GRID points (inf if none does)."""
    big = 1e6
    if _prv_grid(big, q, steps, delta) > _PRV_MAX_GRID:
        return math.inf
    lo, hi = -30.0, math.log(big)  # bisect on log sigma (to 1 %); the grid shrinks as sigma grows
    while hi - lo > 0.01:
        mid = 0.5 * (lo + hi)
        if _prv_grid(math.exp(mid), q, steps, delta) > _PRV_MAX_GRID:
            lo = mid
        else:
            hi = mid
    return math.exp(hi)


def _prv_grid_error(sigma: float, q: float, steps: int, delta: float, size: float) -> ValueError:
    smallest = _prv_smallest_sigma(q, steps, delta)
    accepted = (
        f"at this sample rate, steps and delta it accepts noise multipliers >= {smallest:.4g}"
        if math.isfinite(smallest)
        else "no noise multiplier fits at this many steps"
    )
    return ValueError(
        f"accountant='prv' at noise multiplier {sigma:.4g} (per unit budget), sample_rate={q:g}, steps={steps}, "
        f"delta={delta:g} needs a discretisation grid of {size:.3g} points (opacus allocates some hundred bytes "
        f"per point and fails with a MemoryError); the limit is {_PRV_MAX_GRID:.0e} points: {accepted}. "
        "Use accountant='rdp' (or 'gdp' when sample_rate = 1)"
    )


def _prv_epsilon(sigma: float, q: float, steps: int, delta: float) -> float:
    try:
        from opacus.accountants import PRVAccountant
    except ImportError as exc:  # pragma: no cover - depends on the environment
        raise ImportError("accountant='prv' uses opacus; install it with `pip install dsi[peers]`") from exc
    size = _prv_grid(sigma, q, steps, delta)
    if size > _PRV_MAX_GRID:
        raise _prv_grid_error(sigma, q, steps, delta, size)
    acc = PRVAccountant()
    acc.history = [(sigma, q, steps)]
    try:
        with np.errstate(all="ignore"):
            eps = float(acc.get_epsilon(delta, eps_error=_PRV_EPS_ERROR))
    except (ArithmeticError, RuntimeError) as exc:  # e.g. "Discrete mean differs significantly ..."
        raise ValueError(
            f"opacus's PRV accountant fails at noise multiplier {sigma:.4g} (per unit budget), sample_rate={q:g}, "
            f"steps={steps}, delta={delta:g} ({type(exc).__name__}: {exc}); use accountant='rdp' "
            "(or 'gdp' when sample_rate = 1)"
        ) from exc
    if not math.isfinite(eps):
        raise ValueError(
            f"opacus's PRV accountant returned epsilon={eps} at noise multiplier {sigma:.4g}, sample_rate={q:g}, "
            f"steps={steps}, delta={delta:g}; use accountant='rdp'"
        )
    return max(eps, 0.0)


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
    ``sampling="fixed"`` with ``"rdp"`` only). Where the answer leaves float64 (a multiplier so small that
    epsilon overflows) a ValueError names the cause. ``"prv"`` refuses a multiplier whose discretisation
    grid would exceed 2e6 points (opacus would try to allocate it: 3.6e9 points at multiplier 1e-3, q = 1)
    and names the smallest multiplier it accepts at that sample rate, steps and delta.
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
        if not math.isfinite(sigma_eff) or sigma_eff == 0.0:
            raise ValueError(f"sigma / sqrt(budget) = {sigma_eff!r} is outside float64's range; use accountant='rdp'")
        return _prv_epsilon(sigma_eff, q, check_steps(steps), check_delta(delta))
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
    (relative 1e-7, on the safe side) for "rdp" and "prv". Refused with a ValueError that names the range:
    "rdp" below the smallest epsilon its orders certify (0.1029 at delta 1e-5), "prv" at epsilon <= 2e-3
    (its resolution) or where the answer lies below the multipliers its grid accepts (e.g. epsilon 1e4 at
    q = 1, T = 1: the grid accepts multipliers >= 0.052, where epsilon is 264).
    """
    epsilon = check_positive(epsilon, name="epsilon")
    delta = check_delta(delta)
    steps = check_steps(steps)
    budget = check_positive(budget, name="budget")
    q = _check_rate(sample_rate)
    _check_accountant(accountant, q, sampling)
    if accountant == "gdp":
        sigma = _sqrt_product(steps, budget) / gdp_mu_from_epsilon(epsilon, delta)
        if not 0.0 < sigma < math.inf:
            raise ValueError(
                f"epsilon={epsilon!r}, delta={delta!r}, steps={steps}, budget={budget!r}: the noise multiplier "
                f"({sigma!r}) is outside float64's range"
            )
        return sigma
    if accountant == "zcdp":
        rho = rho_from_epsilon(epsilon, delta)
        if rho == 0.0:
            raise ValueError(
                f"epsilon={epsilon!r} is too small: its zCDP rho underflows float64 (the noise multiplier would be "
                "infinite)"
            )
        return sigma_from_rho(rho, steps=steps, budget=budget)

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
    if accountant == "prv" and epsilon <= 2.0 * _PRV_EPS_ERROR:
        raise ValueError(
            f"epsilon={epsilon!r} is below the PRV accountant's resolution (it reports epsilon to within "
            f"{_PRV_EPS_ERROR:g}); accepted: epsilon > {2.0 * _PRV_EPS_ERROR:g}; use accountant='gdp' (or 'rdp')"
        )
    # bracket from the no-subsampling Gaussian-DP multiplier (an upper bound on the answer)
    hi = 1.01 * sigma_from_epsilon(epsilon, delta, steps=steps, budget=budget, accountant="gdp")
    start = hi
    while True:
        try:
            if eps_at(hi) <= epsilon:
                break
        except ValueError as exc:  # the PRV grid refuses this multiplier: the answer lies above it
            if accountant != "prv" or "grid" not in str(exc):
                raise
        hi *= 2.0
        if hi > 1e6 * start:
            raise ValueError(
                f"accountant={accountant!r} does not reach epsilon={epsilon!r} at any noise multiplier up to "
                f"{hi:.3g} (delta={delta!r}, steps={steps}, sample_rate={q:g})"
            )
    lo = 0.5 * hi
    while True:
        try:
            below = eps_at(lo) <= epsilon
        except ValueError as exc:
            if accountant != "prv" or "grid" not in str(exc):
                raise ValueError(
                    f"epsilon={epsilon!r} is beyond the range of accountant={accountant!r} here "
                    f"(delta={delta!r}, steps={steps}, sample_rate={q:g}): {exc}"
                ) from exc
            smallest = _prv_smallest_sigma(q, steps, delta) * math.sqrt(budget)
            range_error = (
                f"epsilon={epsilon!r} is above the PRV accountant's range at sample_rate={q:g}, steps={steps}, "
                f"delta={delta!r}: its grid (at most {_PRV_MAX_GRID:.0e} points) needs noise multipliers >= "
                f"{smallest:.4g}"
            )
            try:
                largest = eps_at(smallest) if math.isfinite(smallest) else -math.inf
            except ValueError as inner:
                raise ValueError(f"{range_error}, where it fails: {inner}") from inner
            if largest <= epsilon:
                raise ValueError(
                    f"{range_error}, where epsilon is {largest:.4g}; use accountant='rdp' or 'gdp'"
                ) from exc
            lo = smallest
            break
        if not below:
            break
        lo *= 0.5
    # the absolute xtol is 1e-9 (as before) or relative 1e-9 for multipliers below 1
    root = float(
        _brentq(
            lambda s: math.log(max(eps_at(s), 1e-300) / epsilon), lo, hi, xtol=min(1e-9, 1e-9 * lo), rtol=1e-7
        )
    )
    if eps_at(root) <= epsilon:
        return root
    step = 1e-7
    for _ in range(60):  # move to the safe side of the root
        candidate = root * (1 + step)
        if eps_at(candidate) <= epsilon:
            return candidate
        step *= 2.0
    raise ValueError(
        f"no noise multiplier near {root:.6g} certifies epsilon={epsilon!r} with accountant={accountant!r}"
    )


def compose(rhos: Any) -> float:
    """ZCDP composition: the rho of a sequence of (adaptive) releases is the sum of their rhos."""
    arr = np.asarray(as_numpy(rhos, name="rhos"), dtype=np.float64).ravel()
    if arr.size == 0 or not np.all(np.isfinite(arr)) or np.any(arr < 0):
        raise ValueError("rhos must be a non-empty sequence of non-negative finite numbers")
    total = float(arr.sum())
    if not math.isfinite(total):
        raise ValueError("the sum of rhos overflows float64")
    return total


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
    out = check_steps(steps) * alpha * _over_sigma_sq(1.0, sigma) * m / 2.0
    if not np.all(np.isfinite(out)):
        raise ValueError(f"the Renyi divergence overflows float64: sigma={sigma!r} is too small for these differences")
    return out


def gdp_mu(sigma: float, *, steps: int = 1, budget: float = 1.0) -> float:
    """Gaussian-DP parameter of ``steps`` releases: mu = sqrt(steps * budget) / sigma."""
    sigma = check_positive(sigma, name="sigma")
    steps = check_steps(steps)
    budget = check_positive(budget, name="budget")
    root = _sqrt_product(steps, budget)
    mu = root / sigma
    if not math.isfinite(mu):
        raise _too_small(
            "sigma", sigma, f"mu = sqrt(steps * budget) / sigma (steps={steps}, budget={budget!r})", root / _FLOAT_MAX
        )
    return mu


def tradeoff_power(alpha: Any, mu: float) -> np.ndarray:
    """The most powerful test's true-positive rate at false-positive rate ``alpha``.

    Between N(0,1) and N(mu,1) it is Phi(Phi^{-1}(alpha) + mu). No test on a mu-GDP release can exceed it.
    """
    a = np.asarray(alpha, dtype=np.float64)
    if np.any((a < 0) | (a > 1)):
        raise ValueError("alpha (false-positive rate) must lie in [0, 1]")
    mu = _nonneg(mu, name="mu")
    return special.ndtr(special.ndtri(a) + mu)


def _log_delta_integral(a: float, mu: float) -> float:
    """Log delta of mu-GDP as the integral of a non-negative function (no cancellation).

    delta = E_P[(1 - e^(eps - L))_+] with the privacy loss L = mu^2/2 + mu Z, which is
    phi(a) * int_0^inf exp(a u - u^2/2) (1 - e^(-mu u)) du with a = mu/2 - eps/mu.
    """
    from scipy import integrate

    shift = 0.5 * a * a if a > 0 else 0.0
    if a > 0:
        lo, hi = max(0.0, a - 40.0), a + 40.0
    else:
        lo, hi = 0.0, 60.0 / max(-a, 1.0)

    def integrand(u: float) -> float:
        return math.exp(a * u - 0.5 * u * u - shift) * -math.expm1(-mu * u)

    value = integrate.quad(integrand, lo, hi, epsabs=0.0, epsrel=1e-12, limit=200)[0]
    if value <= 0.0:
        return -math.inf
    return -0.5 * a * a - 0.5 * math.log(2.0 * math.pi) + shift + math.log(value)


def _gdp_delta(mu: float, epsilon: float) -> tuple[float, float]:
    """(delta, log delta) of mu-GDP at ``epsilon``.

    The two-term formula where it keeps at least 12 digits; otherwise (it overflows beyond epsilon = 709
    or cancels for tiny mu and epsilon) in log space or as the integral of a non-negative function.
    """
    a = -epsilon / mu + mu / 2.0
    b = -epsilon / mu - mu / 2.0
    if epsilon < 700.0:
        first = float(special.ndtr(a))
        delta = first - math.exp(epsilon) * float(special.ndtr(b))
        if delta > 1e-4 * first:
            return delta, math.log(delta)
    log_a = float(special.log_ndtr(a))
    ratio = float(special.log_ndtr(b)) + epsilon - log_a  # log of e^eps Phi(b) / Phi(a)
    log_delta = log_a + math.log(-math.expm1(ratio)) if ratio < -0.5 else _log_delta_integral(a, mu)
    return math.exp(log_delta), log_delta


def delta_from_gdp(mu: float, epsilon: float) -> float:
    """Exact delta(epsilon) of mu-GDP: Phi(-eps/mu + mu/2) - e^eps Phi(-eps/mu - mu/2) (Balle & Wang 2018).

    Evaluated without overflow for any finite epsilon and without cancellation for tiny mu and epsilon.
    """
    mu = check_positive(mu, name="mu")
    epsilon = _nonneg(epsilon, name="epsilon")
    return _gdp_delta(mu, epsilon)[0]


def gdp_mu_from_epsilon(epsilon: float, delta: float) -> float:
    """Largest mu whose mu-GDP implies (epsilon, delta)-DP (inverse of epsilon_from_gdp)."""
    epsilon = check_positive(epsilon, name="epsilon")
    delta = check_delta(delta)

    def excess(m: float) -> float:
        return _gdp_delta(m, epsilon)[0] - delta

    hi = 1.0
    while excess(hi) < 0:
        hi *= 2.0
    if excess(1e-12) < 0:
        mu = float(_brentq(excess, 1e-12, hi, xtol=1e-14, rtol=1e-13))
        if mu > 1e-3:  # the absolute xtol is relative 1e-11 or better
            return mu
    # tiny mu (tiny epsilon and delta): solve for log mu so that the tolerance is relative
    log_delta = math.log(delta)

    def log_excess(t: float) -> float:
        return _gdp_delta(math.exp(t), epsilon)[1] - log_delta

    t_lo = math.log(min(hi, 1e-3))
    while log_excess(t_lo) > 0:
        t_lo -= 10.0
        if t_lo < -740.0:
            raise ValueError(
                f"epsilon={epsilon!r}, delta={delta!r}: the Gaussian-DP mu is below the smallest float64 "
                "(epsilon and delta both too close to 0)"
            )
    return math.exp(float(_brentq(log_excess, t_lo, math.log(hi), xtol=1e-14, rtol=1e-14)))


def epsilon_from_gdp(mu: float, delta: float) -> float:
    """Smallest epsilon with delta_from_gdp(mu, epsilon) <= delta (tighter than the zCDP conversion)."""
    mu = check_positive(mu, name="mu")
    delta = check_delta(delta)
    if _gdp_delta(mu, 0.0)[0] <= delta:
        return 0.0
    hi = 1.0
    while _gdp_delta(mu, hi)[0] > delta:
        hi *= 2.0
        if hi > _FLOAT_MAX / 4:
            raise ValueError(
                f"mu={mu!r} is too large: the epsilon of mu-GDP at delta={delta!r} overflows float64 "
                "(about mu^2 / 2; the noise multiplier is too small for any finite guarantee)"
            )

    def excess(e: float) -> float:
        return _gdp_delta(mu, e)[0] - delta

    eps = float(_brentq(excess, 0.0, hi, xtol=1e-12, rtol=1e-12))
    if eps < 1e-3:  # the absolute xtol is not small against epsilon: refine on log epsilon
        log_delta = math.log(delta)

        def log_excess(t: float) -> float:
            return _gdp_delta(mu, math.exp(t))[1] - log_delta

        t_hi = math.log(max(2.0 * eps, 1e-300)) if excess(2.0 * eps) < 0 else math.log(hi)
        t_lo = t_hi - 10.0
        while log_excess(t_lo) < 0:
            t_lo -= 10.0
            if t_lo < -700.0:
                return 0.0  # below 1e-300: zero to float64 precision
        eps = math.exp(float(_brentq(log_excess, t_lo, t_hi, xtol=1e-14, rtol=1e-12, maxiter=500)))
    return eps
