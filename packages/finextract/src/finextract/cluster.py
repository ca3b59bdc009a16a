"""Feature extraction and FineXtract's clique clustering of generated images.

``cluster_extract(stop="paper")`` follows the official selection: cosine-similarity graph over generations,
threshold starting at the floor-to-0.01 of the 25 % quantile of 1000 random similarities and rising in 0.01 steps;
at each threshold the graph is peeled by repeatedly removing the largest maximal clique; the first threshold giving
at least ``n_train`` cliques (singletons included) wins, and each clique contributes the member nearest its mean
feature.

``stop="robust"`` peels the same graphs but counts only cliques of at least ``min_clique_size`` members, scans
the thresholds down from the largest similarity, and keeps the threshold whose ``n_train`` largest such cliques are
best separated from the other generations (:func:`clique_separation`). Every threshold's counts, sizes and
separation are kept in ``ClusterResult.trace``.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np
import torch
from icml25_shared.random import check_random_state
from icml25_shared.validation import Interval, Options, check_params

__all__ = [
    "STOP_RULES",
    "ClusterResult",
    "SSCDFeatures",
    "ThresholdStep",
    "cluster_extract",
    "clique_separation",
    "extract_features",
    "pixel_features",
]

STOP_RULES = ("paper", "robust")

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
    feats = extractor(torch.as_tensor(images))
    if isinstance(feats, torch.Tensor):
        feats = feats.detach().cpu().numpy()
    feats = np.asarray(feats, dtype=np.float64)
    return feats.reshape(feats.shape[0], -1)


def cosine_matrix(a: np.ndarray, b: np.ndarray | None = None) -> np.ndarray:
    """Cosine similarities between rows of ``a`` and rows of ``b`` (default ``a``)."""
    an = a / np.maximum(np.linalg.norm(a, axis=1, keepdims=True), 1e-12)
    bn = an if b is None else b / np.maximum(np.linalg.norm(b, axis=1, keepdims=True), 1e-12)
    return an @ bn.T


@dataclass(frozen=True)
class ThresholdStep:
    """One similarity threshold tried by :func:`cluster_extract`.

    ``n_cliques``: cliques after peeling, singletons included; ``n_qualifying``: those with at least
    ``min_clique_size`` members; ``sizes``: the qualifying cliques' sizes, largest first; ``separation``: the mean
    :func:`clique_separation` of the ``n_train`` largest qualifying cliques (None when there is none). Counts and
    separation are None when the clique search exceeded its budget at this threshold.
    """

    threshold: float
    n_cliques: int | None
    n_qualifying: int | None
    sizes: tuple[int, ...]
    separation: float | None

    def as_dict(self) -> dict[str, Any]:
        """JSON-ready form (``sizes`` as a list)."""
        return {
            "threshold": self.threshold,
            "n_cliques": self.n_cliques,
            "n_qualifying": self.n_qualifying,
            "sizes": list(self.sizes),
            "separation": self.separation,
        }


@dataclass
class ClusterResult:
    """Output of :func:`cluster_extract`.

    ``selected``: indices (into the generations) of each clique's representative, largest clique first;
    ``cliques``: the member indices of each clique, same order; ``threshold``: the similarity threshold whose
    cliques are returned; ``thresholds``: every threshold tried, in order; ``n_cliques``: cliques found at each
    (-1 where the search exceeded its budget); ``start_threshold``: the paper's first threshold; ``stop``: the
    stopping rule; ``min_clique_size``: the size from which a clique qualifies; ``n_qualifying``: qualifying cliques
    at ``threshold``; ``separation``: their separation score there (see :class:`ThresholdStep`); ``trace``: one
    :class:`ThresholdStep` per threshold tried, in rising order; ``stop_reason``: why this threshold was kept and
    where the search ended.
    """

    selected: np.ndarray
    cliques: list[list[int]]
    threshold: float
    thresholds: list[float] = field(default_factory=list)
    n_cliques: list[int] = field(default_factory=list)
    start_threshold: float = 0.0
    stop: str = "paper"
    min_clique_size: int = 2
    n_qualifying: int = 0
    separation: float | None = None
    trace: list[ThresholdStep] = field(default_factory=list)
    stop_reason: str = ""


def clique_separation(sim: np.ndarray, clique: list[int] | np.ndarray) -> float:
    """Margin by which a group of generations stands apart from the rest.

    The mean similarity between two members minus the largest mean similarity of one outside generation to the
    members. Positive: no outside generation is, on average, as close to the group as its members are to each
    other (a whole memorised image); near zero or negative: the group is a fragment of a larger group (the rest of
    that group is as close), or it mixes groups.

    Parameters
    ----------
    sim : numpy.ndarray
        (n, n) cosine similarities.
    clique : list of int
        At least two member indices.

    Returns
    -------
    float
        The margin, in [-2, 2] (cosine units); an empty outside counts as a mean similarity of -1.

    Examples
    --------
    >>> sim = np.array([[1.0, 0.9, 0.2], [0.9, 1.0, 0.3], [0.2, 0.3, 1.0]])
    >>> round(clique_separation(sim, [0, 1]), 3), round(clique_separation(sim, [1, 2]), 3)
    (0.65, -0.25)
    """
    idx = np.asarray(clique)
    if idx.size < 2:
        raise ValueError(f"a clique needs at least two members to have a separation, got {idx.size}")
    inner = sim[np.ix_(idx, idx)][np.triu_indices(idx.size, k=1)].mean()
    outside = np.ones(sim.shape[0], dtype=bool)
    outside[idx] = False
    outer = sim[np.ix_(idx, outside)].mean(axis=0).max() if outside.any() else -1.0
    return float(inner - outer)


def _peel_cliques(
    sim: np.ndarray, threshold: float, budget: int, *, by_component: bool = False
) -> list[list[int]] | None:
    """Remove the largest clique (ties: smallest member) until no edge is left.

    The nodes left over are singletons, in index order. ``budget`` caps the maximal cliques enumerated for each
    removal; None when a removal exceeds it. ``by_component`` peels each connected component on its own (a removal
    never changes another component; the budget then counts per component), which keeps sparse graphs with many
    small components fast, and breaks ties between equally large cliques by their sorted member lists, so that the
    cliques do not depend on the order in which networkx visits them.
    """
    import networkx as nx

    n = sim.shape[0]
    iu, ju = np.nonzero(np.triu(sim >= threshold, k=1))
    graph = nx.Graph()
    if not by_component:
        graph.add_edges_from(zip(iu.tolist(), ju.tolist(), strict=True))  # isolated nodes never enter the graph
    cliques: list[list[int]] = []
    if by_component:
        for nodes, (ci, cj) in _components(iu, ju):
            if len(ci) == len(nodes) * (len(nodes) - 1) // 2:  # a complete component is its own largest clique
                cliques.append(nodes)
                continue
            part = nx.Graph()
            part.add_edges_from(zip(ci, cj, strict=True))
            if _peel_once(part, budget, cliques) is None:
                return None
    elif _peel_graph(graph, budget, cliques) is None:
        return None
    taken = {v for c in cliques for v in c}
    return cliques + [[v] for v in range(n) if v not in taken]


def _components(iu: np.ndarray, ju: np.ndarray) -> list[tuple[list[int], tuple[list[int], list[int]]]]:
    """Connected components of the graph with edges (iu, ju): sorted nodes and the component's edges."""
    parent: dict[int, int] = {}

    def root(v: int) -> int:
        parent.setdefault(v, v)
        while parent[v] != v:
            parent[v] = parent[parent[v]]
            v = parent[v]
        return v

    for a, b in zip(iu.tolist(), ju.tolist(), strict=True):
        ra, rb = root(a), root(b)
        if ra != rb:
            parent[max(ra, rb)] = min(ra, rb)
    groups: dict[int, tuple[list[int], list[int]]] = {}
    for a, b in zip(iu.tolist(), ju.tolist(), strict=True):
        ea, eb = groups.setdefault(root(a), ([], []))
        ea.append(a)
        eb.append(b)
    members: dict[int, list[int]] = {}
    for v in sorted(parent):
        members.setdefault(root(v), []).append(v)
    return [(members[r], groups[r]) for r in sorted(members)]


