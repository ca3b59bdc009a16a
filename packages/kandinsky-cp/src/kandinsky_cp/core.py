"""KandinskyCP: conformal prediction with coverage over overlapping, fractional, covariate-and-label groups.

Algorithm 1 (conformalize) fits thresholds q(x, y) = beta^T Phi(x, y) by one weighted quantile-regression
LP over the calibration scores; Algorithm 2 (predict) returns {y : S(x, y) <= q(x, y)}.
"""

from __future__ import annotations

import functools
import hashlib
import logging
import math
import warnings
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

import numpy as np
from icml25_shared.random import check_random_state
from icml25_shared.validation import Interval, check_param, check_params

from kandinsky_cp._lp import _CAP, InfeasibleQuantileLP, independent_columns, solve_quantile_lp
from kandinsky_cp.groups import as_group
from kandinsky_cp.scores import ClassificationScore, resolve_score

__all__ = ["KandinskyCP", "GroupQuantileFit", "IntervalUnion", "group_quantile_regression", "phantom_points"]

logger = logging.getLogger(__name__)

# Scores closer than this (relative to their scale) count as tied.
_TIE_TOL = 1e-12
_EIGHT_EPS = 8 * float(np.finfo(float).eps)


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


_LEVEL = Interval(float, 0, 1, closed="neither")
_PARAMETER_CONSTRAINTS: dict[str, list[Any]] = {
    "confidence_level": [_LEVEL, (list, tuple, np.ndarray)],
    "prefit": ["boolean"],
    "finite_sample_correction": ["boolean"],
    "randomize": ["boolean"],
    "random_state": ["random_state"],
    "exact": ["boolean"],
}


def _check_level(confidence_level: float, owner: str = "KandinskyCP") -> float:
    check_param("confidence_level", confidence_level, [_LEVEL], owner=owner)
    return float(confidence_level)


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
                       correction: bool = True, weights: np.ndarray | None = None) -> np.ndarray:
    # With phantom weight c_j, group j gets a finite threshold iff (1 - tau) * sum_i Phi_ij >= tau * c_j.
    weights = phi.sum(axis=0) if weights is None else weights
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
    level = _check_level(confidence_level, owner="group_quantile_regression")
    check_param("finite_sample_correction", finite_sample_correction, ["boolean"], owner="group_quantile_regression")
    return _fit_thresholds(phi, scores, level, finite_sample_correction, names)


def _fit_thresholds(phi: np.ndarray, scores: np.ndarray, level: float, finite_sample_correction: bool,
                    names: list[str] | None, ordered: np.ndarray | None = None) -> GroupQuantileFit:
    """:func:`group_quantile_regression` on validated parameters; ``ordered``: ``np.sort(scores)`` if known."""
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
    if _is_partition(phi):
        fast = _partition_fit(np.argmax(phi, axis=1), phi.shape[1], scores, level, finite_sample_correction, names,
                              ordered)
        if fast is not None:
            return fast
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


