"""Sample-sample correlation matrices K (T x T, unit diagonal) for stationary series.

Three one-parameter families, each with the full matrix, its eigenvalues (fast paths where the
structure allows), its correlation function at integer lags, the correlation of a test point at
horizon ``tau`` with the training rows, and a lag-1 moment estimator of its parameter.

Times are 0, 1, ..., T-1; a test point at horizon ``tau >= 1`` sits at time T-1+tau, i.e. ``tau``
steps after the last training row.
"""

from __future__ import annotations

import math
from abc import ABC, abstractmethod
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np
from icml25_shared.validation import Interval, check_param

__all__ = [
    "Correlation",
    "ExponentialCorrelation",
    "NearestNeighbourCorrelation",
    "PowerLawCorrelation",
    "FAMILIES",
    "correlation_family",
    "k_eigenvalues",
    "lag1_autocorrelation",
]


class Correlation(ABC):
    """A stationary correlation family: K_ts = acf(|t - s|), acf(0) = 1."""

    name: ClassVar[str]

    @abstractmethod
    def acf(self, lags: np.ndarray) -> np.ndarray:
        """Correlation at non-negative integer (or real) ``lags``; same shape as ``lags``."""

    @property
    @abstractmethod
    def parameter(self) -> float:
        """The family's single parameter (xi, rho or exponent)."""

    @classmethod
    @abstractmethod
    def from_lag1(cls, r1: float) -> Correlation:
        """The member whose lag-1 correlation equals ``r1`` (clipped to the family's range)."""

    def matrix(self, n_samples: int) -> np.ndarray:
        """The (n_samples, n_samples) Toeplitz correlation matrix K."""
        n = _check_n(n_samples)
        import scipy.linalg  # on first use: import corrgcv and --help skip SciPy
        return scipy.linalg.toeplitz(self.acf(np.arange(n, dtype=float)))

    def eigenvalues(self, n_samples: int) -> np.ndarray:
        """Eigenvalues of K in ascending order, shape (n_samples,)."""
        return np.linalg.eigvalsh(self.matrix(n_samples))

    def cross(self, n_samples: int, horizon: float) -> np.ndarray:
        """Correlations (n_samples,) between the training rows and a test point ``horizon`` steps after the last training row (horizon >= 1; np.inf gives zeros)."""
        n = _check_n(n_samples)
        if not horizon >= 1:
            raise ValueError(f"horizon must be >= 1 (steps after the last training row), got {horizon}")
        if np.isinf(horizon):
            return np.zeros(n)
        return self.acf(n - 1 + horizon - np.arange(n, dtype=float))


def _check_n(n_samples: Any) -> int:
    if isinstance(n_samples, bool) or not isinstance(n_samples, (int, np.integer)) or n_samples < 1:
        raise ValueError(f"n_samples must be a positive int, got {n_samples!r}")
    return int(n_samples)


@dataclass(frozen=True)
class ExponentialCorrelation(Correlation):
    """K_ts = exp(-|t - s| / xi): an AR(1) / Ornstein-Uhlenbeck correlation with time scale ``xi`` > 0."""

    xi: float
    name: ClassVar[str] = "exponential"

    def __post_init__(self) -> None:
        check_param("xi", self.xi, [Interval(float, 0, math.inf, closed="neither")], owner="ExponentialCorrelation")

    @property
    def parameter(self) -> float:
        """The family's parameter."""
        return float(self.xi)

    def acf(self, lags: np.ndarray) -> np.ndarray:
        """Correlation at ``lags`` (same shape as ``lags``)."""
        return np.exp(-np.abs(np.asarray(lags, dtype=float)) / self.xi)

    def eigenvalues(self, n_samples: int) -> np.ndarray:
        """Eigenvalues of K in ascending order, shape (n_samples,)."""
        # K^{-1} of the Kac-Murdock-Szego matrix is tridiagonal: O(T^2) instead of a dense eigh.
        n = _check_n(n_samples)
        rho = math.exp(-1.0 / self.xi)
        if n == 1 or rho == 0.0:
            return np.ones(n)
        scale = 1.0 / (1.0 - rho * rho)
        diag = np.full(n, (1.0 + rho * rho) * scale)
        diag[0] = diag[-1] = scale
        off = np.full(n - 1, -rho * scale)
        import scipy.linalg  # on first use: import corrgcv and --help skip SciPy
        inv_eigs = scipy.linalg.eigvalsh_tridiagonal(diag, off)
        return np.sort(1.0 / inv_eigs)

    @classmethod
    def from_lag1(cls, r1: float) -> ExponentialCorrelation:
        """The member whose lag-1 correlation equals ``r1`` (clipped to the family's range)."""
        # Capped at xi = 1e4: beyond it K is numerically singular for long series.
        r1 = float(np.clip(r1, 1e-12, math.exp(-1e-4)))
        return cls(xi=-1.0 / math.log(r1))


