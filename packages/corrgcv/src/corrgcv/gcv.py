"""GCV, exact leave-one-out and CorrGCV for ridge regression along a grid of penalties.

Penalty convention (scikit-learn's): the ridge fit minimises ||y - X w||^2 + alpha ||w||^2. The paper
writes the same fit as (X^T X / T + lambda I)^{-1} X^T y / T, so lambda = alpha / T.

One eigendecomposition of X^T X (or of X X^T when T < N) serves every penalty and every K. With
d = tr(H) / T the normalised degrees of freedom of the hat matrix H and E_in = ||y - X w||^2 / T:

- GCV = E_in / (1 - d)^2;
- CorrGCV = E_in / (kappa_t^2 * mean_t k_t / (k_t + kappa_t)^2), where k_t are the eigenvalues of K
  and kappa_t (the dual ridge on the sample side) solves mean_t k_t / (k_t + kappa_t) = d.

With K = I, kappa_t = (1 - d) / d and CorrGCV = GCV exactly.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from corrgcv.correlation import k_eigenvalues

__all__ = ["CVPath", "RidgeSpectrum", "corrgcv", "gcv", "loo", "solve_kappa_tilde"]


@dataclass(frozen=True)
class CVPath:
    """A cross-validation criterion along a penalty grid; every array has shape (n_alphas,).

    Attributes
    ----------
        alphas: penalties (scikit-learn convention, lambda = alpha / n_samples).
        criterion: the estimate of the out-of-sample squared error (GCV or CorrGCV), in y units squared;
            ``inf`` where the fit interpolates (d = 1).
        in_sample_error: mean squared training residual E_in.
        df: normalised degrees of freedom d = tr(H) / n_samples (the intercept counts as one).
        kappa_tilde: dual ridge on the sample side (K = I gives (1 - d) / d).
        df2_tilde: mean_t k_t^2 / (k_t + kappa_tilde)^2.
        method: "gcv" or "corrgcv".
    """

    alphas: np.ndarray
    criterion: np.ndarray
    in_sample_error: np.ndarray
    df: np.ndarray
    kappa_tilde: np.ndarray
    df2_tilde: np.ndarray
    n_samples: int
    method: str

    @property
    def best_index(self) -> int:
        """Index of the smallest criterion (the first one on ties)."""
        return int(np.argmin(self.criterion))

    @property
    def best_alpha(self) -> float:
        """The penalty with the smallest criterion."""
        return float(self.alphas[self.best_index])

    @property
    def ridge(self) -> np.ndarray:
        """The paper's lambda = alpha / n_samples."""
        return self.alphas / self.n_samples

    @property
    def renormalized_ridge(self) -> np.ndarray:
        """Kappa = lambda / (kappa_tilde * d): the effective ridge of the deterministic equivalent (the duality kappa * kappa_tilde / lambda = 1 / d)."""
        with np.errstate(divide="ignore", invalid="ignore"):
            return self.ridge / (self.kappa_tilde * self.df)


def check_xy(X: Any, y: Any) -> tuple[np.ndarray, np.ndarray]:
    """X as a finite (T, N) float64 array and y as a finite (T,) array."""
    X = np.asarray(X, dtype=float)
    y = np.asarray(y, dtype=float)
    if X.ndim != 2:
        raise ValueError(f"X must be 2-D (n_samples, n_features), got shape {X.shape}")
    if y.ndim == 2 and y.shape[1] == 1:
        y = y[:, 0]
    if y.ndim != 1:
        raise ValueError(f"y must be 1-D (n_samples,), got shape {y.shape}")
    if X.shape[0] != y.shape[0]:
        raise ValueError(f"X has {X.shape[0]} samples but y has {y.shape[0]}")
    if X.shape[0] < 2 or X.shape[1] < 1:
        raise ValueError(f"need at least 2 samples and 1 feature, got X of shape {X.shape}")
    if not np.all(np.isfinite(X)):
        raise ValueError("X contains NaN or infinite values")
    if not np.all(np.isfinite(y)):
        raise ValueError("y contains NaN or infinite values")
    return X, y