def _partition_fit(group: np.ndarray, d: int, scores: np.ndarray, level: float, correction: bool,
                   names: list[str], ordered: np.ndarray | None = None) -> GroupQuantileFit | None:
    """The LP's solution for disjoint 0/1 groups (split, class-conditional, Mondrian CP), without the LP.

    Each group's threshold is its ceil(tau (n_j + 1))-th smallest score (ceil(tau n_j) without the
    correction; ties resolved by row order), the vertex :func:`solve_quantile_lp` starts from and
    confirms for such designs; a group whose order statistic is the phantom gets the same stand-in
    for +infinity (reported as inf by :meth:`GroupQuantileFit.threshold`). With one group and the
    sorted scores at hand (``ordered``), the order statistic is read from them (no selection).
    ``group`` holds each row's column of the d columns (phi is its indicator matrix).
    """
    n = len(group)
    counts = np.array([n]) if d == 1 else np.bincount(group, minlength=d)
    if not np.all(counts > 0):
        return None  # an empty group: the general path reports it
    weights = counts.astype(float)
    phantom = np.ones(d)  # one phantom per group: the group's own indicator row
    _check_group_sizes(np.zeros((0, d)), level, names, phantom, correction, weights)
    # one group: the running sum adds in row order, as bincount does, at a fraction of its cost
    sums = np.cumsum(scores)[-1:] if d == 1 else np.bincount(group, weights=scores, minlength=d)
    center = sums / counts
    abs_resid = scores - (center[0] if d == 1 else center[group])
    np.abs(abs_resid, out=abs_resid)
    largest = float(np.max(abs_resid, initial=0.0))
    scale = float(np.mean(abs_resid))
    if not (np.isfinite(scale) and scale > 0):
        scale = largest
    if not (np.isfinite(scale) and scale > 0):
        scale = 1.0
    # max |r| / s equals max |r / s| exactly (correctly rounded division is monotone), one pass fewer
    cap = _CAP * (1.0 + largest / scale)
    one_sorted = d == 1 and ordered is not None
    # stable argsort of small integers is a radix sort
    small = group.astype(np.uint16) if d <= np.iinfo(np.uint16).max else group
    by_group = np.argsort(small, kind="stable") if not one_sorted else group
    starts = np.concatenate([[0], np.cumsum(counts)[:-1]])
    size = counts + 1 if correction else counts
    k = np.array([max(1, math.ceil(round(level * int(m), 9))) for m in size])
    finite = k <= counts
    beta = np.where(finite, 0.0, scale * cap + center)
    basis = n + (d - 1 - np.arange(d))  # the phantoms follow the rows, in phantom_points' (np.unique) order
    for j in np.flatnonzero(finite):  # the k-th smallest score by selection; tied rows share the value
        if one_sorted and ordered is not None:
            pick = int(np.flatnonzero(scores == ordered[k[j] - 1])[0])
            beta[j] = scores[pick]
            basis[j] = pick
            continue
        rows = by_group[starts[j] : starts[j] + counts[j]]
        pick = rows[np.argpartition(scores[rows], k[j] - 1)[k[j] - 1]]
        beta[j] = scores[pick]
        basis[j] = pick
    if one_sorted and ordered is not None:
        # the rows within 8 eps of the threshold sit in a short run of the sorted scores around it
        b = float(beta[0])
        reach = 4 * _EIGHT_EPS * (max(abs(float(ordered[0])), abs(float(ordered[-1]))) + abs(b))
        near = ordered[np.searchsorted(ordered, b - reach, side="left") : np.searchsorted(ordered, b + reach,
                                                                                           side="right")]
        n_int = int(np.count_nonzero(np.abs(near - b) <= _EIGHT_EPS * (np.abs(near) + abs(b))))
    else:
        fitted = beta[0] if d == 1 else beta[group]
        mag = np.abs(scores) + np.abs(fitted)
        n_int = int(np.count_nonzero(np.abs(scores - fitted) <= _EIGHT_EPS * mag))
    return GroupQuantileFit(beta=beta, phantom=phantom if correction else np.zeros(d), confidence_level=level,
                            group_weights=weights, n_interpolated=n_int, cap=cap if correction else np.inf,
                            center=center, scale=scale, basis=basis, columns=np.arange(d))


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
        return np.asarray(inside.any(axis=1))

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
    -> ``predict_set(X)`` (classification) or ``predict_interval(X)`` (regression; unions of intervals
    for label-dependent groups from ``predict_interval_union(X)``).

    Parameters
    ----------
    estimator : object
        A scikit-learn style model: ``predict`` for regression scores, ``predict_proba`` and ``classes_``
        for classification scores; for ``score="cqr"`` a tuple (lower, upper) or (lower, upper, median)
        of fitted quantile regressors.
    groups : Group, list of Group or callable
        A :class:`kandinsky_cp.groups.Group`, a list of them, or a callable (X, y) -> (n, d) weights.
    score : str, RegressionScore, ClassificationScore or callable, default "absolute"
        Regression: "absolute", "normalized" (|y - y_pred| / sigma(x), needs ``scale_estimator``), "cqr"
        (conformalised quantile regression). Classification: "lac", "aps", "aps_randomized" (the last
        label kept at random, MAPIE's ``include_last_label="randomized"``), "raps" (k_reg=1,
        lambda_reg=0.01; others from :func:`kandinsky_cp.scores.raps_score`), "topk". Or a score object,
        or a callable (proba, label_index) -> scores (classification).
    confidence_level : float or sequence of float, default 0.9
        1 - alpha, in (0, 1). With a sequence of L levels the outputs gain a last axis of length L (as
        in MAPIE).
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
        calibration scores as in split CP. A test row's noise is one uniform shared by its labels (as
        Romano et al. randomise APS), a fixed function of ``random_state`` and its feature values:
        repeated calls and any batching give identical sets, and the order of the labels' scores
        within a row is kept.
    random_state : None, int or numpy Generator, optional
        Source of that noise (one 63-bit key drawn at ``conformalize``; None: fresh entropy).
    exact : bool, default False
        Augmented (Gibbs-style, finite-sample) mode: for every test point and candidate label refit the
        LP with the test point added; one LP per distinct Phi(x, y), each an exact active-set descent
        warm-started at the calibration fit.
    scale_estimator : object or callable, optional
        For ``score="normalized"``: a fitted model whose ``predict(X)`` returns sigma(x) > 0, or a callable
        X -> sigma (crepes' ``sigmas``; MAPIE's prefit ``ResidualNormalisedScore`` residual model). With
        ``prefit=False``, :meth:`fit` fits a clone of it on the training residuals |y - y_pred|.
    conformity_score : optional
        MAPIE's name for ``score`` (an alias; pass one of the two).

    Attributes
    ----------
    beta_ : ndarray of shape (d,) or (d, L), or None
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
    fit_result_ : GroupQuantileFit, list of GroupQuantileFit or None
        The quantile-regression fit, one per level for a sequence (None when ``exact``).
    tie_noise_ : float
        Width of the tie-breaking noise (0 when no calibration scores tie).

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
    >>> y_pred, y_pis = cp.predict_interval(X[1500:])  # y_pis: (n, 2, n_levels), as in MAPIE
    >>> hit = (y_pis[:, 0, 0] <= y[1500:]) & (y[1500:] <= y_pis[:, 1, 0])
    >>> round(float(hit.mean()), 2), round(float(hit[X[1500:, 1] >= 0.5].mean()), 2)
    (0.89, 0.89)
    """

    def __init__(self, estimator: Any = None, *, groups: Any, score: Any = "absolute",
                 confidence_level: float | Sequence[float] = 0.9, prefit: bool = True,
                 finite_sample_correction: bool = True, randomize: bool = True, random_state: int | None = None,
                 exact: bool = False, scale_estimator: Any = None, conformity_score: Any = None) -> None:
        self.estimator = estimator
        self.groups = groups
        self.score = score
        self.confidence_level = confidence_level
        self.prefit = prefit
        self.finite_sample_correction = finite_sample_correction
        self.randomize = randomize
        self.random_state = random_state
        self.exact = exact
        self.scale_estimator = scale_estimator
        self.conformity_score = conformity_score

    # ----- stages ---------------------------------------------------------------------------------
    def fit(self, X: Any, y: Any, **fit_params: Any) -> KandinskyCP:
        """Fit a clone of the estimator on (X, y); only when prefit=False.

        With ``score="normalized"`` and a ``scale_estimator`` that has ``fit``, a clone of it is fitted
        on (X, |y - estimator.predict(X)|) as well (``scale_estimator_``).
        """
        check_params(vars(self), _PARAMETER_CONSTRAINTS, owner="KandinskyCP")
        if self.prefit:
            raise ValueError("prefit=True: the estimator is already fitted; call conformalize directly "
                             "or construct with prefit=False")
        from sklearn.base import clone

        self.estimator_ = clone(self.estimator).fit(X, y, **fit_params)
        score = self._resolve_score()
        if getattr(score, "inputs", None) == "scaled" and hasattr(self.scale_estimator, "fit"):
            resid = np.abs(np.asarray(y, dtype=float).ravel()
                           - np.asarray(self.estimator_.predict(X), dtype=float).ravel())
            self.scale_estimator_ = clone(self.scale_estimator).fit(X, resid)
        return self

    def conformalize(self, X_conformalize: Any, y_conformalize: Any) -> KandinskyCP:
        """Fit the group thresholds on calibration data (one LP per level; none here when exact=True).

        X_conformalize: (n, p) array or DataFrame; y_conformalize: (n,) labels or targets.
        """
        check_params(vars(self), _PARAMETER_CONSTRAINTS, owner="KandinskyCP")
        levels = self._levels()
        low = [v for v in levels if v < 0.5]
        if low:
            warnings.warn(f"confidence_level {low} below 0.5: sets will cover only {low[0]:.0%} of points; if you "
                          f"meant a miscoverage alpha (MAPIE's old alpha={low[0]:g}), pass confidence_level="
                          f"{1 - low[0]:g}", UserWarning, stacklevel=2)
        if self.exact and not self.finite_sample_correction:
            raise ValueError("exact=True is the augmented method and always includes the test point; "
                             "it needs finite_sample_correction=True")
        estimator = self._estimator()
        score = self._resolve_score()
        y = np.asarray(y_conformalize)
        if y.ndim > 1 and not (y.ndim == 2 and y.shape[1] == 1):
            raise ValueError(f"y_conformalize must be 1-D (n_samples,), got shape {y.shape}")
        y = y.ravel()
        n = len(y)
        n_x = _n_rows(X_conformalize)
        if n != n_x:
            raise ValueError(f"X_conformalize has {n_x} rows but y_conformalize has {n}")
        self._key = _random_key(self.random_state)
        self.score_ = score
        if isinstance(score, ClassificationScore):
            if not hasattr(estimator, "predict_proba"):
                raise TypeError(f"score {score.name!r} is for classification but the estimator has no predict_proba")
            self.task_ = "classification"
            self.classes_: np.ndarray | None = np.asarray(estimator.classes_)
            idx = _label_index(self.classes_, y, "calibration labels")
            proba = np.asarray(estimator.predict_proba(X_conformalize), dtype=float)
            if score.randomized:
                scores = score.score(proba, idx, _uniform(self._key, _SCORE_STREAM, np.arange(n, dtype=np.uint64)))
            else:
                scores = score.score(proba, idx)
        else:
            if _is_classifier(estimator):
                raise ValueError(f"score {score.name!r} is a regression score but the estimator is a classifier; "
                                 "use a classification score ('lac', 'aps', 'raps', 'topk') or a regressor")
            self.task_ = "regression"
            self.classes_ = None
            try:
                y_float = y.astype(float)
            except (TypeError, ValueError) as err:
                raise ValueError(f"y_conformalize must be numeric for regression scores; got dtype {y.dtype}") from err
            if not np.isfinite(y_float).all():
                bad = np.flatnonzero(~np.isfinite(y_float))
                raise ValueError(f"y_conformalize has NaN or inf at rows {_rows(bad)}; drop or impute them")
            scores = score.score(self._regression_inputs(X_conformalize), y_float)
        scores = np.asarray(scores, dtype=float)
        if not np.isfinite(scores).all():
            bad = np.flatnonzero(~np.isfinite(scores))
            raise ValueError(f"the estimator's predictions give non-finite calibration scores at rows {_rows(bad)} "
                             f"of X_conformalize (score {score.name!r})")
        self._raw_scores = scores
        ordered: np.ndarray | None = np.sort(scores)  # for the tie check and, without noise, a single group's order statistic
        self.tie_noise_ = _tie_noise_width(scores, ordered) if self.randomize else 0.0
        if self.tie_noise_ > 0:
            ordered = None
            scores = scores + self.tie_noise_ * _uniform(self._key, 0, np.arange(n, dtype=np.uint64))
        groups, index = as_group(self.groups)._fit_partition(X_conformalize, y, classes=self.classes_)
        if self.task_ == "regression" and groups.uses_label and groups.label_edges is None:
            raise ValueError(f"groups {groups.name!r} depend on the label but declare no label bins; in regression "
                             "the dependence on y must be piecewise constant: use by_label_bins(edges) or "
                             "label_edges= in mondrian()/fractional()")
        d = groups.n_groups
        if index is not None and n and index.min() >= 0 and (d == 1 or np.all(np.bincount(index, minlength=d) > 0)):
            self._calibration_index: np.ndarray | None = index  # a partition: Phi is its indicator matrix
            self._calibration_phi: np.ndarray | None = None
        else:
            index = None
            self._calibration_index = None
            self._calibration_phi = groups(X_conformalize, y)
        self.groups_ = groups
        self.group_names_ = groups.names
        self.calibration_scores_ = scores
        self._column_thresholds = None
        if self.exact:
            phi = self.calibration_phi_
            for level in levels:
                _check_group_sizes(phi, level, self.group_names_, phantom_points(phi).sum(axis=0))
            self.fit_results_ = []
            self.fit_result_ = None
            self.beta_ = None
            self._exact_cache: dict[tuple[float, bytes], float] = {}
            # the calibration-only fits: the vertices every augmented LP descends from (warm start)
            self._exact_start = {level: solve_quantile_lp(phi, scores, level) for level in levels}
        else:
            fits = []
            for level in levels:
                fast = None if index is None else _partition_fit(index, d, scores, level,
                                                                 self.finite_sample_correction, self.group_names_,
                                                                 ordered)
                fit = fast or _fit_thresholds(self.calibration_phi_, scores, level, self.finite_sample_correction,
                                              self.group_names_, ordered)
                if self.task_ == "regression" and self.tie_noise_ > 0:
                    fit = _unjitter(fit, self.calibration_phi_, self._raw_scores)
                fits.append(fit)
                logger.debug("conformalize: level=%g n=%d d=%d interpolated=%d", level, n, d,
                             fit.n_interpolated)
            self.fit_results_ = fits
            # a partition's threshold of a row is its column's (the row is that column's indicator)
            eye = np.eye(d)
            self._column_thresholds = [f.threshold(eye) for f in fits] if index is not None else None
            self.fit_result_ = fits[0] if self._scalar_level() else fits
            self.beta_ = fits[0].beta if self._scalar_level() else np.column_stack([f.beta for f in fits])
        return self

    @property
    def calibration_phi_(self) -> np.ndarray:
        """(n, d) group weights of the calibration rows (built on first read for a partition)."""
        if "_calibration_phi" not in self.__dict__:
            raise AttributeError("calibration_phi_ is set by conformalize(X_cal, y_cal)")
        if self._calibration_phi is None and self._calibration_index is not None:
            index = self._calibration_index
            phi = np.zeros((len(index), self.groups_.n_groups))
            phi[np.arange(len(index)), index] = 1.0
            self._calibration_phi = phi
        if self._calibration_phi is None:
            raise AttributeError("calibration_phi_ is set by conformalize(X_cal, y_cal)")
        return self._calibration_phi

    def predict(self, X: Any) -> np.ndarray:
        """Point predictions of the underlying estimator (CQR: the median model, else the interval midpoint)."""
        est = self._estimator()
        if isinstance(est, (list, tuple)):
            if len(est) == 3:
                return np.asarray(est[2].predict(X), dtype=float).ravel()
            return 0.5 * (np.asarray(est[0].predict(X), dtype=float).ravel()
                          + np.asarray(est[1].predict(X), dtype=float).ravel())
        return np.asarray(est.predict(X))

    def threshold(self, X: Any, y: Any = None) -> np.ndarray:
        """Score thresholds q(x, y) = beta^T Phi(x, y) (augmented when exact=True): (n,), or (n, L) for L levels."""
        self._check_conformalized("threshold")
        if self.groups_.uses_label and y is None:
            raise ValueError("the groups depend on the label; pass y to threshold(X, y)")
        zero = np.zeros(_n_rows(X), dtype=bool)
        phi = self.groups_(X, y)
        q = np.column_stack([self._thresholds(phi, zero, i) for i in range(len(self._levels()))])
        self._warn_zero_rows(zero)
        return q[:, 0] if self._scalar_level() else q

    def predict_set(self, X: Any, *, return_pred: bool = False) -> np.ndarray | tuple[np.ndarray, np.ndarray]:
        """Prediction sets for classification: bool array (n, K), column k is ``classes_[k]``.

        With a sequence of L confidence levels the sets are stacked on a last axis: (n, K, L). With
        ``randomize=True`` (and randomised scores) the noise of test row i is one uniform shared by its
        labels, a fixed function of ``random_state`` and the row's feature values (rounded to float32,
        so float32 and float64 X agree): repeated calls, and any split of X into batches, return
        identical sets; with groups that do not read the label, a set never skips a label whose
        score is below an included label's. ``return_pred=True`` returns MAPIE's ``(y_pred, sets)``
        with sets always of shape (n, K, L).
        """
        self._check_conformalized("predict_set")
        if self.task_ != "classification":
            raise ValueError("predict_set is for classification scores; use predict_interval for regression")
        classes = self._class_labels()
        proba = self._test_proba(X)
        n, k = proba.shape
        n_levels = len(self._levels())
        out = np.zeros((n, k, n_levels), dtype=bool)
        zero = np.zeros(n, dtype=bool)
        rows = _row_hash(X) if (self.tie_noise_ > 0 or self.score_.randomized) else np.zeros(0, np.uint64)
        u = _uniform(self._key, _SCORE_STREAM, rows) if self.score_.randomized else None
        # one tie-breaking uniform per row, shared by its labels (as Romano et al. randomise): scores
        # that are ordered within a row stay ordered, so the noise only decides where the row's set ends
        tie = self.tie_noise_ * _uniform(self._key, 1, rows) if self.tie_noise_ > 0 else None
        for j, label in enumerate(classes):
            scores = self._class_scores(proba, j, u)
            if tie is not None:
                scores = scores + tie
            labels = np.full(n, label, dtype=classes.dtype) if self.groups_.uses_label else None
            phi = self.groups_(X, labels)
            for i in range(n_levels):
                out[:, j, i] = scores <= self._thresholds(phi, zero, i)
        self._warn_zero_rows(zero)
        if return_pred:
            return np.asarray(self._estimator().predict(X)), out
        return out[:, :, 0] if self._scalar_level() else out

    def predict_interval(self, X: Any) -> tuple[np.ndarray, np.ndarray]:
        """Prediction intervals for regression, as MAPIE 1.x returns them.

        Returns
        -------
        y_pred : ndarray of shape (n,)
            The estimator's point predictions (:meth:`predict`).
        y_pis : ndarray of shape (n, 2, L)
            Lower and upper bounds, one slice per confidence level (L = 1 for a single level).

        Raises
        ------
        ValueError
            When the groups depend on the label: the sets are then unions of intervals, returned by
            :meth:`predict_interval_union`.
        """
        self._check_conformalized("predict_interval")
        if self.task_ != "regression":
            raise ValueError("predict_interval is for regression scores; use predict_set for classification")
        if self.groups_.uses_label:
            raise ValueError("the groups depend on the label, so each prediction set is a union of intervals: "
                             "call predict_interval_union(X)")
        pred = self._regression_inputs(X)
        n = pred.shape[0]
        zero = np.zeros(n, dtype=bool)
        columns = self._column_thresholds
        index = self.groups_._partition_index(X) if columns is not None else None
        if columns is None or index is None:
            phi = self.groups_(X, None)
            qs = [self._thresholds(phi, zero, i) for i in range(len(self._levels()))]
        else:
            unseen = index < 0
            if unseen.any():
                zero |= unseen
                qs = [np.where(unseen, np.inf, q[index]) for q in columns]
            else:
                qs = [np.full(n, q[0]) if len(q) == 1 else q[index] for q in columns]
        out = np.empty((n, 2, len(qs)))
        for i, q in enumerate(qs):
            out[:, 0, i], out[:, 1, i] = self.score_.interval(pred, q)
        self._warn_zero_rows(zero)
        kind = self.score_.inputs
        y_pred = pred if kind == "point" else pred[:, 0] if kind == "scaled" else self.predict(X)
        return np.asarray(y_pred), out

    def predict_interval_union(self, X: Any) -> list[IntervalUnion]:
        """Prediction sets for regression as unions of intervals, one :class:`IntervalUnion` per level.

        With groups that depend on y through label bins a set can be a union of disjoint intervals
        (``.contains(y)``, ``.hull()``, ``.to_list()``); with other groups each union is the single
        interval of :meth:`predict_interval`.

        Returns
        -------
        list of IntervalUnion
            One per confidence level (length 1 for a single level).
        """
        self._check_conformalized("predict_interval_union")
        if self.task_ != "regression":
            raise ValueError("predict_interval_union is for regression scores; use predict_set for classification")
        if not self.groups_.uses_label:
            _, pis = self.predict_interval(X)
            return [_merge_rows(pis[:, :1, i], pis[:, 1:, i]) for i in range(pis.shape[2])]
        pred = self._regression_inputs(X)
        n = pred.shape[0]
        zero = np.zeros(n, dtype=bool)
        edges = self.groups_.label_edges
        if edges is None:  # uses_label without edges is refused at conformalize
            raise ValueError("the groups read the label but declare no label bins")
        lower, upper, rep = _bin_representatives(edges)
        unions = []
        phis = [self.groups_(X, np.full(n, r)) for r in rep]
        for i in range(len(self._levels())):
            los, his = [], []
            for a, b, phi in zip(lower, upper, phis, strict=True):
                lo, hi = self.score_.interval(pred, self._thresholds(phi, zero, i))
                los.append(np.maximum(lo, a))
                his.append(np.minimum(hi, b))
            unions.append(_merge_rows(np.column_stack(los), np.column_stack(his)))
        self._warn_zero_rows(zero)
        return unions

    def p_values(self, X: Any, y: Any = None, *, smoothing: bool = False) -> np.ndarray:
        """Conformal p-values for partition groups (intercept, Mondrian, ``by_class``, one ``by_feature``).

        p(x, y) = (#{i in the bin of (x, y) : S_i > s} + theta (#{i in the bin : S_i = s} + 1)) / (n_bin + 1)
        with s = S(x, y) and theta = 1 (``smoothing=False``) or uniform on [0, 1] (a fixed function of
        ``random_state``, the row and the label). Scores are taken before the tie-breaking noise (randomised
        scores keep their u); a row outside every bin gets p = 1. y: (n,) candidate labels or targets; for
        classification y=None gives every class, shape (n, K).
        """
        self._check_conformalized("p_values")
        phi_cal = self.calibration_phi_
        if not _is_partition(phi_cal):
            raise ValueError("p_values needs groups that partition the data (every calibration row in exactly "
                             "one group with weight 1): intercept(), mondrian(), by_class(), a single by_feature(); "
                             f"got {self.group_names_[:5]}")
        if self.task_ == "classification":
            classes = self._class_labels()
            proba = self._test_proba(X)
            n = proba.shape[0]
            rows = _row_hash(X)
            u = _uniform(self._key, _SCORE_STREAM, rows) if self.score_.randomized else None
            if y is None:
                cols = []
                for j, label in enumerate(classes):
                    labels = np.full(n, label, dtype=classes.dtype) if self.groups_.uses_label else None
                    cols.append(self._p_value(self._class_scores(proba, j, u), self.groups_(X, labels),
                                              rows, j, smoothing))
                return np.column_stack(cols)
            y = np.asarray(y).ravel()
            if len(y) != n:
                raise ValueError(f"X has {n} rows but y has {len(y)}")
            idx = _label_index(classes, y, "p_values labels y")
            s = (self.score_.score(proba, idx, u) if self.score_.randomized else self.score_.score(proba, idx))
            return self._p_value(np.asarray(s, dtype=float), self.groups_(X, y if self.groups_.uses_label else None),
                                 rows, 0, smoothing)
        if y is None:
            raise ValueError("p_values for regression needs the candidate targets y, shape (n,)")
        y = np.asarray(y, dtype=float).ravel()
        bad = np.flatnonzero(~np.isfinite(y))
        if bad.size:
            raise ValueError(f"p_values: candidate targets y have NaN or inf at rows {_rows(bad)}")
        s = self.score_.score(self._regression_inputs(X), y)
        return self._p_value(np.asarray(s, dtype=float), self.groups_(X, y if self.groups_.uses_label else None),
                             _row_hash(X), 0, smoothing)

    # ----- internals ------------------------------------------------------------------------------
    def _class_labels(self) -> np.ndarray:
        if self.classes_ is None:
            raise ValueError("no classes: the estimator was conformalized with a regression score")
        return self.classes_

    def _levels(self) -> tuple[float, ...]:
        level: Any = self.confidence_level
        if isinstance(level, (list, tuple, np.ndarray)):
            if len(level) == 0:
                raise ValueError("confidence_level is an empty sequence; pass a float or a non-empty sequence")
            return tuple(_check_level(v.item() if isinstance(v, np.generic) else v) for v in level)
        return (_check_level(level),)

    def _scalar_level(self) -> bool:
        return not isinstance(self.confidence_level, (list, tuple, np.ndarray))

    def _resolve_score(self) -> Any:
        if self.conformity_score is not None:
            if self.score != "absolute" and self.score != self.conformity_score:
                raise ValueError(f"pass either score= or its alias conformity_score=, not both (got score="
                                 f"{self.score!r} and conformity_score={self.conformity_score!r})")
            return resolve_score(self.conformity_score)
        return resolve_score(self.score)

    def _regression_inputs(self, X: Any) -> np.ndarray:
        est = self._estimator()
        kind = self.score_.inputs
        if kind == "quantiles":
            if not (isinstance(est, (list, tuple)) and len(est) in (2, 3)):
                raise TypeError("score 'cqr' needs estimator=(lower, upper) or (lower, upper, median) fitted "
                                f"quantile regressors; got {type(est).__name__}")
            lo = np.asarray(est[0].predict(X), dtype=float).ravel()
            hi = np.asarray(est[1].predict(X), dtype=float).ravel()
            return np.column_stack([lo, hi])
        if isinstance(est, (list, tuple)):
            raise TypeError(f"a tuple of estimators is only accepted with score='cqr'; got score {self.score_.name!r}")
        pred = np.asarray(est.predict(X), dtype=float).ravel()
        if kind == "point":
            return pred
        if kind == "scaled":
            if self.scale_estimator is None:
                raise ValueError("score 'normalized' needs scale_estimator=: a fitted model whose predict(X) "
                                 "returns a positive scale sigma(x) (e.g. of |y - y_pred|), or a callable X -> sigma")
            se = getattr(self, "scale_estimator_", self.scale_estimator)
            sigma = np.asarray(se(X) if callable(se) and not hasattr(se, "predict") else se.predict(X),
                               dtype=float).ravel()
            bad = np.flatnonzero(~(np.isfinite(sigma) & (sigma > 0)))
            if bad.size:
                raise ValueError(f"scale_estimator returned non-positive or non-finite scales at rows {_rows(bad)}; "
                                 "the normalized score divides by them (clip them, e.g. np.maximum(sigma, 1e-6))")
            return np.column_stack([pred, sigma])
        raise ValueError(f"unknown RegressionScore inputs {kind!r}; use 'point', 'scaled' or 'quantiles'")

    def _test_proba(self, X: Any) -> np.ndarray:
        """predict_proba(X), checked: a NaN probability would silently drop its label from every set."""
        proba = np.asarray(self._estimator().predict_proba(X), dtype=float)
        bad = np.flatnonzero(~np.all(np.isfinite(proba), axis=1))
        if bad.size:
            raise ValueError(f"the estimator's predict_proba gives NaN or inf at rows {_rows(bad)} of X "
                             "(e.g. NaN features); impute or drop these rows")
        return proba

    def _class_scores(self, proba: np.ndarray, j: int, u: np.ndarray | None) -> np.ndarray:
        idx = np.full(proba.shape[0], j)
        s = self.score_.score(proba, idx, u) if self.score_.randomized else self.score_.score(proba, idx)
        return np.asarray(s, dtype=float)

    def _p_value(self, s: np.ndarray, phi: np.ndarray, rows: np.ndarray, stream: int, smoothing: bool) -> np.ndarray:
        phi_cal, cal = self.calibration_phi_, self._raw_scores
        bins_cal = np.argmax(phi_cal, axis=1)
        has = np.any(phi > 0, axis=1)
        bins = np.argmax(phi, axis=1)
        p = np.ones(len(s))
        theta = _uniform(self._key, _P_STREAM + stream, rows) if smoothing else np.ones(len(s))
        for b in np.unique(bins[has]):
            ref = np.sort(cal[bins_cal == b])
            rows_b = np.flatnonzero(has & (bins == b))
            greater = len(ref) - np.searchsorted(ref, s[rows_b], side="right")
            equal = np.searchsorted(ref, s[rows_b], side="right") - np.searchsorted(ref, s[rows_b], side="left")
            p[rows_b] = (greater + theta[rows_b] * (equal + 1)) / (len(ref) + 1)
        return p

    def _estimator(self) -> Any:
        if not self.prefit:
            if not hasattr(self, "estimator_"):
                from sklearn.exceptions import NotFittedError

                raise NotFittedError("prefit=False: call fit(X, y) before conformalize")
            return self.estimator_
        if self.estimator is None:
            raise ValueError("estimator is None; pass a fitted estimator (prefit=True) or one to fit")
        if self.__dict__.get("_checked_estimator") is self.estimator:
            return self.estimator  # checked before: a fitted estimator stays fitted
        from sklearn.utils.validation import check_is_fitted

        for est in (self.estimator if isinstance(self.estimator, (list, tuple)) else [self.estimator]):
            try:
                check_is_fitted(est)
            except TypeError:
                pass  # not a scikit-learn estimator; trust the caller
        self._checked_estimator = self.estimator
        return self.estimator

    def _check_conformalized(self, method: str) -> None:
        if not hasattr(self, "groups_"):
            from sklearn.exceptions import NotFittedError

            raise NotFittedError(f"call conformalize(X_cal, y_cal) before {method}")

    def _thresholds(self, phi: np.ndarray, zero: np.ndarray, level_index: int = 0) -> np.ndarray:
        """Thresholds of the rows of phi; rows without weight in any group get +inf and are marked in zero."""
        empty = ~np.any(phi > 0, axis=1)
        zero |= empty
        if not self.exact:
            q = self.fit_results_[level_index].threshold(phi)
        else:
            level = self._levels()[level_index]
            q = np.array([self._exact_threshold(row, level) for row in phi], dtype=float)
        return np.where(empty, np.inf, q)

    def _warn_zero_rows(self, zero: np.ndarray) -> None:
        count = int(zero.sum())
        if count:
            names = ", ".join(repr(g) for g in self.group_names_[:8]) + (" ..." if len(self.group_names_) > 8 else "")
            warnings.warn(f"{count} of {len(zero)} test rows have zero weight in every group ({names}), e.g. a "
                          f"category unseen at calibration: their thresholds are +inf (full sets, infinite "
                          f"intervals); rows {_rows(np.flatnonzero(zero))}", UserWarning, stacklevel=3)

    def _exact_threshold(self, c: np.ndarray, level: float) -> float:
        """Augmented cutoff: the largest test score S with S <= beta_S^T c, beta_S fitted on the calibration data plus the test point (c, S).

        Equals min{c^T beta} over the optimal betas of the LP with an infinite-score phantom at c (the dual
        pivot of Gibbs, Cherian & Candes); solved by an exact active-set descent warm-started at the
        calibration-only fit.
        """
        key = (level, c.tobytes())
        if key not in self._exact_cache:
            if not np.any(c > 0):
                value = np.inf
            else:
                try:
                    res = solve_quantile_lp(self.calibration_phi_, self.calibration_scores_, level, phantom=c,
                                            tie_direction=c, start=self._exact_start[level])
                    value = float(c @ res.beta)
                except InfeasibleQuantileLP:
                    value = np.inf
            self._exact_cache[key] = value
        return self._exact_cache[key]


@functools.lru_cache(maxsize=64)
def _seed_key(seed: int) -> np.uint64:
    return np.uint64(check_random_state(seed).integers(0, 2**63))


def _random_key(random_state: Any) -> np.uint64:
    """The 63-bit key of the counter-based noise, drawn from ``random_state`` (an int seed's key is cached)."""
    if isinstance(random_state, int | np.integer) and not isinstance(random_state, bool):
        return _seed_key(int(random_state))
    return np.uint64(check_random_state(random_state).integers(0, 2**63))


def _tie_noise_width(scores: np.ndarray, ordered: np.ndarray | None = None) -> float:
    """Width of the uniform tie-breaking noise: half the smallest gap between distinct calibration scores.

    Distinct scores (gaps above 1e-12 of the largest |score|) keep their order; tied ones (e.g. LAC with a
    tree's discrete probabilities) get random ranks. No ties, or every score tied: 0 (no noise at all).
    """
    ordered = np.sort(scores) if ordered is None else ordered
    scale = float(max(abs(ordered[0]), abs(ordered[-1]))) if ordered.size else 0.0  # the largest |score|
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
    if _is_partition(phi) and len(fit.basis) == phi.shape[1]:
        # disjoint groups: the basis rows are one per group, so the solve below is the identity
        beta = fit.beta.copy()
        real = fit.basis < n
        beta[real] = raw[fit.basis[real]]
        fitted = beta[np.argmax(phi, axis=1)]
        n_int = int(np.sum(np.abs(raw - fitted) <= 1e-12 * max(1.0, float(np.max(np.abs(raw))))))
        return replace(fit, beta=beta, n_interpolated=n_int)
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


def _is_classifier(estimator: Any) -> bool:
    if isinstance(estimator, (list, tuple)):
        return False
    try:
        from sklearn.base import is_classifier

        return bool(is_classifier(estimator))
    except (AttributeError, TypeError):  # not a scikit-learn estimator
        return False


def _is_partition(phi: np.ndarray) -> bool:
    """Every row has exactly one nonzero weight, equal to 1."""
    if phi.shape[1] == 1:
        return bool(np.all(phi == 1.0))
    # on 0/1 entries the row sums are exact integers whichever way they are added
    return bool(np.all((phi == 0.0) | (phi == 1.0)) and np.all(phi.sum(axis=1) == 1.0))


_SCORE_STREAM = 1 << 40  # uniforms of randomised scores
_P_STREAM = 1 << 41  # smoothing of p-values
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
    """(n,) uint64 hash of each row's values (numeric X: their bits after rounding to float32; otherwise their repr).

    The rounding to float32 is the canonical cast: the same data as float32 or float64 hashes alike.
    """
    arr = np.asarray(X)
    if arr.ndim == 1:
        arr = arr[:, None]
    arr = arr.reshape(arr.shape[0], -1)
    if arr.dtype.kind in "biuf":
        canonical = arr.astype(np.float32).astype(np.float64)
        words = (np.ascontiguousarray(canonical) + 0.0).view(np.uint64)  # + 0.0: -0.0 -> 0.0
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


def _label_index(classes: np.ndarray, y: np.ndarray, what: str) -> np.ndarray:
    """Column of each label in ``classes``; labels outside ``classes`` (e.g. "1" for class 1) raise."""
    unknown = ~np.isin(y, classes)
    if unknown.any():
        raise ValueError(f"{what} {np.unique(y[unknown]).tolist()} are not among the estimator's classes "
                         f"{classes.tolist()}")
    return np.searchsorted(classes, y) if _sorted(classes) else _index_of(classes, y)


def _index_of(classes: np.ndarray, y: np.ndarray) -> np.ndarray:
    lookup = {c: i for i, c in enumerate(classes.tolist())}
    return np.array([lookup[v] for v in y.tolist()])

