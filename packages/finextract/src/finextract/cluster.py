"""Feature extraction and FineXtract's clique clustering of generated images.

``cluster_extract`` follows the official selection: cosine-similarity graph over generations, threshold
starting at the floor-to-0.01 of the 25 % quantile of 1000 random similarities and rising in 0.01 steps; at each
threshold the graph is peeled by repeatedly removing the largest maximal clique; the first threshold giving at
least ``n_train`` cliques wins, and each clique contributes the member nearest its mean feature.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import torch
from icml25_shared.random import UNSET, check_random_state, renamed_seed

__all__ = ["ClusterResult", "SSCDFeatures", "cluster_extract", "extract_features", "pixel_features"]

log = logging.getLogger(__name__)


def pixel_features(images: torch.Tensor | np.ndarray) -> np.ndarray:
    """Mean-centred flattened pixels, one row per image: (n, C*H*W) float64. Cosine of these = pixel correlation."""
    x = np.asarray(images.detach().cpu() if isinstance(images, torch.Tensor) else images, dtype=np.float64)
    x = x.reshape(x.shape[0], -1)
    return x - x.mean(axis=1, keepdims=True)


class SSCDFeatures:
    """SSCD copy-detection descriptors from a local TorchScript file (e.g. ``sscd_disc_large.torchscript.pt``).

    Preprocessing follows the official evaluation: images in [-1, 1] are mapped to [0, 1], resized so the short
    side is 256, centre-cropped to 224 and normalised with mean = std = 0.5.
    """

    def __init__(self, path: str | Path, *, device: str | torch.device = "cpu") -> None:
        self.path = path
        self.device = device

    def _model(self) -> Any:
        model = getattr(self, "model_", None)
        if model is None:
            path = Path(self.path)
            if not path.is_file():
                raise FileNotFoundError(f"SSCD TorchScript file not found: {path} (no download is attempted)")
            model = self.model_ = torch.jit.load(str(path), map_location=self.device).eval()
        return model

    @torch.no_grad()
    def __call__(self, images: torch.Tensor) -> np.ndarray:
        """Return (n, d) float64 descriptors of (n, C, H, W) images in [-1, 1]."""
        import torch.nn.functional as F

        x = (images.float().clamp(-1, 1) + 1) / 2
        if x.shape[1] == 1:
            x = x.expand(-1, 3, -1, -1)
        h, w = x.shape[-2:]
        scale = 256 / min(h, w)
        x = F.interpolate(
            x, size=(round(h * scale), round(w * scale)), mode="bilinear", antialias=True, align_corners=False
        )
        top, left = (x.shape[-2] - 224) // 2, (x.shape[-1] - 224) // 2
        x = (x[..., top : top + 224, left : left + 224] - 0.5) / 0.5
        return self._model()(x.to(self.device)).detach().cpu().numpy().astype(np.float64)


def extract_features(
    images: torch.Tensor | np.ndarray, extractor: str | Path | Callable[[Any], Any] | None = None
) -> np.ndarray:
    """Compute the features whose cosine similarity the clustering and the metrics use.

    Parameters
    ----------
    images : torch.Tensor or numpy.ndarray
        (n, C, H, W) images in [-1, 1].
    extractor : None, "pixel", path or callable
        ``None``/"pixel" → :func:`pixel_features`; a path → :class:`SSCDFeatures`; any callable
        ``images -> (n, d)`` array or tensor.

    Returns
    -------
    numpy.ndarray
        (n, d) float64 features.
    """
    if extractor is None or (isinstance(extractor, str) and extractor == "pixel"):
        return pixel_features(images)
    if isinstance(extractor, (str, Path)):
        extractor = SSCDFeatures(extractor)
    if not callable(extractor):
        raise TypeError(
            f"extractor must be None, 'pixel', a path to an SSCD TorchScript file or a callable, "
            f"got {type(extractor).__name__}"
        )
    feats = extractor(images)
    if isinstance(feats, torch.Tensor):
        feats = feats.detach().cpu().numpy()
    feats = np.asarray(feats, dtype=np.float64)
    return feats.reshape(feats.shape[0], -1)


def cosine_matrix(a: np.ndarray, b: np.ndarray | None = None) -> np.ndarray:
    """Cosine similarities between rows of ``a`` and rows of ``b`` (default ``a``)."""
    an = a / np.maximum(np.linalg.norm(a, axis=1, keepdims=True), 1e-12)
    bn = an if b is None else b / np.maximum(np.linalg.norm(b, axis=1, keepdims=True), 1e-12)
    return an @ bn.T


@dataclass
class ClusterResult:
    """Output of :func:`cluster_extract`.

    ``selected``: indices (into the generations) of each clique's representative, largest clique first;
    ``cliques``: the member indices of each clique, same order; ``threshold``: the similarity threshold that
    stopped the search; ``thresholds``: every threshold tried, in order; ``n_cliques``: cliques found at each.
    """

    selected: np.ndarray
    cliques: list[list[int]]
    threshold: float
    thresholds: list[float] = field(default_factory=list)
    n_cliques: list[int] = field(default_factory=list)
    start_threshold: float = 0.0


def _peel_cliques(sim: np.ndarray, threshold: float, budget: int) -> list[list[int]] | None:
    """Remove the largest clique (ties: smallest member) until no edge is left.

    The nodes left over are singletons, in index order. ``budget`` caps the maximal cliques enumerated for each removal; None when a
    removal exceeds it.
    """
    import networkx as nx

    n = sim.shape[0]
    graph = nx.Graph()
    iu, ju = np.nonzero(np.triu(sim >= threshold, k=1))
    graph.add_edges_from(zip(iu.tolist(), ju.tolist(), strict=True))  # isolated nodes never enter the graph
    cliques: list[list[int]] = []
    while graph.number_of_edges() > 0:
        best: list[int] = []
        for enumerated, c in enumerate(nx.find_cliques(graph), start=1):
            # ties broken by the smallest member so the result does not depend on networkx's visiting order
            if len(c) > len(best) or (len(c) == len(best) and min(c) < min(best)):
                best = c
            if enumerated > budget:
                return None
        cliques.append(sorted(best))
        graph.remove_nodes_from(best)
    taken = {v for c in cliques for v in c}
    return cliques + [[v] for v in range(n) if v not in taken]


def cluster_extract(
    features: np.ndarray | torch.Tensor,
    n_train: int,
    *,
    quantile: float = 0.25,
    step: float = 0.01,
    n_quantile_samples: int = 1000,
    random_state: Any = 0,
    max_enumerated: int = 20_000,
    seed: Any = UNSET,
) -> ClusterResult:
    """FineXtract's selection of the most likely training images among generations.

    Parameters
    ----------
    features
        (n, d) one feature row per generated image (see :func:`extract_features`); similarity is cosine.
    n_train
        Number of fine-tuning images N; at least N cliques are sought and their representatives returned.
    quantile, step, n_quantile_samples
        Start threshold = floor_to_step(quantile of ``n_quantile_samples`` random off-diagonal similarities);
        threshold rises by ``step`` (paper: 0.25, 0.01, 1000).
    max_enumerated
        Budget of maximal cliques enumerated per clique removal; when a removal exceeds it the threshold rises.
        The official code does the same with a 30 s wall-clock limit; a count keeps results machine-independent.
    random_state : None, int or numpy Generator, default 0
        Draws the random similarities that set the start threshold.
    seed : int, optional
        Deprecated name of ``random_state``.

    Returns
    -------
    ClusterResult
        Representatives (largest clique first), cliques and the threshold path.

    Examples
    --------
    Three groups of four generations around the corners of a simplex, N = 3 training images. The threshold
    starts at the 25 % quantile of the similarities and rises by 0.01 until peeling gives at least N cliques:

    >>> import numpy as np
    >>> rng = np.random.default_rng(0)
    >>> q, _ = np.linalg.qr(rng.normal(size=(32, 3)))
    >>> centres = q.T - q.T.mean(0)
    >>> labels = np.repeat([0, 1, 2], 4)
    >>> res = cluster_extract(centres[labels] + rng.normal(size=(12, 32)) / 20, n_train=3)
    >>> len(res.cliques), sorted(labels[res.selected].tolist()), bool(np.allclose(np.diff(res.thresholds), 0.01))
    (3, [0, 1, 2], True)
    """
    random_state = renamed_seed(random_state, seed, owner="cluster_extract")
    feats = np.asarray(features.detach().cpu() if isinstance(features, torch.Tensor) else features, dtype=np.float64)
    if feats.ndim != 2:
        raise ValueError(f"features must be 2-D (n_generations, dim), got shape {feats.shape}")
    n = feats.shape[0]
    if isinstance(n_train, bool) or not isinstance(n_train, (int, np.integer)) or n_train < 1:
        raise ValueError(f"n_train must be a positive int, got {n_train!r}")
    if n_train > n:
        raise ValueError(
            f"n_train={n_train} is larger than the number of generations ({n}); generate at least "
            "n_train images (the paper uses 50 per training image)"
        )
    if isinstance(max_enumerated, bool) or not isinstance(max_enumerated, int) or max_enumerated < 1:
        raise ValueError(f"max_enumerated must be a positive int, got {max_enumerated!r}")
    if not 0 < quantile < 1 or not 0 < step < 1:
        raise ValueError(f"quantile and step must lie in (0, 1), got {quantile} and {step}")
    sim = cosine_matrix(feats)
    np.fill_diagonal(sim, 0.0)
    iu = np.triu_indices(n, k=1)
    off = sim[iu]
    rng = check_random_state(random_state)
    sampled = off if off.size <= n_quantile_samples else rng.choice(off, n_quantile_samples, replace=False)
    start = math.floor(float(np.quantile(sampled, quantile)) / step + 1e-9) * step
    thresholds: list[float] = []
    counts: list[int] = []
    i = 0
    while True:
        tau = round(start + i * step, 10)
        i += 1
        cliques = _peel_cliques(sim, tau, max_enumerated)
        thresholds.append(tau)
        if cliques is None:
            log.info("clique search exceeded its budget at threshold %.2f; raising it", tau)
            counts.append(-1)
            if tau > 1.0:  # cannot happen (no edges above 1), kept so the loop always ends
                raise RuntimeError(f"clique search exceeded max_enumerated={max_enumerated} at every threshold")
            continue
        counts.append(len(cliques))
        if len(cliques) >= n_train or tau > 1.0:
            break
    cliques.sort(key=lambda c: (-len(c), c[0]))
    selected = np.array([c[int(np.argmin(np.linalg.norm(feats[c] - feats[c].mean(0), axis=1)))] for c in cliques])
    return ClusterResult(
        selected=selected,
        cliques=cliques,
        threshold=tau,
        thresholds=thresholds,
        n_cliques=counts,
        start_threshold=start,
    )