@dataclass(frozen=True)
class NearestNeighbourCorrelation(Correlation):
    """K = I + rho (shift + shift^T): only neighbouring samples correlate; |rho| < 1/2 keeps K positive definite for every T."""

    rho: float
    name: ClassVar[str] = "nearest-neighbour"

    def __post_init__(self) -> None:
        if not (np.isfinite(self.rho) and abs(self.rho) < 0.5):
            raise ValueError(f"nearest-neighbour correlation needs |rho| < 0.5, got {self.rho!r}")

    @property
    def parameter(self) -> float:
        """The family's parameter."""
        return float(self.rho)

    def acf(self, lags: np.ndarray) -> np.ndarray:
        """Correlation at ``lags`` (same shape as ``lags``)."""
        lags = np.abs(np.asarray(lags, dtype=float))
        return np.where(lags == 0, 1.0, np.where(lags == 1, self.rho, 0.0))

    def eigenvalues(self, n_samples: int) -> np.ndarray:
        """Eigenvalues of K in ascending order, shape (n_samples,)."""
        n = _check_n(n_samples)
        j = np.arange(1, n + 1)
        return np.sort(1.0 + 2.0 * self.rho * np.cos(np.pi * j / (n + 1)))

    @classmethod
    def from_lag1(cls, r1: float) -> NearestNeighbourCorrelation:
        """The member whose lag-1 correlation equals ``r1`` (clipped to the family's range)."""
        return cls(rho=float(np.clip(r1, -0.49, 0.49)))


@dataclass(frozen=True)
class PowerLawCorrelation(Correlation):
    """K_ts = (1 + |t - s|)^(-exponent), exponent > 0: long memory.

    Positive definite for every T (a convex sequence decreasing to zero, Polya's criterion).
    """

    exponent: float
    name: ClassVar[str] = "power-law"

    def __post_init__(self) -> None:
        if not (np.isfinite(self.exponent) and self.exponent > 0):
            raise ValueError(f"power-law correlation needs a finite exponent > 0, got {self.exponent!r}")

    @property
    def parameter(self) -> float:
        """The family's parameter."""
        return float(self.exponent)

    def acf(self, lags: np.ndarray) -> np.ndarray:
        """Correlation at ``lags`` (same shape as ``lags``)."""
        return (1.0 + np.abs(np.asarray(lags, dtype=float))) ** (-self.exponent)

    @classmethod
    def from_lag1(cls, r1: float) -> PowerLawCorrelation:
        """The member whose lag-1 correlation equals ``r1`` (clipped to the family's range)."""
        # Capped at lag-1 correlation 0.999 (exponent ~1.4e-3): beyond it K is numerically singular.
        r1 = float(np.clip(r1, 2.0**-60, 0.999))
        return cls(exponent=-math.log(r1) / math.log(2.0))


FAMILIES: dict[str, type[Correlation]] = {
    "exponential": ExponentialCorrelation,
    "nearest-neighbour": NearestNeighbourCorrelation,
    "power-law": PowerLawCorrelation,
}
"""The correlation families by name: the accepted ``family=`` strings and the class each one builds."""


def correlation_family(name: str) -> type[Correlation]:
    """The family class for ``name`` (one of ``FAMILIES``)."""
    try:
        return FAMILIES[name]
    except (KeyError, TypeError):
        raise ValueError(f"unknown correlation family {name!r}; accepted: {sorted(FAMILIES)}") from None


