"""Estimate a correlation family's parameter from ridge residuals (lag-1 moment matching).

The estimate is the family member whose lag-1 correlation equals the residuals' lag-1
autocorrelation. Ridge residuals are whiter than the noise (their covariance is proportional to
kappa_t^2 K (K + kappa_t)^{-2}, kappa_t the dual ridge), increasingly so as the penalty shrinks, so
this estimate is biased towards weaker correlation; :class:`~corrgcv.RidgeCorrGCV` therefore
alternates estimation and penalty choice, and a known K should be passed when one is available.
"""

from __future__ import annotations

from typing import Any

from corrgcv.correlation import Correlation, correlation_family, lag1_autocorrelation

__all__ = ["estimate_correlation"]


def estimate_correlation(family: str | type[Correlation], residuals: Any) -> Correlation:
    """The member of ``family`` (a name in :data:`corrgcv.FAMILIES` or a :class:`Correlation` subclass)
    whose lag-1 correlation matches the lag-1 autocorrelation of ``residuals`` (T,), given in time order."""
    cls = correlation_family(family) if isinstance(family, str) else family
    return cls.from_lag1(lag1_autocorrelation(residuals))
