"""KandinskyCP: conformal prediction with coverage over overlapping, fractional, covariate-and-label groups.

Algorithm 1 (conformalize) fits thresholds q(x, y) = beta^T Phi(x, y) by one weighted quantile-regression
LP over the calibration scores; Algorithm 2 (predict) returns {y : S(x, y) <= q(x, y)}.
"""

from __future__ import annotations

import hashlib
import logging
import warnings
from dataclasses import dataclass, replace
from typing import Any

import numpy as np
from icml25_shared.random import check_random_state
from sklearn.base import is_classifier
from sklearn.exceptions import NotFittedError

from kandinsky_cp._lp import _CAP, InfeasibleQuantileLP, independent_columns, solve_quantile_lp
from kandinsky_cp.groups import as_group
from kandinsky_cp.scores import ClassificationScore, resolve_score

__all__ = ["KandinskyCP", "GroupQuantileFit", "IntervalUnion", "group_quantile_regression", "phantom_points"]

logger = logging.getLogger(__name__)

# Scores closer than this (relative to their scale) count as tied.
_TIE_TOL = 1e-12


@dataclass(frozen=True)
class GroupQuantileFit:
    """Result of :func:`group_quantile_regression`.

    beta: (d,) threshold coefficients, q(x, y) = Phi(x, y) @ beta.
    phantom: (d,) summed features of the infinite-score phantom points added by the finite-sample
        correction (zeros when the correction is off).
    confidence_level: 1 - alpha.
    group_weights: (d,) calibration weight sum_i Phi_ij of each group.
    n_interpolated: number of calibration points whose score equals their threshold (>= d at a vertex).
    cap: the finite score standing in for the phantoms' +infinity, in standardised units
        (S - Phi center) / scale (inf when there are no phantoms).
    center, scale: the standardisation of the scores used by the solver.
    basis: indices of the calibration rows (then phantoms) whose scores the thresholds interpolate.
    columns: the linearly independent columns of phi the solver used (beta is 0 on the others).
    """

    beta: np.ndarray
    phantom: np.ndarray
    confidence_level: float
    group_weights: np.ndarray
    n_interpolated: int
    cap: float = np.inf
    center: np.ndarray | None = None
    scale: float = 1.0
    basis: np.ndarray | None = None
    columns: np.ndarray | None = None

    def threshold(self, phi: np.ndarray) -> np.ndarray:
        """Thresholds q = phi @ beta for phi of shape (n, d); +inf where too little data (see ``cap``)."""
        phi = np.asarray(phi, dtype=float)
        q = phi @ self.beta
        if not np.isfinite(self.cap):
            return q
        center = np.zeros_like(self.beta) if self.center is None else self.center
        z = (q - phi @ center) / self.scale
        return np.where(z >= 0.5 * self.cap, np.inf, q)


def _check_level(confidence_level: float) -> float:
    if isinstance(confidence_level, bool) or not isinstance(confidence_level, (int, float, np.floating)):
        raise TypeError(f"confidence_level must be a float in (0, 1), got {confidence_level!r}")
    level = float(confidence_level)
    if not 0.0 < level < 1.0:
        raise ValueError(f"confidence_level must lie strictly between 0 and 1, got {level}")
    return level


def phantom_points(phi: np.ndarray) -> np.ndarray:
    """Features (m, d) of the finite-sample correction's phantom points (scored +infinity).

    One phantom per group: the calibration row with the group's largest weight and, among those, the
    fewest other memberships; identical rows are counted once. For disjoint groups this is one phantom
    per group (the +1 of split / Mondrian CP). Phantoms copy real rows, so redundant designs (intercept +
    every class) behave exactly like their non-redundant equivalents.
    """
    phi = np.asarray(phi, dtype=float)
    row_sum = phi.sum(axis=1)
    chosen = []
    for j in range(phi.shape[1]):
        col = phi[:, j]
        top = np.flatnonzero(col >= col.max() - 1e-12)
        chosen.append(top[np.argmin(row_sum[top])])
    return np.unique(phi[chosen], axis=0)


