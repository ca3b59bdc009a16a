"""Extraction metrics: average similarity (AS) and average extraction success rate (A-ESR)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from finextract.cluster import cosine_matrix, extract_features

__all__ = ["ExtractionMetrics", "extraction_metrics"]


@dataclass
class ExtractionMetrics:
    """How much of the training set an extracted set recovers.

    ``similarity``: AS, the mean over training images of the max cosine similarity to any extracted image.
    ``esr``: A-ESR per threshold, the fraction of training images whose best match is ≥ threshold.
    ``nearest``: (n_train,) index of each training image's best extracted match; ``best_similarity``: that value.
    ``distance``: 1 - AS, the number the official code writes.
    """

    similarity: float
    esr: dict[float, float]
    nearest: np.ndarray
    best_similarity: np.ndarray

    @property
    def distance(self) -> float:
        """1 - AS, the number the official code writes."""
        return 1.0 - self.similarity


def extraction_metrics(
    extracted: Any, train: Any, *, thresholds: Sequence[float] = (0.7, 0.6), extractor: Any = None
) -> ExtractionMetrics:
    """AS and A-ESR of ``extracted`` against ``train``.

    Both are images (n, C, H, W) passed through ``extractor`` (see :func:`finextract.extract_features`;
    default pixel cosine) or, with ``extractor="features"``, precomputed (n, d) feature arrays.
    """
    if isinstance(extractor, str) and extractor == "features":
        fe, ft = (np.asarray(a, dtype=np.float64) for a in (extracted, train))
    else:
        fe, ft = extract_features(extracted, extractor), extract_features(train, extractor)
    if fe.ndim != 2 or ft.ndim != 2 or fe.shape[1] != ft.shape[1]:
        raise ValueError(f"extracted and training features must be (n, d) with equal d, got {fe.shape} and {ft.shape}")
    if fe.shape[0] == 0 or ft.shape[0] == 0:
        raise ValueError("extracted and training sets must be non-empty")
    sim = cosine_matrix(ft, fe)
    nearest = sim.argmax(axis=1)
    best = sim[np.arange(sim.shape[0]), nearest]
    esr = {float(t): float(np.mean(best >= t)) for t in thresholds}
    return ExtractionMetrics(similarity=float(best.mean()), esr=esr, nearest=nearest, best_similarity=best)