def _peel_once(graph: Any, budget: int, cliques: list[list[int]]) -> list[list[int]] | None:
    """Peel like ``_peel_graph(..., lexicographic=True)`` from one enumeration of the maximal cliques.

    Removing a clique C maps each maximal clique c to c - C, and the maximal cliques of the graph without C are
    exactly the maximal sets among those, so the largest set left is always a largest maximal clique.
    """
    import networkx as nx

    found: list[tuple[int, ...]] = []
    for enumerated, c in enumerate(nx.find_cliques(graph), start=1):
        if enumerated > budget:
            return None
        found.append(tuple(sorted(c)))
    while found:
        best = min(found, key=lambda c: (-len(c), c))
        if len(best) < 2:
            break
        cliques.append(list(best))
        gone = set(best)
        found = [r for r in (tuple(v for v in c if v not in gone) for c in found) if len(r) >= 2]
    return cliques


def _peel_graph(
    graph: Any, budget: int, cliques: list[list[int]], *, lexicographic: bool = False
) -> list[list[int]] | None:
    import networkx as nx

    while graph.number_of_edges() > 0:
        best: list[int] = []
        for enumerated, c in enumerate(nx.find_cliques(graph), start=1):
            if lexicographic:  # ties: the lexicographically smallest sorted member list (a total order)
                c = sorted(c)
                if len(c) > len(best) or (len(c) == len(best) and c < best):
                    best = c
            # ties broken by the smallest member so the result does not depend on networkx's visiting order
            elif len(c) > len(best) or (len(c) == len(best) and min(c) < min(best)):
                best = c
            if enumerated > budget:
                return None
        cliques.append(sorted(best))
        graph.remove_nodes_from(best)
    return cliques