def _check_group_sizes(phi: np.ndarray, level: float, names: list[str], phantom: np.ndarray,
                       correction: bool = True) -> np.ndarray:
    # With phantom weight c_j, group j gets a finite threshold iff (1 - tau) * sum_i Phi_ij >= tau * c_j.
    weights = phi.sum(axis=0)
    empty = [names[j] for j in np.flatnonzero(weights <= 0)]
    if empty:
        raise ValueError(f"groups {empty} have no calibration weight; drop them or add calibration data")
    need = phantom * level / (1.0 - level)
    small = np.flatnonzero(weights < need - 1e-9)
    if small.size:
        detail = ", ".join(f"{names[j]!r} has {weights[j]:g} (needs >= {need[j]:g})" for j in small)
        effect = ("with the finite-sample correction such groups get infinite thresholds (every label, as in "
                  "split CP)" if correction else
                  "without the finite-sample correction their thresholds stay finite but their coverage is not "
                  "guaranteed")
        msg = (f"too few calibration points for confidence_level={level}: {detail}; the minimum is "
               f"(phantom weight) * (1 - alpha) / alpha; {effect}. Merge small groups, lower the level or "
               f"add data")
        warnings.warn(msg, UserWarning, stacklevel=3)
    return weights


def group_quantile_regression(phi: np.ndarray, scores: np.ndarray, *, confidence_level: float = 0.9,
                              finite_sample_correction: bool = True,
                              names: list[str] | None = None) -> GroupQuantileFit:
    """Kandinsky Algorithm 1 on precomputed group weights and scores (one LP, scipy HiGHS).

    phi: (n, d) nonnegative group weights of the calibration points; scores: (n,) their scores.
    finite_sample_correction: add one infinite-score phantom point per group (see :func:`phantom_points`).
        With disjoint groups this gives the ceil((n_j + 1)(1 - alpha))-th order statistic per group,
        exactly split / Mondrian conformal prediction; off gives ceil(n_j (1 - alpha)).
    names: group names used in error messages.
    """
    level = _check_level(confidence_level)
    phi = np.asarray(phi, dtype=float)
    scores = np.asarray(scores, dtype=float).ravel()
    if phi.ndim != 2 or phi.shape[0] != scores.shape[0]:
        raise ValueError(f"phi must be (n, d) with n = len(scores) = {scores.shape[0]}, got shape {phi.shape}")
    bad = np.flatnonzero(~np.isfinite(scores))
    if bad.size:
        raise ValueError(f"calibration scores must be finite; got NaN or inf at rows {_rows(bad)}")
    if not np.all(np.isfinite(phi)) or np.any(phi < 0):
        raise ValueError("group weights must be finite and nonnegative")
    names = names or [f"group {j}" for j in range(phi.shape[1])]
    rows = phantom_points(phi)
    weights = _check_group_sizes(phi, level, names, rows.sum(axis=0), finite_sample_correction)
    # With the correction, the phantoms' +infinity is a finite stand-in (_CAP standardised units):
    # identical solution whenever the true one is finite, and thresholds near it (directions with too
    # little data) are reported as +inf.
    res = solve_quantile_lp(phi, scores, level, cap_rows=rows if finite_sample_correction else None)
    phantom = rows.sum(axis=0) if finite_sample_correction else np.zeros(phi.shape[1])
    cap = _CAP * (1.0 + float(np.max(np.abs((scores - phi @ res.center) / res.scale), initial=0.0)))
    return GroupQuantileFit(beta=res.beta, phantom=phantom, confidence_level=level, group_weights=weights,
                            n_interpolated=res.n_interpolated, cap=cap if finite_sample_correction else np.inf,
                            center=res.center, scale=res.scale, basis=res.basis,
                            columns=res.columns)


