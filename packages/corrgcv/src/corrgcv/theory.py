"""Deterministic equivalents of ridge risk with correlated samples (Atanasov, Zavatone-Veth, Pehlevan 2025).

Model: X = K^{1/2} Z Sigma^{1/2} (T x N), y = X w + noise with noise correlation K (matched noise),
ridge lambda in the paper's normalisation (lambda = alpha / T). The renormalised ridge kappa and its
dual kappa_tilde on the sample side solve

    (1/T) sum_t k_t / (k_t + kappa_tilde) = (1/T) sum_i eta_i / (eta_i + kappa) =: d,
    kappa * kappa_tilde / lambda = 1 / d,

and, with gamma = (df2 / df1) (df2_tilde / df1_tilde),

    R_g = kappa^2 / (1 - gamma) * sum_i eta_i w_i^2 / (eta_i + kappa)^2 + gamma / (1 - gamma) * sigma^2,
    R_out = R_g + sigma^2.

A test point correlated with the training rows by the vector c (alpha = K^{-1} c, rho = c^T K^{-1} c)
has risk R_out * (1 - rho + kappa_tilde^2 alpha^T K (K + kappa_tilde)^{-2} alpha): the training
residual, whose covariance is R_out kappa_tilde^2 K (K + kappa_tilde)^{-2}, leaks into the test error.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from corrgcv.correlation import Correlation, check_k_matrix, k_eigenvalues

__all__ = ["DeterministicEquivalent", "deterministic_equivalent", "test_point_factor", "horizon_factor"]


@dataclass(frozen=True)
class DeterministicEquivalent:
    """Deterministic-equivalent quantities; every array has shape (n_ridges,).

    Attributes
    ----------
        ridge: lambda (the paper's normalisation, alpha / T).
        kappa, kappa_tilde: renormalised ridge and its sample-side dual.
        df1, df2: (1/N) tr Sigma (Sigma + kappa)^{-1} and (1/N) tr Sigma^2 (Sigma + kappa)^{-2}.
        df1_tilde, df2_tilde: the same on the sample side with K, kappa_tilde and 1/T (df1_tilde = q df1).
        gamma: (df2 / df1) (df2_tilde / df1_tilde).
        bias, variance: the two terms of R_g.
        generalization_error: R_g = bias + variance.
        out_of_sample_risk: R_g + sigma^2.
    """

    ridge: np.ndarray
    kappa: np.ndarray
    kappa_tilde: np.ndarray
    df1: np.ndarray
    df2: np.ndarray
    df1_tilde: np.ndarray
    df2_tilde: np.ndarray
    gamma: np.ndarray
    bias: np.ndarray
    variance: np.ndarray
    generalization_error: np.ndarray
    out_of_sample_risk: np.ndarray


def _solve_kappa(lam: float, eta: np.ndarray, k: np.ndarray) -> float:
    T = k.shape[0]

    def gap(log_kappa: float) -> float:
        # Increasing in kappa: d falls while kappa * d (hence 1 / kappa_tilde) rises.
        kappa = np.exp(log_kappa)
        d = np.sum(eta / (eta + kappa)) / T
        kt = lam / (kappa * d)
        return float(np.mean(k / (k + kt)) - d)

    lo = np.log(lam / k.max()) - 1.0
    hi = lo + 2.0
    while gap(lo) > 0:
        lo -= 2.0
    while gap(hi) < 0:
        hi += 2.0
    import scipy.optimize  # on first use: import corrgcv and --help skip SciPy
    return float(np.exp(scipy.optimize.brentq(gap, lo, hi, xtol=1e-15, rtol=4 * np.finfo(float).eps, maxiter=500)))


def deterministic_equivalent(
    spectrum: Any, target: Any, *, n_samples: int, ridge: Any, K: Any = None, noise_variance: float = 0.0
) -> DeterministicEquivalent:
    """Deterministic-equivalent risk of ridge regression with correlated samples.

    Args:
        spectrum: (N,) eigenvalues eta of the feature covariance Sigma (positive).
        target: (N,) true weights in the eigenbasis of Sigma.
        n_samples: T.
        ridge: lambda > 0 (scalar or 1-D), the paper's normalisation (alpha / T).
        K: sample correlation (None = independent; anything :func:`corrgcv.k_eigenvalues` accepts).
        noise_variance: sigma^2 >= 0.
    """
    eta = np.asarray(spectrum, dtype=float)
    w = np.asarray(target, dtype=float)
    if eta.ndim != 1 or w.shape != eta.shape:
        raise ValueError(f"spectrum and target must be 1-D of equal length; got {eta.shape} and {w.shape}")
    if not (np.all(np.isfinite(eta)) and np.all(eta > 0) and np.all(np.isfinite(w))):
        raise ValueError("spectrum must be finite and positive and target finite")
    if not (np.isfinite(noise_variance) and noise_variance >= 0):
        raise ValueError(f"noise_variance must be finite and >= 0, got {noise_variance}")
    lams = np.atleast_1d(np.asarray(ridge, dtype=float))
    if lams.ndim != 1 or not np.all(np.isfinite(lams)) or np.any(lams <= 0):
        raise ValueError("ridge must be finite and > 0 (scalar or 1-D)")
    k = k_eigenvalues(K, n_samples)
    N, T = eta.shape[0], k.shape[0]
    kappa = np.array([_solve_kappa(lam, eta, k) for lam in lams])
    r = eta[None, :] / (eta[None, :] + kappa[:, None])
    df1 = r.mean(axis=1)
    df2 = (r**2).mean(axis=1)
    d = df1 * N / T
    kt = lams / (kappa * d)
    rt = k[None, :] / (k[None, :] + kt[:, None])
    df1t = rt.mean(axis=1)
    df2t = (rt**2).mean(axis=1)
    gamma = (df2 / df1) * (df2t / df1t)
    bias = kappa**2 / (1.0 - gamma) * ((eta * w**2)[None, :] / (eta[None, :] + kappa[:, None]) ** 2).sum(axis=1)
    variance = gamma / (1.0 - gamma) * noise_variance
    rg = bias + variance
    return DeterministicEquivalent(
        ridge=lams,
        kappa=kappa,
        kappa_tilde=kt,
        df1=df1,
        df2=df2,
        df1_tilde=df1t,
        df2_tilde=df2t,
        gamma=gamma,
        bias=bias,
        variance=variance,
        generalization_error=rg,
        out_of_sample_risk=rg + noise_variance,
    )


def test_point_factor(K: Any, cross: Any, kappa_tilde: Any) -> np.ndarray:
    """Risk multiplier R(c) / R_out for a test point with correlations ``cross`` (T,) or (n_points, T) to the training rows: 1 - c^T K^{-1} c + kappa_tilde^2 c^T K^{-1} (K + kappa_tilde)^{-2} c.

    ``K`` is a :class:`Correlation` or a (T, T) correlation matrix; ``kappa_tilde`` a positive scalar
    (e.g. from :func:`deterministic_equivalent` or :func:`corrgcv.corrgcv`). Returns shape (n_points,).
    """
    c = np.atleast_2d(np.asarray(cross, dtype=float))
    T = c.shape[1]
    mat = K.matrix(T) if isinstance(K, Correlation) else check_k_matrix(np.asarray(K, float), T)
    lam, vec = np.linalg.eigh(mat)
    k_eigenvalues(lam, T)  # validates positive definiteness
    kt = float(kappa_tilde)
    if not (np.isfinite(kt) and kt > 0):
        raise ValueError(f"kappa_tilde must be finite and > 0, got {kappa_tilde}")
    b2 = (c @ vec) ** 2
    rho = b2 @ (1.0 / lam)
    leak = kt**2 * (b2 @ (1.0 / (lam * (lam + kt) ** 2)))
    if np.any(rho >= 1.0 + 1e-10):
        raise ValueError(
            "cross correlations are inconsistent with K (the joint correlation would not be positive semi-definite)"
        )
    return 1.0 - rho + leak


# pytest would collect a module-level function named test_*; it is library code.
test_point_factor.__test__ = False  # type: ignore[attr-defined]


def horizon_factor(correlation: Correlation, n_samples: int, horizons: Any, kappa_tilde: float) -> np.ndarray:
    """:func:`test_point_factor` for a test point ``tau`` steps after the last training row, for each tau in ``horizons`` (>= 1), under a stationary :class:`Correlation`.

    Shape (n_horizons,).
    """
    taus = np.atleast_1d(np.asarray(horizons, dtype=float))
    cross = np.stack([correlation.cross(n_samples, tau) for tau in taus])
    return test_point_factor(correlation, cross, kappa_tilde)
