"""Percentile bootstrap confidence interval of a mean, the template's worked method."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from icml25_shared.random import RandomStateLike, check_random_state
from icml25_shared.validation import Interval, check_params

__all__ = ["BootstrapInterval", "bootstrap_mean"]


@dataclass(frozen=True)
class BootstrapInterval:
    """The sample mean with a two-sided percentile bootstrap interval.

    Attributes
    ----------
    estimate : float
        The sample mean.
    low, high : float
        The ``(1 - confidence) / 2`` and ``(1 + confidence) / 2`` quantiles of the resampled means.
    confidence : float
        The nominal two-sided coverage.
    n_resamples : int
        How many bootstrap resamples were drawn.
    """

    estimate: float
    low: float
    high: float
    confidence: float
    n_resamples: int

    def contains(self, value: float) -> bool:
        """Whether ``value`` lies in ``[low, high]``.

        Parameters
        ----------
        value : float
            The value to test.

        Returns
        -------
        bool
            True when ``low <= value <= high``.
        """
        return self.low <= value <= self.high

    def format(self, digits: int = 3) -> str:
        """The interval as ``'estimate [low, high]'``.

        Parameters
        ----------
        digits : int, default 3
            Decimals shown.

        Returns
        -------
        str
            The formatted interval.
        """
        return f"{self.estimate:.{digits}f} [{self.low:.{digits}f}, {self.high:.{digits}f}]"


def bootstrap_mean(x: np.ndarray | list[float], *, confidence: float = 0.95, n_resamples: int = 2000,
                   random_state: RandomStateLike = None) -> BootstrapInterval:
    """Percentile bootstrap confidence interval of the mean of ``x``.

    Parameters
    ----------
    x : array-like of float, shape (n,)
        At least two finite values (a 2-D input is flattened).
    confidence : float, default 0.95
        Two-sided nominal coverage, in (0, 1).
    n_resamples : int, default 2000
        Bootstrap resamples; memory grows as ``n_resamples * n``.
    random_state : None, int, SeedSequence or numpy Generator, default None
        Source of the resampling indices (scikit-learn's ``check_random_state`` semantics: an int gives
        the same interval on every call).

    Returns
    -------
    BootstrapInterval
        The sample mean and the percentile interval of the resampled means.

    Raises
    ------
    TypeError
        When ``confidence`` is not a float, ``n_resamples`` not an int or ``random_state`` of another type.
    ValueError
        When ``x`` has fewer than two values or a non-finite one, ``confidence`` is outside (0, 1), or
        ``n_resamples`` is below 1.

    Examples
    --------
    >>> from __MODULE__ import bootstrap_mean
    >>> ci = bootstrap_mean([2.0, 4.0, 6.0, 8.0], random_state=0)
    >>> ci.estimate
    5.0
    >>> bool(2.0 <= ci.low < 5.0 < ci.high <= 8.0)
    True
    >>> bootstrap_mean([2.0, 4.0, 6.0, 8.0], random_state=0) == ci
    True
    """
    check_params({"confidence": confidence, "n_resamples": n_resamples, "random_state": random_state},
                 {"confidence": [Interval(float, 0, 1, closed="neither")], "n_resamples": [Interval(int, 1, None)],
                  "random_state": ["random_state"]}, owner="bootstrap_mean")
    values = np.asarray(x, dtype=np.float64).ravel()
    if values.size < 2:
        raise ValueError(f"x needs at least two values, got {values.size}")
    if not np.all(np.isfinite(values)):
        raise ValueError("x contains NaN or infinity")
    rng = check_random_state(random_state)
    means = values[rng.integers(0, values.size, size=(int(n_resamples), values.size))].mean(axis=1)
    tail = (1.0 - float(confidence)) / 2.0
    low, high = np.quantile(means, [tail, 1.0 - tail])
    return BootstrapInterval(float(values.mean()), float(low), float(high), float(confidence), int(n_resamples))