@dataclass(frozen=True)
class IntervalUnion:
    """Per-row unions of disjoint closed intervals (regression with label-dependent groups).

    bounds: (n, m, 2) float array; row i holds n_intervals[i] sorted intervals [lo, hi], the rest NaN.
    n_intervals: (n,) int, 0 for an empty set.
    """

    bounds: np.ndarray
    n_intervals: np.ndarray

    def contains(self, y: np.ndarray) -> np.ndarray:
        """(n,) bool: whether y[i] lies in row i's set."""
        y = np.asarray(y, dtype=float).ravel()
        if y.shape[0] != self.bounds.shape[0]:
            raise ValueError(f"y has {y.shape[0]} values but the union has {self.bounds.shape[0]} rows")
        with np.errstate(invalid="ignore"):
            inside = (self.bounds[:, :, 0] <= y[:, None]) & (y[:, None] <= self.bounds[:, :, 1])
        return inside.any(axis=1)

    def width(self) -> np.ndarray:
        """(n,) total length of each row's set."""
        return np.nansum(self.bounds[:, :, 1] - self.bounds[:, :, 0], axis=1)

    def hull(self) -> np.ndarray:
        """(n, 2) smallest single interval containing each row's set (NaN for empty rows)."""
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            return np.column_stack([np.nanmin(self.bounds[:, :, 0], axis=1), np.nanmax(self.bounds[:, :, 1], axis=1)])

    def to_list(self) -> list[np.ndarray]:
        """Row i as a (n_intervals[i], 2) array."""
        return [self.bounds[i, : self.n_intervals[i]] for i in range(len(self.n_intervals))]


def _merge_rows(lo: np.ndarray, hi: np.ndarray) -> IntervalUnion:
    """lo, hi: (n, B) candidate intervals (empty where lo > hi) -> row-wise merged unions."""
    n, b = lo.shape
    order = np.argsort(lo, axis=1, kind="stable")
    lo, hi = np.take_along_axis(lo, order, 1), np.take_along_axis(hi, order, 1)
    out = np.full((n, b, 2), np.nan)
    counts = np.zeros(n, dtype=int)
    for i in range(n):
        k = -1
        for a, c in zip(lo[i], hi[i], strict=True):
            if a > c:
                continue
            if k >= 0 and a <= out[i, k, 1]:
                out[i, k, 1] = max(out[i, k, 1], c)
            else:
                k += 1
                out[i, k] = (a, c)
        counts[i] = k + 1
    m = max(1, int(counts.max(initial=0)))
    return IntervalUnion(bounds=out[:, :m], n_intervals=counts)


