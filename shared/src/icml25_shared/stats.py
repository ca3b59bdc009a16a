"""Summary statistics for seeds and trials, with numpy only.

Examples
--------
>>> from icml25_shared.stats import paired_difference, t_interval, wilson_interval
>>> t_interval([1.0, 2.0, 3.0]).format(2)
'2.00 [-0.48, 4.48]'
>>> round(wilson_interval(9, 10).low, 4)
0.5958
>>> paired_difference([1.0, 2.0, 3.5], [1.5, 2.2, 3.6]).wins
3
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from statistics import NormalDist

import numpy as np

__all__ = ["Interval", "MeanSD", "PairedDifference", "mean_sd", "paired_difference", "t_interval",
           "t_quantile", "wilson_interval"]


@dataclass(frozen=True)
class MeanSD:
    """Mean and sample standard deviation (ddof = 1; 0 for one value) of ``n`` values."""

    mean: float
    sd: float
    n: int

    def format(self, digits: int = 3) -> str:
        """``'mean +- sd'`` with ``digits`` decimals."""
        return f"{self.mean:.{digits}f} +- {self.sd:.{digits}f}"


@dataclass(frozen=True)
class Interval:
    """A point estimate with a two-sided confidence interval."""

    estimate: float
    low: float
    high: float
    confidence: float
    n: int

    def contains(self, value: float) -> bool:
        """Whether ``value`` lies in ``[low, high]``."""
        return self.low <= value <= self.high

    def format(self, digits: int = 3) -> str:
        """``'estimate [low, high]'`` with ``digits`` decimals."""
        return f"{self.estimate:.{digits}f} [{self.low:.{digits}f}, {self.high:.{digits}f}]"


@dataclass(frozen=True)
class PairedDifference(Interval):
    """Mean of ``a - b`` over pairs with its t-interval; ``wins`` counts pairs with ``a < b``."""

    wins: int = 0


def _values(x: Sequence[float] | np.ndarray, name: str = "values") -> np.ndarray:
    arr = np.asarray(x, dtype=np.float64).ravel()
    if arr.size == 0:
        raise ValueError(f"{name} is empty")
    if not np.all(np.isfinite(arr)):
        raise ValueError(f"{name} contains NaN or infinity")
    return arr


def _check_confidence(confidence: float) -> float:
    if not 0.0 < float(confidence) < 1.0:
        raise ValueError(f"confidence must lie in (0, 1), got {confidence!r}")
    return float(confidence)


def mean_sd(x: Sequence[float] | np.ndarray) -> MeanSD:
    """Mean and sample standard deviation of ``x``.

    Parameters
    ----------
    x : array-like of float
        Finite values (one per seed, say).

    Returns
    -------
    MeanSD
        ``sd`` uses ddof = 1 and is 0 for a single value.
    """
    arr = _values(x)
    return MeanSD(float(arr.mean()), float(arr.std(ddof=1)) if arr.size > 1 else 0.0, int(arr.size))


def _betacf(a: float, b: float, x: float) -> float:
    """Continued fraction of the regularised incomplete beta function (modified Lentz)."""
    tiny, qab, qap, qam = 1e-300, a + b, a + 1.0, a - 1.0
    c, d = 1.0, 1.0 - qab * x / qap
    d = 1.0 / (d if abs(d) > tiny else tiny)
    h = d
    for m in range(1, 500):
        m2 = 2 * m
        for aa in (m * (b - m) * x / ((qam + m2) * (a + m2)), -(a + m) * (qab + m) * x / ((a + m2) * (qap + m2))):
            d = 1.0 + aa * d
            d = 1.0 / (d if abs(d) > tiny else tiny)
            c = 1.0 + aa / c
            c = c if abs(c) > tiny else tiny
            h *= d * c
        if abs(d * c - 1.0) < 1e-15:
            break
    return h


def _betainc(a: float, b: float, x: float, y: float) -> float:
    """Regularised incomplete beta I_x(a, b); ``y = 1 - x`` is passed exactly (no cancellation near x = 1)."""
    if x <= 0.0:
        return 0.0
    if y <= 0.0:
        return 1.0
    log_front = math.lgamma(a + b) - math.lgamma(a) - math.lgamma(b) + a * math.log(x) + b * math.log(y)
    if x < (a + 1.0) / (a + b + 2.0):
        return math.exp(log_front) * _betacf(a, b, x) / a
    return 1.0 - math.exp(log_front) * _betacf(b, a, y) / b


def _t_tail(t: float, df: float) -> float:
    """P(T > t) for t >= 0, computed directly (no 1 - cdf cancellation in the tail)."""
    t2 = t * t
    return 0.5 * _betainc(df / 2.0, 0.5, df / (df + t2), t2 / (df + t2))


def t_quantile(p: float, df: float) -> float:
    """Quantile of Student's t distribution with ``df`` degrees of freedom (agrees with scipy to ~1e-12).

    The CDF is the regularised incomplete beta function (a continued fraction), inverted by bisection;
    from ``df = 1e4`` on (and for ``df = inf``) a Cornish-Fisher expansion around the normal quantile.

    Parameters
    ----------
    p : float
        Probability in (0, 1).
    df : float
        Degrees of freedom, positive.

    Returns
    -------
    float
        ``t`` with ``P(T <= t) = p``.
    """
    if not 0.0 < p < 1.0:
        raise ValueError(f"p must lie in (0, 1), got {p!r}")
    if not df > 0:  # also rejects NaN
        raise ValueError(f"df must be positive, got {df!r}")
    if p == 0.5:
        return 0.0
    if df >= 1e4:  # lgamma(df / 2) cancels there; the expansion around the normal quantile is exact to ~1e-15
        return _t_quantile_large_df(p, df)
    tail, sign = (p, -1.0) if p < 0.5 else (1.0 - p, 1.0)  # 1 - p is exact for p in [0.5, 1)
    low, high = 0.0, 1.0
    while _t_tail(high, df) > tail:
        low, high = high, high * 2.0
    for _ in range(2000):  # bisection: the tail is monotone; ~60 halvings per doubling exhaust float precision
        mid = 0.5 * (low + high)
        if _t_tail(mid, df) > tail:
            low = mid
        else:
            high = mid
        if high - low <= 1e-15 * max(1.0, high):
            break
    return sign * 0.5 * (low + high)


def _t_quantile_large_df(p: float, df: float) -> float:
    """Cornish-Fisher expansion of the t quantile around the normal one, for df >= 1e4 (and df = inf).

    Four terms (Abramowitz and Stegun 26.7.5): the next one is below 1e-15 of the quantile for
    df >= 1e4 and 1e-12 <= p <= 1 - 1e-12.
    """
    z = NormalDist().inv_cdf(p)
    if math.isinf(df):
        return z
    g1 = (z**3 + z) / 4.0
    g2 = (5 * z**5 + 16 * z**3 + 3 * z) / 96.0
    g3 = (3 * z**7 + 19 * z**5 + 17 * z**3 - 15 * z) / 384.0
    g4 = (79 * z**9 + 776 * z**7 + 1482 * z**5 - 1920 * z**3 - 945 * z) / 92160.0
    return z + g1 / df + g2 / df**2 + g3 / df**3 + g4 / df**4


def t_interval(x: Sequence[float] | np.ndarray, confidence: float = 0.95) -> Interval:
    """Student-t confidence interval for the mean of ``x``.

    Parameters
    ----------
    x : array-like of float
        At least two finite values.
    confidence : float, default 0.95
        Two-sided coverage.

    Returns
    -------
    Interval
        ``mean +- t_{(1+confidence)/2, n-1} * sd / sqrt(n)``.
    """
    arr, confidence = _values(x), _check_confidence(confidence)
    if arr.size < 2:
        raise ValueError("a t-interval needs at least two values")
    mean, sd = float(arr.mean()), float(arr.std(ddof=1))
    half = t_quantile(0.5 + confidence / 2.0, arr.size - 1) * sd / math.sqrt(arr.size)
    return Interval(mean, mean - half, mean + half, confidence, int(arr.size))


def wilson_interval(successes: int, n: int, confidence: float = 0.95) -> Interval:
    """Wilson score interval for a binomial proportion.

    Parameters
    ----------
    successes : int
        Number of successes, ``0 <= successes <= n``.
    n : int
        Number of trials, positive.
    confidence : float, default 0.95
        Two-sided coverage.

    Returns
    -------
    Interval
        The estimate ``successes / n`` and Wilson's bounds (inside [0, 1] by construction).
    """
    confidence = _check_confidence(confidence)
    if isinstance(n, bool) or int(n) != n or n <= 0:
        raise ValueError(f"n must be a positive int, got {n!r}")
    if int(successes) != successes or not 0 <= successes <= n:
        raise ValueError(f"successes must be an int in [0, n={n}], got {successes!r}")
    z = NormalDist().inv_cdf(0.5 + confidence / 2.0)
    p = successes / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    low = 0.0 if successes == 0 else max(0.0, centre - half)  # exact ends: rounding must not exclude p
    high = 1.0 if successes == n else min(1.0, centre + half)
    return Interval(p, low, high, confidence, int(n))


def paired_difference(a: Sequence[float] | np.ndarray, b: Sequence[float] | np.ndarray,
                      confidence: float = 0.95, *, relative: bool = False) -> PairedDifference:
    """Mean paired difference ``a - b`` with a t-interval.

    Parameters
    ----------
    a, b : array-like of float
        Paired values (same seed in the same position), same length, at least two pairs.
    confidence : float, default 0.95
        Two-sided coverage.
    relative : bool, default False
        Use ``(a - b) / |b|`` per pair, which keeps "smaller is better" when ``b`` is negative.

    Returns
    -------
    PairedDifference
        The interval of the mean difference and the number of pairs where ``a < b``.
    """
    a_arr, b_arr = _values(a, "a"), _values(b, "b")
    if a_arr.shape != b_arr.shape:
        raise ValueError(f"a and b must pair up, got {a_arr.size} and {b_arr.size} values")
    if relative and np.any(b_arr == 0):
        raise ValueError("relative differences need every b to be non-zero")
    diff = (a_arr - b_arr) / np.abs(b_arr) if relative else a_arr - b_arr
    ci = t_interval(diff, confidence)
    return PairedDifference(ci.estimate, ci.low, ci.high, ci.confidence, ci.n, wins=int(np.sum(a_arr < b_arr)))
