"""RidgeCorrGCV: a scikit-learn ridge regressor whose penalty is chosen by CorrGCV."""

from __future__ import annotations

import logging
from typing import Any

import numpy as np
from sklearn.base import BaseEstimator, RegressorMixin
from sklearn.utils.validation import check_is_fitted, validate_data

from corrgcv.correlation import FAMILIES, Correlation, correlation_family, k_eigenvalues
from corrgcv.estimate import (
    estimate_correlation,
    estimate_correlation_from_features,
    estimate_noise_correlation,
)
from corrgcv.gcv import CVPath, RidgeSpectrum, check_alphas

__all__ = ["RidgeCorrGCV"]

log = logging.getLogger(__name__)

_INDEPENDENT = ("independent", None)
ESTIMATES = ("both", "features", "residuals")
MIN_NOISE_DOF = 10


class RidgeCorrGCV(RegressorMixin, BaseEstimator):
    """Ridge regression with the penalty chosen by CorrGCV, for rows that are correlated in time.

    A drop-in for ``sklearn.linear_model.RidgeCV`` (whose efficient LOO / GCV assumes independent rows)
    on time series: the criterion corrects the in-sample error for the sample-sample correlation K.
    Rows must be passed in time order.

    Parameters
    ----------
    alphas : array-like of float, default (0.1, 1.0, 10.0)
        Penalties to try, non-negative (scikit-learn convention: ``||y - Xw||^2 + alpha ||w||^2``; the
        paper's lambda is ``alpha / T``).
    correlation : str, Correlation, ndarray, callable or None, default "exponential"
        The sample correlation K: a family name ("exponential", "nearest-neighbour", "power-law"), a
        :class:`~corrgcv.Correlation`, a (T, T) correlation matrix or its (T,) eigenvalues for the
        training length T, a callable ``f(T)`` returning one of those, or "independent" / None (K = I,
        plain GCV).
    correlation_param : float, optional
        The family's parameter (xi for "exponential", rho for "nearest-neighbour", the exponent for
        "power-law") when ``correlation`` is a name. None estimates it as ``estimate`` says.
    estimate : {"both", "features", "residuals"}, default "both"
        How the family's parameter is estimated when ``correlation_param`` is None.

        - "both": the weaker (smaller absolute lag-1 correlation) of the "features" estimate and a
          noise estimate from the least-squares residuals (:func:`corrgcv.estimate_noise_correlation`;
          needs at least ``MIN_NOISE_DOF`` = 10 residual degrees of freedom, T - rank(X) - intercept,
          otherwise the features estimate is used alone). When the rows of X are independent, GCV is
          right in expectation whatever the noise's correlation; when the noise is white, the
          features' correlation over-penalises; when both share K, either estimate gives K.
        - "features": from the rows of X alone, matching the mean lag-1 autocorrelation of X's
          standardised columns to its expectation under the family
          (:func:`corrgcv.estimate_correlation_from_features`). Best when X and the noise share K (the
          paper's model); over-penalises when only the rows of X are correlated.
        - "residuals": the lag-1 autocorrelation of the ridge training residuals
          (:func:`corrgcv.estimate_correlation`), alternated with the penalty choice for up to
          ``n_rounds`` rounds from the GCV penalty. Ridge residuals are whiter than the noise, so under
          shared K it leans towards K = I.
    fit_intercept : bool, default True
        Centre X and y and fit an unpenalised intercept (counted as one degree of freedom).
    n_rounds : int, default 3
        Maximum rounds of residual estimation and penalty choice (``estimate="residuals"`` only).

    Attributes
    ----------
    alpha_ : float
        The chosen penalty.
    coef_ : ndarray of shape (n_features,)
        Ridge coefficients at ``alpha_``.
    intercept_ : float
        Intercept at ``alpha_`` (0 without ``fit_intercept``).
    best_score_ : float
        CorrGCV at ``alpha_``: an estimated out-of-sample mean squared error (lower is better; not
        RidgeCV's negative score).
    cv_path_ : CVPath
        CorrGCV over ``alphas``.
    gcv_path_ : CVPath
        Classical GCV over the same grid, for comparison.
    correlation_ : Correlation or None
        The correlation used (None when K was given as an array or a callable, or is the identity).
    feature_correlation_, noise_correlation_ : Correlation or None
        The two estimates behind ``estimate="both"`` (None where not computed).
    k_eigenvalues_ : ndarray of shape (T,)
        Eigenvalues of the K used.
    n_features_in_ : int
        Number of features seen in fit.

    See Also
    --------
    corrgcv.corrgcv : the criterion over a penalty grid, without an estimator.
    sklearn.linear_model.RidgeCV : the same choice under independent rows (exact LOO).

    Examples
    --------
    >>> import numpy as np
    >>> from corrgcv import ExponentialCorrelation, RidgeCorrGCV, correlated_factor, power_law_problem
    >>> problem = power_law_problem(20, noise_std=0.3)
    >>> K = ExponentialCorrelation(xi=30.0)
    >>> X, y = problem.sample(200, 0, K_factor=correlated_factor(K, 200))
    >>> alphas = np.logspace(-2, 3, 11)
    >>> model = RidgeCorrGCV(alphas=alphas, correlation=K).fit(X, y)
    >>> round(float(model.alpha_), 3)  # RidgeCV (LOO) picks 0.032 here
    0.316
    >>> round(float(model.best_score_ / model.gcv_path_.criterion[model.cv_path_.best_index]), 1)  # CorrGCV / GCV
    7.3
    """

    def __init__(
        self,
        *,
        alphas: Any = (0.1, 1.0, 10.0),
        correlation: Any = "exponential",
        correlation_param: float | None = None,
        estimate: str = "both",
        fit_intercept: bool = True,
        n_rounds: int = 3,
    ):
        self.alphas = alphas
        self.correlation = correlation
        self.correlation_param = correlation_param
        self.estimate = estimate
        self.fit_intercept = fit_intercept
        self.n_rounds = n_rounds

    def fit(self, X: Any, y: Any) -> RidgeCorrGCV:
        """Choose the penalty by CorrGCV and fit ridge there.

        Parameters
        ----------
        X : array-like of shape (T, N)
            Training rows, in time order.
        y : array-like of shape (T,)
            Targets.

        Returns
        -------
        RidgeCorrGCV
            The fitted estimator.
        """
        X, y = validate_data(self, X, y, y_numeric=True, dtype=np.float64)
        T = X.shape[0]
        if T < 3:
            raise ValueError(f"RidgeCorrGCV needs at least 3 samples; got n_samples={T}")
        if isinstance(self.n_rounds, bool) or not isinstance(self.n_rounds, (int, np.integer)) or self.n_rounds < 1:
            raise ValueError(f"n_rounds must be an int >= 1, got {self.n_rounds!r}")
        if not isinstance(self.estimate, str) or self.estimate not in ESTIMATES:
            raise ValueError(f"estimate must be one of {ESTIMATES}, got {self.estimate!r}")
        alphas = check_alphas(self.alphas)
        self.feature_correlation_: Correlation | None = None
        self.noise_correlation_: Correlation | None = None
        spectrum = RidgeSpectrum.from_data(X, y, fit_intercept=bool(self.fit_intercept))
        self.gcv_path_ = spectrum.gcv(alphas)
        correlation, eigs, path = self._select(spectrum, alphas, T)
        self.correlation_ = correlation
        self.k_eigenvalues_ = eigs
        self.cv_path_ = path
        self.alpha_ = path.best_alpha
        self.best_score_ = float(path.criterion[path.best_index])
        self.coef_, self.intercept_ = spectrum.coef(self.alpha_)
        return self

    def _select(
        self, spectrum: RidgeSpectrum, alphas: np.ndarray, T: int
    ) -> tuple[Correlation | None, np.ndarray, CVPath]:
        spec = self.correlation
        if isinstance(spec, str) and spec not in FAMILIES and spec != "independent":
            raise ValueError(
                f"unknown correlation {spec!r}; accepted: {sorted(FAMILIES)}, 'independent', None, "
                f"a Correlation, a (T, T) matrix, (T,) eigenvalues or a callable"
            )
        if isinstance(spec, str) and spec in FAMILIES:
            cls = correlation_family(spec)
            if self.correlation_param is not None:
                family: Any = cls  # a concrete family: one positional parameter (xi, rho, ...)
                corr = family(float(self.correlation_param))
                eigs = k_eigenvalues(corr, T)
                return corr, eigs, spectrum.corrgcv(alphas, eigs)
            if self.estimate in ("features", "both"):
                corr = self._estimate_features_noise(spectrum, cls, T)
                eigs = k_eigenvalues(corr, T)
                return corr, eigs, spectrum.corrgcv(alphas, eigs)
            return self._estimate(spectrum, alphas, cls, T)
        if self.correlation_param is not None:
            raise ValueError(
                "correlation_param applies only when correlation is a family name; "
                f"got correlation={type(spec).__name__}"
            )
        if spec is None or (isinstance(spec, str) and spec in _INDEPENDENT):
            eigs = np.ones(T)
            return None, eigs, spectrum.corrgcv(alphas, eigs)
        eigs = k_eigenvalues(spec, T)
        given = spec if isinstance(spec, Correlation) else None
        return given, eigs, spectrum.corrgcv(alphas, eigs)

    def _estimate_features_noise(self, spectrum: RidgeSpectrum, cls: type[Correlation], T: int) -> Correlation:
        feature = estimate_correlation_from_features(cls, spectrum.X)
        self.feature_correlation_ = feature
        if self.estimate == "features":
            return feature
        U = spectrum._left_vectors()
        if spectrum.fit_intercept:
            U = np.column_stack([U, np.full(T, 1.0 / np.sqrt(T))])
        if T - U.shape[1] < MIN_NOISE_DOF:
            log.debug("only %d residual degrees of freedom: noise correlation not estimated", T - U.shape[1])
            return feature
        resid = spectrum.y - U @ (U.T @ spectrum.y)
        noise = estimate_noise_correlation(cls, U, resid)
        self.noise_correlation_ = noise
        lag1 = np.array([1.0])
        return noise if abs(noise.acf(lag1)[0]) < abs(feature.acf(lag1)[0]) else feature

    def _estimate(
        self, spectrum: RidgeSpectrum, alphas: np.ndarray, cls: type[Correlation], T: int
    ) -> tuple[Correlation, np.ndarray, CVPath]:
        alpha = spectrum.gcv(alphas).best_alpha
        seen: set[float] = set()
        for round_ in range(int(self.n_rounds)):
            w, _ = spectrum.coef(alpha)
            resid = spectrum.y - spectrum.X @ w
            corr = estimate_correlation(cls, resid)
            eigs = k_eigenvalues(corr, T)
            path = spectrum.corrgcv(alphas, eigs)
            log.debug("round %d: alpha %.4g -> %s, CorrGCV alpha %.4g", round_, alpha, corr, path.best_alpha)
            seen.add(alpha)
            alpha = path.best_alpha
            if alpha in seen:
                break
        return corr, eigs, path

    def predict(self, X: Any) -> np.ndarray:
        """Predict with the ridge fit at ``alpha_``.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Rows to predict.

        Returns
        -------
        ndarray of shape (n_samples,)
            Predictions.

        Raises
        ------
        sklearn.exceptions.NotFittedError
            Before :meth:`fit`.
        """
        check_is_fitted(self, "coef_")
        X = validate_data(self, X, reset=False, dtype=np.float64)
        return X @ self.coef_ + self.intercept_
