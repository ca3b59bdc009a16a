"""Statistics of a run: Wilson intervals, the exact McNemar test, uplift with a paired interval, AUROC.

``wilson`` uses the same formula as statsmodels' ``proportion_confint(method="wilson")``;
``mcnemar_exact`` is the two-sided exact binomial test on the discordant pairs (statsmodels'
``mcnemar(table, exact=True)``); the uplift interval is Newcombe's (1998) hybrid score interval for a
difference of paired proportions (his method 10, with his continuity-corrected phi).
``clustered_rate`` and ``clustered_paired`` use tasks as the units of analysis: repeated seeds of one
task are averaged, not counted as independent trials.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from statistics import NormalDist

import numpy as np
from icml25_shared.stats import Interval, wilson_interval

__all__ = ["McNemarResult", "Uplift", "auroc", "clustered_paired", "clustered_rate", "mcnemar_exact",
           "paired_difference_interval", "rates_at", "wilson"]


def wilson(successes: int, n: int, confidence: float = 0.95) -> Interval:
    """Wilson score interval of a binomial proportion.

    Parameters
    ----------
    successes : int
        Successes, ``0 <= successes <= n``.
    n : int
        Trials (> 0).
    confidence : float, default 0.95
        Two-sided coverage.

    Returns
    -------
    Interval
        ``estimate`` (successes / n), ``low``, ``high``.

    Examples
    --------
    >>> ci = wilson(45, 50)
    >>> round(ci.estimate, 2), round(ci.low, 4), round(ci.high, 4)
    (0.9, 0.7864, 0.9565)
    """
    for label, value in (("successes", successes), ("n", n)):
        if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, np.integer)):
            raise ValueError(f"{label} must be an int, got {value!r}")
    return wilson_interval(int(successes), int(n), confidence)


@dataclass(frozen=True)
class McNemarResult:
    """Exact McNemar test of two paired binary outcomes.

    Attributes
    ----------
    b : int
        Pairs where only the first outcome is a success.
    c : int
        Pairs where only the second is.
    statistic : int
        ``min(b, c)``.
    pvalue : float
        Two-sided exact binomial p-value, ``min(1, 2 P(X <= min(b, c)))`` with X ~ Bin(b + c, 1/2).
    """

    b: int
    c: int
    statistic: int
    pvalue: float


def _binary(values: Sequence[bool] | np.ndarray, label: str) -> np.ndarray:
    array = np.asarray(values)
    if array.dtype != bool and (array.dtype.kind not in "iuf" or not np.isin(array, (0, 1)).all()):
        raise ValueError(f"{label} must hold paired successes (bool or 0/1), got values such as "
                         f"{np.unique(array)[:5].tolist()}")
    return array.astype(bool)


def mcnemar_exact(first: Sequence[bool] | np.ndarray, second: Sequence[bool] | np.ndarray) -> McNemarResult:
    """Exact McNemar test of paired successes (same tasks and seeds, two strategies).

    Parameters
    ----------
    first, second : sequence of bool
        Outcomes of the same pairs, aligned.

    Returns
    -------
    McNemarResult
        The discordant counts and the two-sided p-value (1.0 when there are no discordant pairs).

    Examples
    --------
    >>> mcnemar_exact([1, 1, 1, 1, 0], [0, 0, 0, 0, 0]).pvalue
    0.125
    """
    a, b_ = _binary(first, "first"), _binary(second, "second")
    if a.shape != b_.shape or a.ndim != 1:
        raise ValueError(f"first and second must be 1-d and aligned, got shapes {a.shape} and {b_.shape}")
    return _sign_test(int(np.sum(a & ~b_)), int(np.sum(~a & b_)))


def _sign_test(b: int, c: int) -> McNemarResult:
    """Two-sided exact binomial test of ``b`` against ``c`` discordant units."""
    n, k = b + c, min(b, c)
    if n == 0:
        return McNemarResult(b, c, k, 1.0)
    total, term = 0, 1  # sum of comb(n, i) for i <= k, each term from the previous one (exact integers)
    for i in range(k + 1):
        total += term
        term = term * (n - i) // (i + 1)
    tail = total / 2**n
    return McNemarResult(b, c, k, min(1.0, 2.0 * tail))


def _wilson_real(successes: float, n: int, confidence: float) -> Interval:
    """Wilson's score interval for a real-valued success count (a sum of per-task success shares)."""
    if float(successes).is_integer():
        return wilson(int(successes), int(n), confidence)
    z = NormalDist().inv_cdf(0.5 + confidence / 2.0)
    p = successes / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return Interval(p, max(0.0, centre - half), min(1.0, centre + half), confidence, int(n))