def lag1_autocorrelation(residuals: np.ndarray) -> float:
    """The usual (biased, mean-removed) lag-1 sample autocorrelation of a 1-D series; 0 when the series is constant or shorter than 2."""
    r = np.asarray(residuals, dtype=float).ravel()
    if r.size < 2:
        return 0.0
    r = r - r.mean()
    denom = float(r @ r)
    if not denom > 0:
        return 0.0
    return float(r[1:] @ r[:-1]) / denom


def k_eigenvalues(K: Any, n_samples: int, *, rtol: float = 1e-8) -> np.ndarray:
    """Eigenvalues (n_samples,) of the correlation K, validated.

    ``K`` may be None (independent samples, K = I), a :class:`Correlation`, a (T, T) correlation
    matrix (symmetric to ``rtol``, unit diagonal, positive definite), a (T,) array of its eigenvalues
    (positive, mean 1 because tr K = T), or a callable ``f(n_samples)`` returning any of these.
    """
    n = _check_n(n_samples)
    if K is None:
        return np.ones(n)
    if isinstance(K, Correlation):
        return _check_eigs(K.eigenvalues(n), n)
    if isinstance(K, str):
        raise ValueError(
            f"K={K!r} names a family without its parameter; pass e.g. "
            f"{correlation_family(K).__name__}(...) or use RidgeCorrGCV(correlation={K!r})"
        )
    if callable(K):
        return k_eigenvalues(_call_k(K, n), n, rtol=rtol)
    arr = np.asarray(K, dtype=float)
    if arr.ndim == 2:
        return _check_eigs(np.linalg.eigvalsh(check_k_matrix(arr, n, rtol=rtol)), n)
    if arr.ndim == 1:
        return _check_eigs(arr, n)
    raise ValueError(f"K must be a (T, T) matrix or its (T,) eigenvalues with T={n}; got shape {arr.shape}")


def _call_k(fn: Callable[[int], Any], n: int) -> Any:
    out = fn(n)
    if callable(out) and not isinstance(out, Correlation):
        raise ValueError("a callable K must return a matrix, eigenvalues or a Correlation, not another callable")
    return out


def check_k_matrix(K: np.ndarray, n_samples: int, *, rtol: float = 1e-8) -> np.ndarray:
    """Validate a (T, T) correlation matrix: finite, symmetric, unit diagonal (positive definiteness is checked on the eigenvalues)."""
    K = np.asarray(K, dtype=float)
    if K.shape != (n_samples, n_samples):
        raise ValueError(
            f"K has shape {K.shape} but the data have {n_samples} samples; expected ({n_samples}, {n_samples})"
        )
    if not np.all(np.isfinite(K)):
        raise ValueError("K contains NaN or infinite entries")
    if not np.allclose(K, K.T, rtol=0, atol=rtol * max(1.0, float(np.abs(K).max()))):
        raise ValueError("K is not symmetric")
    diag = np.diag(K)
    if not np.allclose(diag, 1.0, rtol=0, atol=1e-6):
        raise ValueError(
            f"K must be a correlation matrix with unit diagonal; its diagonal spans "
            f"[{diag.min():.4g}, {diag.max():.4g}] (divide a covariance by its diagonal)"
        )
    return K


def _check_eigs(eigs: np.ndarray, n: int) -> np.ndarray:
    # Positive definite up to what a dense eigensolver can resolve (about eps * n relative to the top).
    eigs = np.asarray(eigs, dtype=float)
    if eigs.shape != (n,):
        raise ValueError(f"K eigenvalues have shape {eigs.shape} but the data have {n} samples; expected ({n},)")
    if not np.all(np.isfinite(eigs)):
        raise ValueError("K eigenvalues contain NaN or infinite entries")
    if eigs.min() <= max(1e-12, 10 * np.finfo(float).eps * n) * max(eigs.max(), 1.0):
        raise ValueError(f"K is not positive definite: smallest eigenvalue {eigs.min():.3g} (largest {eigs.max():.3g})")
    if abs(eigs.mean() - 1.0) > 1e-6:
        raise ValueError(f"K eigenvalues must average 1 (tr K = T for a unit-diagonal K); got mean {eigs.mean():.6g}")
    return np.sort(eigs)