def _bin_representatives(edges: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Label bins (-inf, e0), [e0, e1), ..., [em, inf): (lower, upper, a point inside each)."""
    lower = np.concatenate([[-np.inf], edges])
    upper = np.concatenate([edges, [np.inf]])
    inner = (lower[1:-1] + upper[1:-1]) / 2.0 if len(edges) > 1 else np.zeros(0)
    rep = np.concatenate([[edges[0] - 1.0], inner, [edges[-1] + 1.0]])
    return lower, upper, rep


class KandinskyCP:
    """Kandinsky conformal prediction (Bairaktari, Wu & Wu, ICML 2025).

    Coverage 1 - alpha holds simultaneously for every group weight w(x, y) = Phi_j(x, y): groups may
    overlap, be fractional (weights in [0, 1]) and depend on the label as well as the covariates.
    Stages (as in MAPIE 1.x): ``fit(X, y)`` (only when ``prefit=False``) -> ``conformalize(X_cal, y_cal)``
    -> ``predict_set(X)`` (classification) or ``predict_interval(X)`` (regression).

    Parameters
    ----------
    estimator : object
        A scikit-learn style model: ``predict`` for regression scores, ``predict_proba`` and ``classes_``
        for classification scores.
    groups : Group, list of Group or callable
        A :class:`kandinsky_cp.groups.Group`, a list of them, or a callable (X, y) -> (n, d) weights.
    score : str, RegressionScore, ClassificationScore or callable, default "absolute"
        "absolute" (regression), "lac" or "aps" (classification), a score object, or a callable
        (proba, label_index) -> scores (classification).
    confidence_level : float, default 0.9
        1 - alpha, in (0, 1).
    prefit : bool, default True
        The estimator is already fitted (else call :meth:`fit` first).
    finite_sample_correction : bool, default True
        Add one infinite-score phantom point per group (the +1 of split CP, see
        :func:`kandinsky_cp.core.phantom_points`); with disjoint groups this reproduces split,
        class-conditional and Mondrian CP exactly. The paper's Algorithm 1 is ``False``.
    randomize : bool, default True
        Break ties between equal calibration scores with uniform noise of width half the smallest gap
        between distinct scores (order kept; no noise when there are no ties or when every score is
        tied), on calibration and test scores alike. Regression thresholds are then re-solved on the
        scores before the noise (the noise only picks which tied score they interpolate), so intervals are
        calibration scores as in split CP. A test row's noise is a fixed function of ``random_state``, its
        feature values and the label: repeated calls and any batching give identical sets.
    random_state : None, int or numpy Generator, optional
        Source of that noise (one 63-bit key drawn at ``conformalize``; None: fresh entropy).
    exact : bool, default False
        Augmented (Gibbs-style, finite-sample) mode: for every test point and candidate label refit the
        LP with the test point added; one LP per distinct Phi(x, y).

    Attributes
    ----------
    beta_ : ndarray of shape (d,) or None
        Group coefficients, thresholds q(x, y) = beta_^T Phi(x, y) (None when ``exact``).
    groups_ : Group
        The groups, fitted on the calibration data.
    group_names_ : list of str
        Names of the d groups.
    task_ : {"classification", "regression"}
        Which prediction method applies.
    classes_ : ndarray or None
        The estimator's classes (classification).
    calibration_scores_ : ndarray of shape (n,)
        Calibration scores (after tie-breaking noise).
    fit_result_ : GroupQuantileFit or None
        The quantile-regression fit (None when ``exact``).

    See Also
    --------
    group_quantile_regression : Algorithm 1 on precomputed weights and scores.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn.linear_model import LinearRegression
    >>> from kandinsky_cp import KandinskyCP, groups as G
    >>> rng = np.random.default_rng(0)
    >>> X = rng.uniform(size=(2000, 2))
    >>> y = X[:, 0] + rng.normal(scale=0.1 + X[:, 1], size=2000)  # noisier where x[1] is large
    >>> reg = LinearRegression().fit(X[:500], y[:500])
    >>> groups = G.intercept() + G.by_feature(1, bins=[0.5])
    >>> cp = KandinskyCP(reg, groups=groups, confidence_level=0.9).conformalize(X[500:1500], y[500:1500])
    >>> cp.group_names_
    ['all', 'x[1] < 0.5', 'x[1] >= 0.5']
    >>> intervals = cp.predict_interval(X[1500:])
    >>> hit = (intervals[:, 0] <= y[1500:]) & (y[1500:] <= intervals[:, 1])
    >>> round(float(hit.mean()), 2), round(float(hit[X[1500:, 1] >= 0.5].mean()), 2)
    (0.89, 0.89)
    """

    def __init__(self, estimator: Any = None, *, groups: Any, score: Any = "absolute",
                 confidence_level: float = 0.9, prefit: bool = True, finite_sample_correction: bool = True,
                 randomize: bool = True, random_state: int | None = None, exact: bool = False) -> None:
        self.estimator = estimator
        self.groups = groups
        self.score = score
        self.confidence_level = confidence_level
        self.prefit = prefit
        self.finite_sample_correction = finite_sample_correction
        self.randomize = randomize
        self.random_state = random_state
        self.exact = exact

    # ----- stages ---------------------------------------------------------------------------------
    def fit(self, X: Any, y: Any, **fit_params: Any) -> KandinskyCP:
        """Fit a clone of the estimator on (X, y); only when prefit=False."""
        if self.prefit:
            raise ValueError("prefit=True: the estimator is already fitted; call conformalize directly "
                             "or construct with prefit=False")
        from sklearn.base import clone

        self.estimator_ = clone(self.estimator).fit(X, y, **fit_params)
        return self

    def conformalize(self, X_conformalize: Any, y_conformalize: Any) -> KandinskyCP:
        """Fit the group thresholds on calibration data (one LP; none to solve here when exact=True).

        X_conformalize: (n, p) array or DataFrame; y_conformalize: (n,) labels or targets.
        """
        level = _check_level(self.confidence_level)
        if self.exact and not self.finite_sample_correction:
            raise ValueError("exact=True is the augmented method and always includes the test point; "
                             "it needs finite_sample_correction=True")
        estimator = self._estimator()
        score = resolve_score(self.score)
        y = np.asarray(y_conformalize)
        if y.ndim > 1 and not (y.ndim == 2 and y.shape[1] == 1):
            raise ValueError(f"y_conformalize must be 1-D (n_samples,), got shape {y.shape}")
        y = y.ravel()
        n = len(y)
        n_x = X_conformalize.shape[0] if hasattr(X_conformalize, "shape") else len(X_conformalize)
        if n != n_x:
            raise ValueError(f"X_conformalize has {n_x} rows but y_conformalize has {n}")
        self._key = np.uint64(check_random_state(self.random_state).integers(0, 2**63))
        self.score_ = score
        if isinstance(score, ClassificationScore):
            if not hasattr(estimator, "predict_proba"):
                raise TypeError(f"score {score.name!r} is for classification but the estimator has no predict_proba")
            self.task_ = "classification"
            self.classes_ = np.asarray(estimator.classes_)
            unknown = ~np.isin(y, self.classes_)
            if unknown.any():
                raise ValueError(f"calibration labels {np.unique(y[unknown]).tolist()} are not among the "
                                 f"estimator's classes {self.classes_.tolist()}")
            idx = np.searchsorted(self.classes_, y) if _sorted(self.classes_) else _index_of(self.classes_, y)
            proba = np.asarray(estimator.predict_proba(X_conformalize), dtype=float)
            scores = score.score(proba, idx)
        else:
            if is_classifier(estimator):
                raise ValueError(f"score {score.name!r} is a regression score but the estimator is a classifier; "
                                 "use a classification score ('lac', 'aps', 'raps', 'topk') or a regressor")
            self.task_ = "regression"
            self.classes_ = None
            try:
                y_float = y.astype(float)
            except (TypeError, ValueError) as err:
                raise ValueError(f"y_conformalize must be numeric for regression scores; got dtype {y.dtype}") from err
            bad = np.flatnonzero(~np.isfinite(y_float))
            if bad.size:
                raise ValueError(f"y_conformalize has NaN or inf at rows {_rows(bad)}; drop or impute them")
            scores = score.score(np.asarray(estimator.predict(X_conformalize), dtype=float).ravel(), y_float)
        scores = np.asarray(scores, dtype=float)
        bad = np.flatnonzero(~np.isfinite(scores))
        if bad.size:
            raise ValueError(f"the estimator's predictions give non-finite calibration scores at rows {_rows(bad)} "
                             f"of X_conformalize (score {score.name!r})")
        raw_scores = scores
        self.tie_noise_ = _tie_noise_width(scores) if self.randomize else 0.0
        if self.tie_noise_ > 0:
            scores = scores + self.tie_noise_ * _uniform(self._key, 0, np.arange(n, dtype=np.uint64))
        groups = as_group(self.groups).fit(X_conformalize, y, classes=self.classes_)
        if self.task_ == "regression" and groups.uses_label and groups.label_edges is None:
            raise ValueError(f"groups {groups.name!r} depend on the label but declare no label bins; in regression "
                             "the dependence on y must be piecewise constant: use by_label_bins(edges) or "
                             "label_edges= in mondrian()/fractional()")
        phi = groups(X_conformalize, y)
        self.groups_ = groups
        self.group_names_ = groups.names
        self.calibration_scores_ = scores
        self.calibration_phi_ = phi
        if self.exact:
            _check_group_sizes(phi, level, self.group_names_, phantom_points(phi).sum(axis=0))
            self.fit_result_ = None
            self.beta_ = None
            self._exact_cache: dict[bytes, float] = {}
            # the calibration-only fit: the vertex every augmented LP descends from (warm start)
            self._exact_start = solve_quantile_lp(phi, scores, level)
        else:
            fit = group_quantile_regression(
                phi, scores, confidence_level=level, finite_sample_correction=self.finite_sample_correction,
                names=self.group_names_)
            if self.task_ == "regression" and self.tie_noise_ > 0:
                fit = _unjitter(fit, phi, raw_scores)
            self.fit_result_ = fit
            self.beta_ = fit.beta
            logger.debug("conformalize: n=%d d=%d interpolated=%d", n, phi.shape[1], fit.n_interpolated)
        return self

    def predict(self, X: Any) -> np.ndarray:
        """Point predictions of the underlying estimator."""
        return np.asarray(self._estimator().predict(X))

    def threshold(self, X: Any, y: Any = None) -> np.ndarray:
        """(n,) score thresholds q(x, y) = beta^T Phi(x, y) (augmented thresholds when exact=True)."""
        self._check_conformalized("threshold")
        if self.groups_.uses_label and y is None:
            raise ValueError("the groups depend on the label; pass y to threshold(X, y)")
        zero = np.zeros(_n_rows(X), dtype=bool)
        q = self._thresholds(self.groups_(X, y), zero)
        self._warn_zero_rows(zero)
        return q

    def predict_set(self, X: Any) -> np.ndarray:
        """Prediction sets for classification: bool array (n, K), column k is ``classes_[k]``.

        With ``randomize=True`` the tie-breaking noise of test row i and label k is a fixed function of
        ``random_state``, the row's feature values and k: repeated calls, and any split of X into batches,
        return identical sets.
        """
        self._check_conformalized("predict_set")
        if self.task_ != "classification":
            raise ValueError("predict_set is for classification scores; use predict_interval for regression")
        proba = np.asarray(self._estimator().predict_proba(X), dtype=float)
        n, k = proba.shape
        out = np.zeros((n, k), dtype=bool)
        zero = np.zeros(n, dtype=bool)
        rows = _row_hash(X) if self.tie_noise_ > 0 else None
        for j, label in enumerate(self.classes_):
            scores = self.score_.score(proba, np.full(n, j))
            if rows is not None:
                scores = scores + self.tie_noise_ * _uniform(self._key, j + 1, rows)
            labels = np.full(n, label, dtype=self.classes_.dtype) if self.groups_.uses_label else None
            out[:, j] = scores <= self._thresholds(self.groups_(X, labels), zero)
        self._warn_zero_rows(zero)
        return out

    def predict_interval(self, X: Any) -> np.ndarray | IntervalUnion:
        """Prediction sets for regression.

        Returns an (n, 2) array [lower, upper] when the groups do not read the label (a single interval
        per row), and an :class:`IntervalUnion` (per-row union of intervals, ``.contains(y)``,
        ``.hull()``) when they depend on y through label bins.
        """
        self._check_conformalized("predict_interval")
        if self.task_ != "regression":
            raise ValueError("predict_interval is for regression scores; use predict_set for classification")
        y_pred = np.asarray(self._estimator().predict(X), dtype=float).ravel()
        zero = np.zeros(len(y_pred), dtype=bool)
        if not self.groups_.uses_label:
            lo, hi = self.score_.interval(y_pred, self._thresholds(self.groups_(X, None), zero))
            self._warn_zero_rows(zero)
            return np.column_stack([lo, hi])
        lower, upper, rep = _bin_representatives(self.groups_.label_edges)
        los, his = [], []
        for a, b, r in zip(lower, upper, rep, strict=True):
            t = self._thresholds(self.groups_(X, np.full(len(y_pred), r)), zero)
            lo, hi = self.score_.interval(y_pred, t)
            los.append(np.maximum(lo, a))
            his.append(np.minimum(hi, b))
        self._warn_zero_rows(zero)
        return _merge_rows(np.column_stack(los), np.column_stack(his))

    # ----- internals ------------------------------------------------------------------------------
    def _estimator(self) -> Any:
        if not self.prefit:
            if not hasattr(self, "estimator_"):
                raise NotFittedError("prefit=False: call fit(X, y) before conformalize")
            return self.estimator_
        if self.estimator is None:
            raise ValueError("estimator is None; pass a fitted estimator (prefit=True) or one to fit")
        from sklearn.utils.validation import check_is_fitted

        try:
            check_is_fitted(self.estimator)
        except TypeError:
            pass  # not a scikit-learn estimator; trust the caller
        return self.estimator

    def _check_conformalized(self, method: str) -> None:
        if not hasattr(self, "groups_"):
            raise NotFittedError(f"call conformalize(X_cal, y_cal) before {method}")

    def _thresholds(self, phi: np.ndarray, zero: np.ndarray) -> np.ndarray:
        """Thresholds of the rows of phi; rows without weight in any group get +inf and are marked in zero."""
        empty = ~np.any(phi > 0, axis=1)
        zero |= empty
        if not self.exact:
            q = self.fit_result_.threshold(phi)
        else:
            q = np.array([self._exact_threshold(row) for row in phi], dtype=float)
        return np.where(empty, np.inf, q)

    def _warn_zero_rows(self, zero: np.ndarray) -> None:
        count = int(zero.sum())
        if count:
            names = ", ".join(repr(g) for g in self.group_names_[:8]) + (" ..." if len(self.group_names_) > 8 else "")
            warnings.warn(f"{count} of {len(zero)} test rows have zero weight in every group ({names}), e.g. a "
                          f"category unseen at calibration: their thresholds are +inf (full sets, infinite "
                          f"intervals); rows {_rows(np.flatnonzero(zero))}", UserWarning, stacklevel=3)

    def _exact_threshold(self, c: np.ndarray) -> float:
        """Augmented cutoff: the largest test score S with S <= beta_S^T c, beta_S fitted on the calibration data plus the test point (c, S).

        Equals min{c^T beta} over the optimal betas of the LP with an infinite-score phantom at c (the dual
        pivot of Gibbs, Cherian & Candes); solved by an exact active-set descent warm-started at the
        calibration-only fit.
        """
        key = c.tobytes()
        if key not in self._exact_cache:
            if not np.any(c > 0):
                value = np.inf
            else:
                try:
                    res = solve_quantile_lp(self.calibration_phi_, self.calibration_scores_,
                                            float(self.confidence_level), phantom=c, tie_direction=c,
                                            start=self._exact_start)
                    value = float(c @ res.beta)
                except InfeasibleQuantileLP:
                    value = np.inf
            self._exact_cache[key] = value
        return self._exact_cache[key]


def _tie_noise_width(scores: np.ndarray) -> float:
    """Width of the uniform tie-breaking noise: half the smallest gap between distinct calibration scores.

    Distinct scores (gaps above 1e-12 of the largest |score|) keep their order; tied ones (e.g. LAC with a
    tree's discrete probabilities) get random ranks. No ties, or every score tied: 0 (no noise at all).
    """
    ordered = np.sort(scores)
    scale = float(np.max(np.abs(ordered), initial=0.0))
    gaps = np.diff(ordered)
    tied = gaps <= _TIE_TOL * scale
    if not tied.any():
        return 0.0
    distinct = gaps[~tied]
    return 0.5 * float(distinct.min()) if distinct.size else 0.0


def _unjitter(fit: GroupQuantileFit, phi: np.ndarray, raw: np.ndarray) -> GroupQuantileFit:
    """Re-solve the thresholds on the basis the jittered LP chose, with the scores before the noise.

    Regression: the noise only decides which of several tied calibration scores the thresholds
    interpolate; the thresholds themselves are then calibration scores (split CP: MAPIE's, exactly).
    """
    if fit.basis is None or fit.basis.size == 0:
        return fit
    n = len(raw)
    rows = phantom_points(phi) if np.isfinite(fit.cap) else np.zeros((0, phi.shape[1]))
    center = np.zeros(phi.shape[1]) if fit.center is None else fit.center
    full_phi = np.vstack([phi, rows])
    full_scores = np.concatenate([raw, fit.scale * fit.cap + rows @ center]) if len(rows) else raw
    cols = independent_columns(phi) if fit.columns is None else fit.columns
    basis_phi = full_phi[fit.basis][:, cols]
    if basis_phi.shape[0] != basis_phi.shape[1] or np.linalg.matrix_rank(basis_phi) < len(cols):
        return fit
    beta = np.zeros_like(fit.beta)
    beta[cols] = np.linalg.solve(basis_phi, full_scores[fit.basis])
    n_int = int(np.sum(np.abs(raw - phi @ beta) <= 1e-12 * max(1.0, float(np.max(np.abs(raw))))))
    logger.debug("unjitter: %d of %d calibration scores interpolated", n_int, n)
    return replace(fit, beta=beta, n_interpolated=n_int)


def _rows(idx: np.ndarray) -> str:
    """Row indices for an error message: the first 10 and the count."""
    more = f" ... ({idx.size} rows)" if idx.size > 10 else ""
    return f"{idx[:10].tolist()}{more}"


def _n_rows(X: Any) -> int:
    return int(X.shape[0]) if hasattr(X, "shape") else len(X)


_GOLDEN = np.uint64(0x9E3779B97F4A7C15)
_M1 = np.uint64(0xBF58476D1CE4E5B9)
_M2 = np.uint64(0x94D049BB133111EB)


def _splitmix(z: np.ndarray) -> np.ndarray:
    """SplitMix64 finaliser on a uint64 array (a counter-based generator's output function)."""
    with np.errstate(over="ignore"):
        z = z + _GOLDEN
        z = (z ^ (z >> np.uint64(30))) * _M1
        z = (z ^ (z >> np.uint64(27))) * _M2
        return z ^ (z >> np.uint64(31))


def _row_hash(X: Any) -> np.ndarray:
    """(n,) uint64 hash of each row's values (numeric X: their float64 bits; otherwise their repr)."""
    arr = np.asarray(X)
    if arr.ndim == 1:
        arr = arr[:, None]
    arr = arr.reshape(arr.shape[0], -1)
    if arr.dtype.kind in "biuf":
        words = (np.ascontiguousarray(arr, dtype=float) + 0.0).view(np.uint64)  # + 0.0: -0.0 -> 0.0
        h = np.zeros(arr.shape[0], dtype=np.uint64)
        for col in words.T:
            h = _splitmix(h ^ col)
        return h
    return np.array([int.from_bytes(hashlib.blake2b(repr(tuple(r)).encode(), digest_size=8).digest(), "little")
                     for r in arr.tolist()], dtype=np.uint64)


def _uniform(key: np.uint64, stream: int, counters: np.ndarray) -> np.ndarray:
    """Uniforms in [0, 1), a fixed function of (key, stream, counter) (counter-based, like Philox)."""
    z = _splitmix(_splitmix(np.asarray(counters, dtype=np.uint64) ^ key) ^ np.uint64(stream))
    return (z >> np.uint64(11)).astype(float) * 2.0**-53

def _sorted(arr: np.ndarray) -> bool:
    try:
        return bool(np.all(arr[:-1] < arr[1:]))
    except TypeError:
        return False


def _index_of(classes: np.ndarray, y: np.ndarray) -> np.ndarray:
    lookup = {c: i for i, c in enumerate(classes.tolist())}
    return np.array([lookup[v] for v in y.tolist()])