def _newcombe(both: float, only1: float, only2: float, neither: float, confidence: float) -> Interval:
    n = both + only1 + only2 + neither
    size = int(round(n))
    p1, p2 = (both + only1) / n, (both + only2) / n
    w1, w2 = _wilson_real(both + only1, size, confidence), _wilson_real(both + only2, size, confidence)
    denominator = (both + only1) * (only2 + neither) * (both + only2) * (only1 + neither)
    cross = both * neither - only1 * only2
    if cross > 0:  # Newcombe's continuity correction of phi (otherwise identical outcomes give a zero-width interval)
        cross = max(cross - n / 2, 0.0)
    phi = 0.0 if denominator == 0 else cross / math.sqrt(denominator)
    d = p1 - p2
    low = d - math.sqrt(max(0.0, (p1 - w1.low) ** 2 - 2 * phi * (p1 - w1.low) * (w2.high - p2) + (w2.high - p2) ** 2))
    high = d + math.sqrt(max(0.0, (w1.high - p1) ** 2 - 2 * phi * (w1.high - p1) * (p2 - w2.low) + (p2 - w2.low) ** 2))
    return Interval(d, max(-1.0, low), min(1.0, high), confidence, size)


def paired_difference_interval(first: Sequence[bool] | np.ndarray, second: Sequence[bool] | np.ndarray,
                               confidence: float = 0.95) -> Interval:
    """Newcombe's hybrid score interval of ``mean(first) - mean(second)`` for paired binary outcomes.

    Parameters
    ----------
    first, second : sequence of bool
        Aligned paired outcomes.
    confidence : float, default 0.95
        Two-sided coverage.

    Returns
    -------
    Interval
        The difference of the success rates and its bounds (within [-1, 1]).
    """
    a, b_ = _binary(first, "first"), _binary(second, "second")
    if a.shape != b_.shape or a.ndim != 1 or a.size == 0:
        raise ValueError(f"first and second must be non-empty, 1-d and aligned, got {a.shape} and {b_.shape}")
    return _newcombe(int(np.sum(a & b_)), int(np.sum(a & ~b_)), int(np.sum(~a & b_)), int(np.sum(~a & ~b_)),
                     confidence)


def _clusters(outcomes: Sequence[Sequence[bool]] | Sequence[np.ndarray], label: str) -> list[np.ndarray]:
    clusters = [_binary(list(c), f"{label}[{i}]") for i, c in enumerate(outcomes)]
    if not clusters or any(c.size == 0 for c in clusters):
        raise ValueError(f"{label} must hold at least one task, each with at least one outcome")
    return clusters


def clustered_rate(outcomes: Sequence[Sequence[bool]], confidence: float = 0.95) -> Interval:
    """Success rate with tasks as units: the mean of the per-task success shares and Wilson's interval, n = tasks.

    Repeated seeds of one task are not independent trials (a deterministic model repeats itself), so
    the seeds of a task are averaged first. With 0/1 task outcomes this is Wilson's interval on the
    tasks; with shares in between it stays conservative (a share in [0, 1] has variance at most
    p(1 - p)).

    Parameters
    ----------
    outcomes : sequence of sequence of bool
        One sequence of outcomes (one per seed) for each task.
    confidence : float, default 0.95
        Two-sided coverage.

    Returns
    -------
    Interval
        ``estimate`` (mean task share), ``low``, ``high``, ``n`` (tasks).

    Examples
    --------
    >>> ci = clustered_rate([[True] * 5] * 50)           # 50 tasks, 5 identical seeds each
    >>> ci.n, round(ci.low, 3)
    (50, 0.929)
    """
    shares = [float(c.mean()) for c in _clusters(outcomes, "outcomes")]
    return _wilson_real(sum(shares), len(shares), confidence)


