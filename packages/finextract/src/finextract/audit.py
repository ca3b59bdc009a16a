"""One call from sampler to extracted set: generate, cluster, pick representatives, score against training data."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import torch
from icml25_shared.validation import Interval, check_param

from finextract.cluster import ClusterResult, cluster_extract, extract_features
from finextract.metrics import ExtractionMetrics, extraction_metrics

__all__ = ["ExtractionResult", "extract"]


@dataclass
class ExtractionResult:
    """Output of :func:`extract`.

    ``generations`` (n, C, H, W) images; ``extracted`` the clique representatives (m ≥ n_train, largest clique
    first); ``cluster`` the clustering record; ``metrics`` against the training images when they were given.
    """

    generations: torch.Tensor
    extracted: torch.Tensor
    cluster: ClusterResult
    metrics: ExtractionMetrics | None


def extract(
    sampler: Any,
    cond: Any,
    *,
    n_train: int,
    n_generations: int | None = None,
    latents: torch.Tensor | None = None,
    generator: torch.Generator | None = None,
    extractor: Any = None,
    train_images: torch.Tensor | None = None,
    thresholds: Sequence[float] = (0.7, 0.6),
    keep: int | None = None,
    stop: str = "robust",
    min_clique_size: int = 2,
    **sample_kw: Any,
) -> ExtractionResult:
    """Run ``sampler`` (a :class:`ModelGuidanceSampler` or :class:`CFGSampler`), cluster and score.

    ``n_generations`` defaults to 50 per training image (the paper's 500 for N = 10) unless ``latents`` are
    given. ``keep``: how many representatives to return (default ``n_train``). ``stop`` and ``min_clique_size``
    go to :func:`~finextract.cluster.cluster_extract` (default the robust rule; ``stop="paper"`` reproduces the
    paper's selection). Extra keyword arguments go to ``sampler.sample`` (``null_cond``, ``pretrained_cond``).
    """
    if latents is None and n_generations is None:
        n_generations = 50 * n_train
    n = int(latents.shape[0]) if latents is not None else int(n_generations or 0)
    check_param("n_train", n_train, [Interval(int, 1, None)], owner="extract")
    if n_train > n:
        raise ValueError(f"n_train={n_train} is larger than the number of generations ({n})")
    out = sampler.sample(cond, n=None if latents is not None else n, latents=latents, generator=generator, **sample_kw)
    images = out.images.clamp(-1, 1).cpu()
    cluster = cluster_extract(extract_features(images, extractor), n_train, stop=stop, min_clique_size=min_clique_size)
    picked = cluster.selected[: keep or n_train]
    extracted = images[torch.as_tensor(picked, dtype=torch.long)]
    metrics = None
    if train_images is not None:
        metrics = extraction_metrics(extracted, train_images, thresholds=thresholds, extractor=extractor)
    return ExtractionResult(generations=images, extracted=extracted, cluster=cluster, metrics=metrics)
