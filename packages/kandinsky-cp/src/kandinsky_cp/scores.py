"""Nonconformity scores S(x, y): larger means less conforming.

Regression scores take the point prediction and know how to invert ``{y : S <= t}`` into an interval;
classification scores take the predicted class probabilities and a label index.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

__all__ = ["RegressionScore", "ClassificationScore", "absolute", "lac", "aps", "resolve_score"]


@dataclass(frozen=True)
class RegressionScore:
    """score(y_pred (n,), y (n,)) -> (n,); interval(y_pred (n,), t (n,)) -> (lower (n,), upper (n,)), the set {y : score(y_pred, y) <= t} (empty when lower > upper)."""

    name: str
    score: Callable[[np.ndarray, np.ndarray], np.ndarray]
    interval: Callable[[np.ndarray, np.ndarray], tuple[np.ndarray, np.ndarray]]


@dataclass(frozen=True)
class ClassificationScore:
    """score(proba (n, K), label_index (n,)) -> (n,)."""

    name: str
    score: Callable[[np.ndarray, np.ndarray], np.ndarray]


def _absolute_score(y_pred: np.ndarray, y: np.ndarray) -> np.ndarray:
    return np.abs(np.asarray(y, dtype=float) - np.asarray(y_pred, dtype=float))


def _absolute_interval(y_pred: np.ndarray, t: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    return y_pred - t, y_pred + t


def _lac_score(proba: np.ndarray, idx: np.ndarray) -> np.ndarray:
    return 1.0 - proba[np.arange(len(idx)), idx]


def _aps_score(proba: np.ndarray, idx: np.ndarray) -> np.ndarray:
    # Mass of the labels strictly more likely than y, plus p_y (non-randomised APS).
    p_y = proba[np.arange(len(idx)), idx]
    return np.sum(np.where(proba > p_y[:, None], proba, 0.0), axis=1) + p_y


absolute = RegressionScore("absolute", _absolute_score, _absolute_interval)
lac = ClassificationScore("lac", _lac_score)
aps = ClassificationScore("aps", _aps_score)

_BY_NAME = {"absolute": absolute, "lac": lac, "aps": aps}


def resolve_score(score: Any) -> RegressionScore | ClassificationScore:
    """Map "absolute" | "lac" | "aps" | a score object | a callable (classification) to a score object."""
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
