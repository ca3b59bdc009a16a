"""Explanation metrics: AUROC against ground-truth node masks, fidelity at top-k %, sparsity."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, cast

import numpy as np
import torch
from torch import nn

from equigx.explain import Attribution, model_geometry
from equigx.graphs import Graphs

__all__ = ["Fidelity", "explanation_auroc", "fidelity", "predict", "sparsity", "top_k_mask"]


def explanation_auroc(scores: np.ndarray, node_mask: np.ndarray | torch.Tensor, batch: np.ndarray | torch.Tensor,
                      *, per_graph: bool = False) -> float | np.ndarray:
    """Mean over graphs of the ROC AUC of node scores against the ground-truth mask (scikit-learn).

    Parameters
    ----------
    scores : numpy.ndarray, shape (n_nodes,)
        Larger = more important.
    node_mask : array of bool, shape (n_nodes,)
        Ground truth.
    batch : array of int, shape (n_nodes,)
        Graph of each node.
    per_graph : bool, default False
        Return every graph's AUROC (NaN where a graph's mask is all True or all False).

    Returns
    -------
    float or numpy.ndarray
        Mean AUROC over graphs with both classes, or the per-graph values.
    """
    from sklearn.metrics import roc_auc_score

    scores = np.asarray(scores, dtype=np.float64)
    mask = np.asarray(node_mask, dtype=bool)
    batch = np.asarray(batch)
    if scores.shape != mask.shape or scores.shape != batch.shape:
        raise ValueError(f"scores, node_mask and batch need one entry per node, got {scores.shape}, {mask.shape}, "
                         f"{batch.shape}")
    out = np.full(int(batch.max()) + 1, np.nan)
    for g in range(len(out)):
        sel = batch == g
        if 0 < mask[sel].sum() < sel.sum():
            out[g] = roc_auc_score(mask[sel], scores[sel])
    return out if per_graph else float(np.nanmean(out))


def top_k_mask(scores: np.ndarray, batch: np.ndarray, fraction: float) -> np.ndarray:
    """True on the ``ceil(fraction * n_g)`` highest-scoring nodes of each graph (ties: lower index first).

    Parameters
    ----------
    scores : numpy.ndarray, shape (n_nodes,)
        Node scores.
    batch : numpy.ndarray of int, shape (n_nodes,)
        Graph of each node.
    fraction : float
        Share of each graph's nodes, in (0, 1].

    Returns
    -------
    numpy.ndarray of bool, shape (n_nodes,)
        The selection.
    """
    if not 0.0 < fraction <= 1.0:
        raise ValueError(f"fraction must lie in (0, 1], got {fraction!r}")
    scores, batch = np.asarray(scores), np.asarray(batch)
    out = np.zeros(len(scores), dtype=bool)
    for g in np.unique(batch):
        idx = np.nonzero(batch == g)[0]
        k = max(1, math.ceil(fraction * len(idx)))
        order = idx[np.argsort(-scores[idx], kind="stable")]
        out[order[:k]] = True
    return out


def predict(model: nn.Module, graphs: Graphs) -> np.ndarray:
    """Predicted class per graph; graphs left without edges are still predicted (self-loops only).

    Parameters
    ----------
    model : torch.nn.Module
        The network (``geometry``, ``run``).
    graphs : Graphs
        The batch.

    Returns
    -------
    numpy.ndarray of int, shape (n_graphs,)
        Predictions (for a single logit: 1 when positive).
    """
    with torch.no_grad():
        geo = model_geometry(model, graphs, require_edges=False)
        logits = cast(Any, model).run(graphs.node_attr, geo)
    return ((logits[:, 0] > 0).long() if logits.shape[1] == 1 else logits.argmax(dim=1)).numpy()


@dataclass(frozen=True)
class Fidelity:
    """Accuracy before and after removing nodes.

    Attributes
    ----------
    accuracy : float
        On the full graphs.
    accuracy_without_top : float
        After removing each graph's top-k % nodes.
    accuracy_without_bottom : float
        After removing each graph's bottom-k % nodes.
    fraction : float
        k.
    """

    accuracy: float
    accuracy_without_top: float
    accuracy_without_bottom: float
    fraction: float

    @property
    def fid_plus(self) -> float:
        """Accuracy drop when the most relevant nodes are removed (higher = more faithful)."""
        return self.accuracy - self.accuracy_without_top

    @property
    def fid_minus(self) -> float:
        """Accuracy drop when the least relevant nodes are removed (lower = more faithful)."""
        return self.accuracy - self.accuracy_without_bottom


def fidelity(model: nn.Module, graphs: Graphs, attribution: Attribution | np.ndarray, *,
             fraction: float = 0.1) -> Fidelity:
    """Fid+ and Fid-: accuracy after removing the top / bottom ``fraction`` of each graph's nodes.

    Parameters
    ----------
    model : torch.nn.Module
        The network.
    graphs : Graphs
        The batch, with labels ``y``.
    attribution : Attribution or numpy.ndarray
        Node scores.
    fraction : float, default 0.1
        Share of nodes removed per graph (rounded up).

    Returns
    -------
    Fidelity
        The three accuracies.
    """
    if graphs.y is None:
        raise ValueError("fidelity needs labels: graphs.y is None")
    scores = attribution.node_relevance if isinstance(attribution, Attribution) else np.asarray(attribution)
    batch = graphs.batch.numpy()
    y = graphs.y.numpy()
    top = top_k_mask(scores, batch, fraction)
    bottom = top_k_mask(-scores, batch, fraction)
    acc = float((predict(model, graphs) == y).mean())
    acc_top = float((predict(model, graphs.subset_nodes(torch.from_numpy(~top))) == y).mean())
    acc_bottom = float((predict(model, graphs.subset_nodes(torch.from_numpy(~bottom))) == y).mean())
    return Fidelity(acc, acc_top, acc_bottom, float(fraction))


def sparsity(scores: np.ndarray, batch: np.ndarray, *, fraction: float = 0.1) -> float:
    """Mean share of a graph's absolute relevance held by its top ``fraction`` of nodes by ``|score|``.

    Parameters
    ----------
    scores : numpy.ndarray, shape (n_nodes,)
        Node scores.
    batch : numpy.ndarray of int, shape (n_nodes,)
        Graph of each node.
    fraction : float, default 0.1
        Share of nodes.

    Returns
    -------
    float
        In (0, 1]; 1 when all relevance sits on the top nodes.
    """
    a = np.abs(np.asarray(scores, dtype=np.float64))
    top = top_k_mask(a, batch, fraction)
    shares = []
    for g in np.unique(batch):
        sel = np.asarray(batch) == g
        total = a[sel].sum()
        shares.append(a[sel & top].sum() / total if total > 0 else np.nan)
    return float(np.nanmean(shares))