def cluster_extract(
    features: np.ndarray | torch.Tensor,
    n_train: int,
    *,
    stop: str = "robust",
    min_clique_size: int = 2,
    quantile: float = 0.25,
    step: float = 0.01,
    n_quantile_samples: int = 1000,
    random_state: Any = 0,
    max_enumerated: int | None = None,
) -> ClusterResult:
    """FineXtract's selection of the most likely training images among generations.

    Parameters
    ----------
    features
        (n, d) one feature row per generated image (see :func:`extract_features`); similarity is cosine.
    n_train
        Number of fine-tuning images N; at least N cliques are sought and their representatives returned.
    stop : {"robust", "paper"}, default "robust"
        ``"paper"``: the official rule, the first threshold with at least N cliques, singletons included (use it to
        reproduce the paper; on planted clusters among noise it can stop while its largest cliques merge
        clusters, e.g. 6 of 7 found where "robust" finds 7). ``"robust"``: only cliques of at least ``min_clique_size`` members count. Thresholds
        on the paper's grid are tried downwards from the largest similarity until the start threshold or until a
        clique search exceeds its budget; among the thresholds with at least N qualifying cliques, the one whose N
        largest have the highest mean :func:`clique_separation` is kept (the lowest on ties; with none, the one
        with the most qualifying cliques). Generations that are not memorised form many singletons at low
        thresholds, so the paper rule can stop while its large cliques still mix memorised images with each other
        and with noise.
    min_clique_size : int, default 2
        Size from which a clique qualifies. With ``stop="paper"`` it only sets ``n_qualifying`` in the trace.
    quantile, step, n_quantile_samples
        Start threshold = floor_to_step(quantile of ``n_quantile_samples`` random off-diagonal similarities);
        threshold rises by ``step`` (paper: 0.25, 0.01, 1000).
    max_enumerated : int, optional
        Budget of maximal cliques enumerated per clique removal (default 20 000 with ``"paper"``, 5 000 with
        ``"robust"``, where it counts per connected component). ``"paper"``: when a removal exceeds it the
        threshold rises, as the official code does after 30 s (a count keeps results machine-independent).
        ``"robust"``: the downward scan ends there, since lower thresholds only add edges.
    random_state : None, int or numpy Generator, default 0
        Draws the random similarities that set the start threshold.

    Returns
    -------
    ClusterResult
        Representatives (largest clique first), cliques, the threshold path and the per-threshold trace.

    Examples
    --------
    Three groups of four generations around the corners of a simplex, N = 3 training images. With the paper's
    rule the threshold starts at the 25 % quantile of the similarities and rises by 0.01 until peeling gives at
    least N cliques:

    >>> import numpy as np
    >>> rng = np.random.default_rng(0)
    >>> q, _ = np.linalg.qr(rng.normal(size=(32, 3)))
    >>> centres = q.T - q.T.mean(0)
    >>> labels = np.repeat([0, 1, 2], 4)
    >>> res = cluster_extract(centres[labels] + rng.normal(size=(12, 32)) / 20, n_train=3, stop="paper")
    >>> len(res.cliques), sorted(labels[res.selected].tolist()), bool(np.allclose(np.diff(res.thresholds), 0.01))
    (3, [0, 1, 2], True)

    The robust rule (the default) scans on and reports why it kept its threshold:

    >>> rob = cluster_extract(centres[labels] + rng.normal(size=(12, 32)) / 20, n_train=3)
    >>> [len(c) for c in rob.cliques], rob.n_qualifying, rob.separation > 0
    ([4, 4, 4], 3, True)
    """
    feats = np.asarray(features.detach().cpu() if isinstance(features, torch.Tensor) else features, dtype=np.float64)
    if feats.ndim != 2:
        raise ValueError(f"features must be 2-D (n_generations, dim), got shape {feats.shape}")
    n = feats.shape[0]
    check_params(
        {"n_train": n_train, "stop": stop, "min_clique_size": min_clique_size, "quantile": quantile, "step": step,
         "n_quantile_samples": n_quantile_samples, "random_state": random_state, "max_enumerated": max_enumerated},
        {"n_train": [Interval(int, 1, None)], "stop": [Options(str, set(STOP_RULES))],
         "min_clique_size": [Interval(int, 1, None)], "quantile": [Interval(float, 0, 1, closed="neither")],
         "step": [Interval(float, 0, 1, closed="neither")], "n_quantile_samples": [Interval(int, 1, None)],
         "random_state": ["random_state"], "max_enumerated": [Interval(int, 1, None), None]},
        owner="cluster_extract",
    )
    if n_train > n:
        raise ValueError(
            f"n_train={n_train} is larger than the number of generations ({n}); generate at least "
            "n_train images (the paper uses 50 per training image)"
        )
    if max_enumerated is None:
        max_enumerated = 20_000 if stop == "paper" else 5_000
    sim = cosine_matrix(feats)
    np.fill_diagonal(sim, 0.0)
    iu = np.triu_indices(n, k=1)
    off = sim[iu]
    rng = check_random_state(random_state)
    sampled = off if off.size <= n_quantile_samples else rng.choice(off, n_quantile_samples, replace=False)
    start = math.floor(float(np.quantile(sampled, quantile)) / step + 1e-9) * step
    if stop == "paper":
        thresholds, counts, trace, kept, cliques = _paper_scan(
            sim, start, step, n_train, min_clique_size, max_enumerated
        )
        reason = f"first threshold with at least {n_train} cliques, singletons included"
    else:
        trace, found, ended = _robust_scan(sim, start, step, n_train, min_clique_size, max_enumerated)
        chosen = _robust_choice(trace, n_train)
        kept, cliques = trace[chosen], found[chosen]
        thresholds = [t.threshold for t in trace]
        counts = [-1 if t.n_cliques is None else t.n_cliques for t in trace]
        if (kept.n_qualifying or 0) >= n_train:
            reason = (
                f"best separation ({kept.separation:.3f}) of the {n_train} largest cliques among thresholds with at "
                f"least {n_train} cliques of {min_clique_size}+ members; {ended}"
            )
        else:
            reason = (
                f"no threshold gave {n_train} cliques of {min_clique_size}+ members; kept the one with the most "
                f"({kept.n_qualifying}); {ended}"
            )
    cliques = sorted(cliques, key=lambda c: (-len(c), c[0]))
    selected = np.array([c[int(np.argmin(np.linalg.norm(feats[c] - feats[c].mean(0), axis=1)))] for c in cliques])
    return ClusterResult(
        selected=selected,
        cliques=cliques,
        threshold=kept.threshold,
        thresholds=thresholds,
        n_cliques=counts,
        start_threshold=start,
        stop=stop,
        min_clique_size=int(min_clique_size),
        n_qualifying=int(kept.n_qualifying or 0),
        separation=kept.separation,
        trace=trace,
        stop_reason=reason,
    )