def clustered_paired(first: Sequence[Sequence[bool]], second: Sequence[Sequence[bool]],
                     confidence: float = 0.95) -> tuple[Interval, McNemarResult]:
    """Difference of two strategies' success with tasks as units: Newcombe's interval and an exact sign test.

    Each task contributes one unit, split over the four cells (both, first only, second only, neither)
    by the shares of its paired seeds; the interval is Newcombe's on those cell totals (n = tasks).
    The test counts tasks where the first strategy's share is higher (``b``) or lower (``c``) and
    applies the exact two-sided binomial test, which is McNemar's exact test on tasks when each task
    has one outcome per strategy.

    Parameters
    ----------
    first, second : sequence of sequence of bool
        Per task, the outcomes of the same seeds (aligned).
    confidence : float, default 0.95
        Two-sided coverage.

    Returns
    -------
    tuple of (Interval, McNemarResult)
        The paired difference and the test.

    Examples
    --------
    >>> ci, test = clustered_paired([[True] * 5] * 50, [[False] * 5] * 50)
    >>> round(ci.low, 3), f"{test.pvalue:.1e}"
    (0.899, '1.8e-15')
    """
    a, b_ = _clusters(first, "first"), _clusters(second, "second")
    if len(a) != len(b_) or any(x.shape != y.shape for x, y in zip(a, b_, strict=True)):
        raise ValueError("first and second must hold the same tasks with the same number of paired outcomes")
    cells = np.zeros(4)
    wins = losses = 0
    for x, y in zip(a, b_, strict=True):
        cells += [np.mean(x & y), np.mean(x & ~y), np.mean(~x & y), np.mean(~x & ~y)]
        wins += int(x.mean() > y.mean())
        losses += int(x.mean() < y.mean())
    both, only1, only2, neither = (float(c) for c in cells)
    return _newcombe(both, only1, only2, neither, confidence), _sign_test(wins, losses)


@dataclass(frozen=True)
class Uplift:
    """Success of a combination minus that of the best single model on the same paired episodes.

    Attributes
    ----------
    combination : str
        The combination strategy.
    best_single : str
        The single-model strategy with the highest success rate.
    estimate, low, high : float
        The uplift and Newcombe's paired interval.
    combination_rate, single_rate : float
        The two success rates.
    mcnemar : McNemarResult
        Exact McNemar test of the combination against the best single strategy.
    n : int
        Paired tasks (the units; seeds are averaged within a task).
    """

    combination: str
    best_single: str
    estimate: float
    low: float
    high: float
    combination_rate: float
    single_rate: float
    mcnemar: McNemarResult
    n: int


def auroc(positive: Sequence[float] | np.ndarray, negative: Sequence[float] | np.ndarray) -> float:
    """Area under the ROC curve: P(score of a positive > score of a negative), ties counting one half.

    Parameters
    ----------
    positive, negative : sequence of float
        Scores of positive (flagged) and negative (control) episodes; both non-empty.

    Returns
    -------
    float
        The AUROC in [0, 1].

    Examples
    --------
    >>> auroc([0.9, 0.8, 0.4], [0.1, 0.4])
    0.9166666666666666
    """
    pos, neg = np.asarray(positive, dtype=float), np.asarray(negative, dtype=float)
    if pos.size == 0 or neg.size == 0:
        raise ValueError(f"auroc needs positive and negative scores, got {pos.size} and {neg.size}")
    if np.isnan(pos).any() or np.isnan(neg).any():
        raise ValueError("auroc scores must not be NaN (a NaN compares neither above, below nor equal)")
    greater = np.sum(pos[:, None] > neg[None, :])
    ties = np.sum(pos[:, None] == neg[None, :])
    return float((greater + 0.5 * ties) / (pos.size * neg.size))


def rates_at(positive: Sequence[bool] | np.ndarray, negative: Sequence[bool] | np.ndarray) -> tuple[float, float]:
    """(TPR, FPR) of binary monitor decisions on positive and negative episodes.

    Parameters
    ----------
    positive, negative : sequence of bool
        Flags raised on positive and on negative episodes.

    Returns
    -------
    tuple of (float, float)
        True-positive and false-positive rates (nan for an empty side).
    """
    pos, neg = np.asarray(positive, dtype=bool), np.asarray(negative, dtype=bool)
    return (float(pos.mean()) if pos.size else math.nan, float(neg.mean()) if neg.size else math.nan)
