"""Nonconformity scores S(x, y): larger means less conforming.

Regression scores take the model's predictions and know how to invert ``{y : S <= t}`` into an interval;
classification scores take the predicted class probabilities and a label index (randomised ones also a
uniform number per row).

Regression ``inputs``: ``"point"`` (a point prediction, shape (n,)), ``"scaled"`` ((n, 2): prediction and
a positive scale sigma(x), from ``KandinskyCP(scale_estimator=...)``) or ``"quantiles"`` ((n, 2): lower and
upper quantile predictions, from ``KandinskyCP((lower, upper[, median]), score="cqr")``).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

__all__ = ["RegressionScore", "ClassificationScore", "absolute", "normalized", "cqr", "lac", "aps", "topk",
           "aps_score", "raps_score", "resolve_score"]


@dataclass(frozen=True)
class RegressionScore:
    """Regression score and its inversion.

    score(y_pred, y (n,)) -> (n,); interval(y_pred, t (n,)) -> (lower (n,), upper (n,)), the set
    {y : score(y_pred, y) <= t} (empty when lower > upper). ``y_pred`` has the shape ``inputs`` names.
    """

    name: str
    score: Callable[[np.ndarray, np.ndarray], np.ndarray]
    interval: Callable[[np.ndarray, np.ndarray], tuple[np.ndarray, np.ndarray]]
    inputs: str = "point"


@dataclass(frozen=True)
class ClassificationScore:
    """score(proba (n, K), label_index (n,)) -> (n,); with ``randomized``, score(proba, label_index, u (n,)).

    A randomised score receives one uniform number per row (shared by the row's labels): fixed per
    calibration point, and a fixed function of ``random_state`` and the row's values at prediction.
    """

    name: str
    score: Callable[..., np.ndarray]
    randomized: bool = False


def _absolute_score(y_pred: np.ndarray, y: np.ndarray) -> np.ndarray:
    return np.abs(np.asarray(y, dtype=float) - np.asarray(y_pred, dtype=float))


def _absolute_interval(y_pred: np.ndarray, t: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    return y_pred - t, y_pred + t


def _normalized_score(pred: np.ndarray, y: np.ndarray) -> np.ndarray:
    return np.abs(np.asarray(y, dtype=float) - pred[:, 0]) / pred[:, 1]


def _normalized_interval(pred: np.ndarray, t: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    half = np.where(np.isinf(t), np.inf, t * pred[:, 1])
    return pred[:, 0] - half, pred[:, 0] + half


def _cqr_score(pred: np.ndarray, y: np.ndarray) -> np.ndarray:
    y = np.asarray(y, dtype=float)
    return np.maximum(pred[:, 0] - y, y - pred[:, 1])


def _cqr_interval(pred: np.ndarray, t: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    return pred[:, 0] - t, pred[:, 1] + t


def _lac_score(proba: np.ndarray, idx: np.ndarray) -> np.ndarray:
    return 1.0 - proba[np.arange(len(idx)), idx]


def _greater_mass(proba: np.ndarray, idx: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(mass of the labels ranked above y, p_y, 1-based rank of y); ties ranked as a stable descending sort."""
    n = len(idx)
    order = np.argsort(-proba, axis=1, kind="stable")
    rank = np.empty_like(order)
    rank[np.arange(n)[:, None], order] = np.arange(proba.shape[1])[None, :]
    r_y = rank[np.arange(n), idx]
    sorted_p = np.take_along_axis(proba, order, axis=1)
    cum = np.cumsum(sorted_p, axis=1)
    p_y = proba[np.arange(n), idx]
    above = cum[np.arange(n), r_y] - p_y
    return above, p_y, r_y + 1


def _aps_score(proba: np.ndarray, idx: np.ndarray) -> np.ndarray:
    # Mass of the labels strictly more likely than y, plus p_y (non-randomised APS).
    p_y = proba[np.arange(len(idx)), idx]
    return np.sum(np.where(proba > p_y[:, None], proba, 0.0), axis=1) + p_y


def aps_score(randomize_last: bool = False) -> ClassificationScore:
    """Adaptive prediction sets (Romano, Sesia & Candes 2020).

    ``randomize_last=False``: S = mass of the labels more likely than y plus p_y (the last label is always
    included). ``True``: S = that cumulated mass minus u * p_y with u uniform (MAPIE's calibration score
    and ``include_last_label="randomized"``): the label that crosses the threshold is kept with the
    probability that gives exact coverage.
    """
    if not randomize_last:
        return aps
    return ClassificationScore("aps_randomized", _aps_randomized, randomized=True)


def _aps_randomized(proba: np.ndarray, idx: np.ndarray, u: np.ndarray) -> np.ndarray:
    above, p_y, _ = _greater_mass(proba, idx)
    return above + p_y - u * p_y


def raps_score(k_reg: int = 1, lambda_reg: float = 0.01, randomize_last: bool = True) -> ClassificationScore:
    """Regularised APS (Angelopoulos et al. 2021): APS plus lambda_reg * max(rank(y) - k_reg, 0).

    rank is 1-based in the descending order of the probabilities; ``randomize_last`` as in
    :func:`aps_score`. MAPIE chooses k_reg and lambda_reg on a held-out part of the calibration data;
    here they are given.
    """
    if isinstance(k_reg, bool) or not isinstance(k_reg, (int, np.integer)) or k_reg < 0:
        raise ValueError(f"k_reg must be a non-negative int, got {k_reg!r}")
    if not (np.isfinite(lambda_reg) and lambda_reg >= 0):
        raise ValueError(f"lambda_reg must be a finite float >= 0, got {lambda_reg!r}")

    def score(proba: np.ndarray, idx: np.ndarray, u: np.ndarray | None = None) -> np.ndarray:
        above, p_y, rank = _greater_mass(proba, idx)
        base = above + p_y - (0.0 if u is None else u * p_y)
        return base + lambda_reg * np.maximum(rank - k_reg, 0)

    if randomize_last:
        return ClassificationScore(f"raps(k_reg={k_reg}, lambda_reg={lambda_reg})", score, randomized=True)
    return ClassificationScore(f"raps(k_reg={k_reg}, lambda_reg={lambda_reg}, deterministic)",
                               lambda proba, idx: score(proba, idx))


def _topk_score(proba: np.ndarray, idx: np.ndarray) -> np.ndarray:
    # 1-based rank of y among the labels sorted by decreasing probability (MAPIE's "top_k").
    return _greater_mass(proba, idx)[2].astype(float)


absolute = RegressionScore("absolute", _absolute_score, _absolute_interval)
normalized = RegressionScore("normalized", _normalized_score, _normalized_interval, inputs="scaled")
cqr = RegressionScore("cqr", _cqr_score, _cqr_interval, inputs="quantiles")
lac = ClassificationScore("lac", _lac_score)
aps = ClassificationScore("aps", _aps_score)
topk = ClassificationScore("topk", _topk_score)

_BY_NAME: dict[str, Any] = {"absolute": absolute, "normalized": normalized, "cqr": cqr, "lac": lac, "aps": aps,
                            "aps_randomized": aps_score(randomize_last=True), "raps": raps_score(),
                            "topk": topk, "top_k": topk}


def resolve_score(score: Any) -> RegressionScore | ClassificationScore:
    """Map a name (see ``_BY_NAME``) | a score object | a callable (classification) to a score object."""
    if isinstance(score, (RegressionScore, ClassificationScore)):
        return score
    if isinstance(score, str):
        if score not in _BY_NAME:
            raise ValueError(f"score={score!r} is not known; use one of {sorted(_BY_NAME)}, a RegressionScore, "
                             "a ClassificationScore or a callable (proba, label_index) -> scores")
        return _BY_NAME[score]
    if callable(score):
        return ClassificationScore(getattr(score, "__name__", "callable"), score)
    raise TypeError(f"score must be a string, a score object or a callable; got {type(score)}")