def _paper_scan(
    sim: np.ndarray, start: float, step: float, n_train: int, min_size: int, budget: int
) -> tuple[list[float], list[int], list[ThresholdStep], ThresholdStep, list[list[int]]]:
    """The official rising scan: stop at the first threshold with at least ``n_train`` cliques."""
    thresholds: list[float] = []
    counts: list[int] = []
    trace: list[ThresholdStep] = []
    i = 0
    while True:
        tau = round(start + i * step, 10)
        i += 1
        cliques = _peel_cliques(sim, tau, budget)
        thresholds.append(tau)
        if cliques is None:
            log.info("clique search exceeded its budget at threshold %.2f; raising it", tau)
            counts.append(-1)
            trace.append(ThresholdStep(tau, None, None, (), None))
            if tau > 1.0:  # cannot happen (no edges above 1), kept so the loop always ends
                raise RuntimeError(f"clique search exceeded max_enumerated={budget} at every threshold")
            continue
        counts.append(len(cliques))
        trace.append(_step(sim, tau, cliques, min_size, n_train))
        if len(cliques) >= n_train or tau > 1.0:
            return thresholds, counts, trace, trace[-1], cliques


def _robust_scan(
    sim: np.ndarray, start: float, step: float, n_train: int, min_size: int, budget: int
) -> tuple[list[ThresholdStep], list[list[list[int]]], str]:
    """Scan down from the largest similarity; return the trace and cliques (rising order) and why the scan ended.

    Thresholds lie on the paper's grid (start + k step), from the highest grid point at or below the largest
    similarity down to the start threshold; the scan ends early at the first threshold whose clique search exceeds
    the budget (lower thresholds only add edges). A threshold with the same edges as the one above reuses its
    cliques.
    """
    n = sim.shape[0]
    off = np.sort(sim[np.triu_indices(n, k=1)])
    top = float(off[-1]) if off.size else start
    k = max(0, math.floor((top - start) / step + 1e-9))
    steps: list[ThresholdStep] = []
    found: list[list[list[int]]] = []
    ended = f"the scan went down to the start threshold {round(start, 10):g}"
    n_edges = -1
    while k >= 0:
        tau = round(start + k * step, 10)
        k -= 1
        edges = off.size - int(np.searchsorted(off, tau, side="left"))
        if edges == n_edges:  # same graph as the threshold above
            steps.append(replace(steps[-1], threshold=tau))
            found.append(found[-1])
            continue
        n_edges = edges
        cliques = _peel_cliques(sim, tau, budget, by_component=True)
        if cliques is None:
            steps.append(ThresholdStep(tau, None, None, (), None))
            found.append([])
            ended = f"the clique search exceeded its budget at {tau:g}, so lower thresholds were not tried"
            break
        steps.append(_step(sim, tau, cliques, min_size, n_train))
        found.append(cliques)
    return steps[::-1], found[::-1], ended


def _step(sim: np.ndarray, tau: float, cliques: list[list[int]], min_size: int, n_train: int) -> ThresholdStep:
    ranked = sorted((c for c in cliques if len(c) >= min_size), key=lambda c: (-len(c), c[0]))
    margins = [clique_separation(sim, c) for c in ranked[:n_train] if len(c) >= 2]
    separation = float(np.mean(margins)) if margins else None
    return ThresholdStep(tau, len(cliques), len(ranked), tuple(len(c) for c in ranked), separation)


def _robust_choice(trace: list[ThresholdStep], n_train: int) -> int:
    """Index of the kept threshold: best separation among those with >= n_train qualifying cliques."""
    done = [j for j, t in enumerate(trace) if t.n_qualifying is not None]
    if not done:  # cannot happen: the scan starts where no edge is left, and no budget is exceeded there
        raise RuntimeError("the clique search exceeded its budget at every threshold")

    def score(j: int) -> float:
        separation = trace[j].separation
        return -math.inf if separation is None else separation

    enough = [j for j in done if (trace[j].n_qualifying or 0) >= n_train]
    if enough:
        return max(enough, key=lambda j: (score(j), -j))
    return max(done, key=lambda j: (trace[j].n_qualifying, score(j), -j))