def check_alphas(alphas: Any) -> np.ndarray:
    """Penalties as a non-empty 1-D float array of finite, non-negative values."""
    try:
        a = np.atleast_1d(np.asarray(alphas, dtype=float))
    except (TypeError, ValueError):
        raise TypeError(f"alphas must be a non-negative float or a 1-D sequence of them; got {alphas!r}") from None
    if a.ndim != 1 or a.size == 0:
        raise ValueError(f"alphas must be a scalar or a non-empty 1-D sequence, got shape {a.shape}")
    if not np.all(np.isfinite(a)):
        raise ValueError("alphas must be finite")
    if np.any(a < 0):
        raise ValueError(f"alphas must be non-negative; got {a[a < 0][:5].tolist()}")
    return a


class RidgeSpectrum:
    """One eigendecomposition of the (centred) design, reused for every penalty and correlation K.

    Build it with :meth:`from_data`; then :meth:`gcv`, :meth:`corrgcv`, :meth:`loo` and :meth:`coef`
    cost O(rank) or O(rank * n_alphas * T) each, with no refit.
    """

    def __init__(
        self,
        *,
        s2: np.ndarray,
        uty: np.ndarray,
        outside_norm2: float,
        basis: np.ndarray,
        primal: bool,
        X: np.ndarray,
        y: np.ndarray,
        x_offset: np.ndarray,
        y_offset: float,
        fit_intercept: bool,
    ):
        self.s2 = s2
        self.uty = uty
        self.outside_norm2 = outside_norm2
        self.basis = basis
        self.primal = primal
        self.X = X
        self.y = y
        self.x_offset = x_offset
        self.y_offset = y_offset
        self.fit_intercept = fit_intercept
        self._u: np.ndarray | None = None

    @property
    def n_samples(self) -> int:
        """Number of rows T."""
        return self.X.shape[0]

    @property
    def n_features(self) -> int:
        """Number of features N."""
        return self.X.shape[1]

    @classmethod
    def from_data(cls, X: Any, y: Any, *, fit_intercept: bool = False) -> RidgeSpectrum:
        """Centre (if ``fit_intercept``) and eigendecompose the smaller Gram matrix of X (T, N)."""
        X, y = check_xy(X, y)
        if fit_intercept:
            x_offset = X.mean(axis=0)
            y_offset = float(y.mean())
            X = X - x_offset
            y = y - y_offset
        else:
            x_offset = np.zeros(X.shape[1])
            y_offset = 0.0
        T, N = X.shape
        primal = T >= N
        gram = X.T @ X if primal else X @ X.T
        s2, vecs = np.linalg.eigh(gram)
        keep = s2 > s2.max(initial=0.0) * max(T, N) * np.finfo(float).eps
        # ||y - P y||^2 for P the projection on range(X), computed directly: subtracting
        # sum (u_i^T y)^2 from ||y||^2 would lose it to cancellation when it is small.
        if primal:
            s2, vecs = s2[keep], vecs[:, keep]
            # u_i = X v_i / s_i, so u_i^T y = v_i^T X^T y / s_i.
            uty = (vecs.T @ (X.T @ y)) / np.sqrt(s2)
            outside = y - X @ (vecs @ (uty / np.sqrt(s2)))
            outside_norm2 = float(outside @ outside)
        else:
            outside_norm2 = float(np.sum((vecs[:, ~keep].T @ y) ** 2))
            s2, vecs = s2[keep], vecs[:, keep]
            uty = vecs.T @ y
        return cls(
            s2=s2,
            uty=uty,
            outside_norm2=outside_norm2,
            basis=vecs,
            primal=primal,
            X=X,
            y=y,
            x_offset=x_offset,
            y_offset=y_offset,
            fit_intercept=fit_intercept,
        )

    # -- quantities shared by every criterion ------------------------------------------------------
    def _shrink(self, alphas: np.ndarray) -> np.ndarray:
        """Alpha / (s^2 + alpha), shape (n_alphas, rank); 0/0 at alpha = 0 is taken as 0."""
        with np.errstate(invalid="ignore"):
            out = alphas[:, None] / (self.s2[None, :] + alphas[:, None])
        return np.nan_to_num(out, nan=0.0)

    def in_sample_error(self, alphas: Any) -> np.ndarray:
        """E_in = ||y - X w(alpha)||^2 / T, shape (n_alphas,)."""
        a = check_alphas(alphas)
        return ((self._shrink(a) ** 2) @ self.uty**2 + self.outside_norm2) / self.n_samples

    def df(self, alphas: Any) -> np.ndarray:
        """D = tr(H) / T, shape (n_alphas,); the intercept counts as one degree of freedom."""
        return self._dof(check_alphas(alphas))[0]

    def _dof(self, a: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(d, 1 - d); 1 - d is summed from the shrinkage factors so that it stays accurate near d = 1."""
        shrink = self._shrink(a)
        T = self.n_samples
        d = (int(self.fit_intercept) + (1.0 - shrink).sum(axis=1)) / T
        free = (T - int(self.fit_intercept) - self.s2.shape[0] + shrink.sum(axis=1)) / T
        return d, free

    def gcv(self, alphas: Any) -> CVPath:
        """Classical GCV = E_in / (1 - d)^2 on the grid."""
        return self._path(check_alphas(alphas), None, "gcv")

    def corrgcv(self, alphas: Any, K: Any = None) -> CVPath:
        """CorrGCV on the grid for the sample correlation ``K`` (see :func:`corrgcv`)."""
        return self._path(check_alphas(alphas), k_eigenvalues(K, self.n_samples), "corrgcv")

    def _path(self, a: np.ndarray, k: np.ndarray | None, method: str) -> CVPath:
        e_in = self.in_sample_error(a)
        d, free = self._dof(a)
        T = self.n_samples
        inside = free > 1e-14
        kt = np.full(a.shape, np.nan)
        df2 = np.full(a.shape, np.nan)
        crit = np.full(a.shape, np.inf)
        # d = 0 (every direction shrunk to nothing, no intercept): the null model, kappa_tilde = inf, and both
        # criteria reduce to E_in / mean(k) (mean(k) = 1 for K = I).
        null = inside & (d <= 0)
        inside &= ~null
        kt[null], df2[null] = np.inf, 0.0
        crit[null] = e_in[null] / (1.0 if k is None else float(k.mean()))
        if k is None:
            kt[inside] = free[inside] / d[inside]
            df2[inside] = d[inside] ** 2
            crit[inside] = e_in[inside] / free[inside] ** 2
        elif inside.any():
            kt[inside] = solve_kappa_tilde(d[inside], k, complement=free[inside])
            ratio = k[None, :] / (k[None, :] + kt[inside, None])
            df2[inside] = (ratio**2).mean(axis=1)
            # d - df2 = mean k kt / (k + kt)^2, written without the cancellation.
            denom = kt[inside] ** 2 * ((ratio / k[None, :]) ** 2 * k[None, :]).mean(axis=1)
            crit[inside] = e_in[inside] / denom
        return CVPath(
            alphas=a,
            criterion=crit,
            in_sample_error=e_in,
            df=d,
            kappa_tilde=kt,
            df2_tilde=df2,
            n_samples=T,
            method=method,
        )

    # -- fits and exact leave-one-out -----------------------------------------------------------
    def coef(self, alpha: float) -> tuple[np.ndarray, float]:
        """Ridge coefficients (N,) and intercept at one penalty."""
        a = float(check_alphas(alpha)[0])
        with np.errstate(divide="ignore"):
            inv = np.where(self.s2 + a > 0, 1.0 / (self.s2 + a), 0.0)
        if self.primal:
            w = self.basis @ (inv * np.sqrt(self.s2) * self.uty)
        else:
            w = self.X.T @ (self.basis @ (inv * self.uty))
        return w, float(self.y_offset - self.x_offset @ w)

    def _left_vectors(self) -> np.ndarray:
        if self._u is None:
            self._u = self.X @ self.basis / np.sqrt(self.s2) if self.primal else self.basis
        return self._u

    def loo(self, alphas: Any) -> np.ndarray:
        """Exact mean squared leave-one-out error at each penalty, shape (n_alphas,): the criterion scikit-learn's ``RidgeCV(cv=None)`` minimises (mean of its ``cv_results_``)."""
        a = check_alphas(alphas)
        u = self._left_vectors()
        hat_eigs = 1.0 - self._shrink(a)  # (n_alphas, rank)
        lev = hat_eigs @ (u**2).T + (1.0 / self.n_samples if self.fit_intercept else 0.0)
        fitted = (hat_eigs * self.uty[None, :]) @ u.T
        resid = self.y[None, :] - fitted
        with np.errstate(divide="ignore", invalid="ignore"):
            errs = (resid / (1.0 - lev)) ** 2
        return errs.mean(axis=1)


def solve_kappa_tilde(df: Any, k: np.ndarray, *, complement: Any = None, max_iter: int = 200) -> np.ndarray:
    """Solve mean_t k_t / (k_t + kappa) = df for kappa > 0, vectorised over ``df`` in (0, 1).

    The left side decreases in kappa, and kappa lies in [k_min (1-df)/df, k_max (1-df)/df]; a Newton
    iteration on log kappa, safeguarded by bisection inside that bracket, converges to machine
    precision. ``complement`` optionally gives 1 - df computed without cancellation (df near 1).
    """
    d = np.atleast_1d(np.asarray(df, dtype=float))
    free = 1.0 - d if complement is None else np.atleast_1d(np.asarray(complement, dtype=float))
    k = np.asarray(k, dtype=float)
    if np.any((d <= 0) | (free <= 0)):
        raise ValueError("degrees of freedom must lie in (0, 1) to solve for kappa_tilde")
    base = free / d
    upper = d < 0.5
    lo = np.log(k.min() * base)
    hi = np.log(k.max() * base)
    u = np.clip(np.log(base), lo, hi)
    for _ in range(max_iter):
        kt = np.exp(u)
        ratio = k[None, :] / (k[None, :] + kt[:, None])
        # f = mean(ratio) - d, evaluated on whichever side of 1/2 avoids cancellation.
        f = np.where(upper, ratio.mean(axis=1) - d, free - (kt[:, None] / (k[None, :] + kt[:, None])).mean(axis=1))
        slope = -(ratio * (1.0 - ratio)).mean(axis=1)  # d f / d log kappa
        lo = np.where(f > 0, u, lo)
        hi = np.where(f < 0, u, hi)
        with np.errstate(divide="ignore", invalid="ignore"):
            step = np.where(slope < 0, f / slope, 0.0)
        new = u - step
        bad = ~((new >= lo) & (new <= hi)) | (slope >= 0)
        new = np.where(bad, 0.5 * (lo + hi), new)
        done = np.abs(new - u) <= 4 * np.finfo(float).eps * np.maximum(1.0, np.abs(u))
        u = new
        if np.all(done | (hi - lo <= 4 * np.finfo(float).eps * np.maximum(1.0, np.abs(u)))):
            break
    return np.exp(u)


def gcv(X: Any, y: Any, alphas: Any, *, fit_intercept: bool = False) -> CVPath:
    """Classical GCV of ridge regression over a penalty grid (one eigendecomposition).

    Args:
        X: (T, N) design. y: (T,) targets.
        alphas: penalty or penalties (scikit-learn convention; lambda = alpha / T), non-negative.
        fit_intercept: centre X and y first and count the intercept as one degree of freedom.
    """
    return RidgeSpectrum.from_data(X, y, fit_intercept=fit_intercept).gcv(alphas)


def corrgcv(X: Any, y: Any, alphas: Any, *, K: Any = None, fit_intercept: bool = False) -> CVPath:
    """CorrGCV: the out-of-sample squared error of ridge regression estimated from correlated training samples, over a penalty grid (one eigendecomposition, no refit).

    Args:
        X: (T, N) design whose rows are correlated across samples by K.
        y: (T,) targets.
        alphas: penalty or penalties (scikit-learn convention; lambda = alpha / T), non-negative.
        K: the sample-sample correlation: None (independent, gives GCV), a
            :class:`~corrgcv.Correlation` such as ``ExponentialCorrelation(xi=100)``, a (T, T)
            correlation matrix, its (T,) eigenvalues, or a callable ``f(T)`` returning one of these.
        fit_intercept: centre X and y first and count the intercept as one degree of freedom.
    """
    return RidgeSpectrum.from_data(X, y, fit_intercept=fit_intercept).corrgcv(alphas, K)


def loo(X: Any, y: Any, alphas: Any, *, fit_intercept: bool = False) -> np.ndarray:
    """Exact mean squared leave-one-out error of ridge over a penalty grid, shape (n_alphas,)."""
    return RidgeSpectrum.from_data(X, y, fit_intercept=fit_intercept).loo(alphas)
