"""EquiGX: layer-wise relevance propagation through an e3nn network, to nodes, edge directions and distances."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np
import torch
from icml25_shared.validation import Interval, Options, check_params
from torch import nn

from equigx.graphs import Geometry, Graphs, scatter_sum
from equigx.rules import RuleContext, _blocks_by_l, find_rule

__all__ = ["Attribution", "EquiGX", "Explanation", "eval_mode", "is_regression", "model_geometry", "model_target",
           "target_output"]


@dataclass
class Attribution:
    """Node scores of one explainer on a batch of graphs.

    Attributes
    ----------
    node_relevance : numpy.ndarray, shape (n_nodes,)
        Score of each node (larger = more important).
    batch : numpy.ndarray of int, shape (n_nodes,)
        Graph of each node.
    prediction : numpy.ndarray of int, shape (n_graphs,)
        Predicted class of each graph (for a single-logit model, 1 when the logit is positive).
    target : numpy.ndarray of int, shape (n_graphs,)
        Class explained.
    method : str
        Name of the explainer.
    """

    node_relevance: np.ndarray
    batch: np.ndarray
    prediction: np.ndarray
    target: np.ndarray
    method: str

    def per_graph(self) -> list[np.ndarray]:
        """Node scores split by graph.

        Returns
        -------
        list of numpy.ndarray
            One array per graph.
        """
        return [self.node_relevance[self.batch == g] for g in range(len(self.prediction))]


@dataclass
class Explanation(Attribution):
    """EquiGX relevance of a batch: nodes, node feature orders, edge directions and distances, leak.

    Attributes
    ----------
    node_relevance_by_l : numpy.ndarray, shape (n_nodes, lmax + 1)
        Relevance of the node features entering the last convolution, by irrep order ``l``.
    edge_index : numpy.ndarray of int, shape (2, n_edges)
        ``(src, dst)`` of the radius graph's edges (self-loops included).
    edge_direction : numpy.ndarray, shape (n_edges,)
        Relevance of the ``l >= 1`` spherical harmonics of each edge (zero in the node variant).
    edge_sh_by_l : numpy.ndarray, shape (n_edges, lmax + 1)
        Relevance of the edge spherical harmonics by order (``l = 0`` is the constant).
    edge_distance : numpy.ndarray, shape (n_edges,)
        Relevance of each edge's length, through the radial network (zero in the node variant).
    output : numpy.ndarray, shape (n_graphs,)
        The explained value: the target's logit (for a single-logit model, the logit times +1 or -1).
    leak : numpy.ndarray, shape (n_graphs,)
        ``output`` minus everything attributed (absorbed by biases and stabilisers).
    logits : numpy.ndarray, shape (n_graphs, n_out)
        The model's output.
    node_relevance_by_layer : numpy.ndarray, shape (n_convolutions, n_nodes)
        Relevance of each convolution's input, per node, in forward order (the first row is
        ``node_relevance`` for a plain :class:`equigx.TFN`).
    layer_names : list of str
        ``"index:type"`` of each part of ``model.layers``, in forward order.
    layer_leak : numpy.ndarray, shape (n_layers, n_graphs)
        Relevance each part did not pass on (its output total minus its input total, edge relevance
        included); the rows sum to ``leak``.
    layer_bias : numpy.ndarray, shape (n_layers, n_graphs)
        The part of ``layer_leak`` that went to the part's biases (``b_j R_j / z_j`` summed over outputs);
        the rest is the stabilisers' (``eps``) share.
    """

    node_relevance_by_l: np.ndarray | None = None
    edge_index: np.ndarray | None = None
    edge_direction: np.ndarray | None = None
    edge_sh_by_l: np.ndarray | None = None
    edge_distance: np.ndarray | None = None
    output: np.ndarray | None = None
    leak: np.ndarray | None = None
    logits: np.ndarray | None = None
    node_relevance_by_layer: np.ndarray | None = None
    layer_names: list[str] | None = None
    layer_leak: np.ndarray | None = None
    layer_bias: np.ndarray | None = None

    @property
    def relative_leak(self) -> np.ndarray:
        """``|leak| / |output|`` per graph; NaN where the output is zero within rounding.

        A graph whose explained output is below ``1e-6`` of the batch's scale (the largest of the graphs'
        logits and summed absolute relevances, taken as at least 1) has no meaningful share: an untrained or
        mirror-symmetric graph's pseudoscalar is zero up to roundoff (a graph whose logits are all roundoff
        cannot be its own scale), and dividing by it gives numbers of any size. Summarise with
        ``np.nanmedian`` / ``np.nanmax``.

        Returns
        -------
        numpy.ndarray, shape (n_graphs,)
            The share of the output not attributed (NaN where undefined).
        """
        assert self.output is not None and self.leak is not None and self.logits is not None  # set by explain
        n_graphs = len(self.output)
        magnitude = np.bincount(self.batch, np.abs(self.node_relevance), minlength=n_graphs)
        if self.edge_index is not None and self.edge_sh_by_l is not None and self.edge_distance is not None:
            edge = np.abs(self.edge_sh_by_l).sum(axis=1) + np.abs(self.edge_distance)
            magnitude = magnitude + np.bincount(self.batch[self.edge_index[1]], edge, minlength=n_graphs)
        scale = np.maximum(np.abs(self.logits).max(axis=1), magnitude)
        out = np.abs(self.output)
        # A graph whose logits are all roundoff (a pseudoscalar of a mirror-symmetric graph) has a roundoff
        # scale of its own: compare with the batch's scale instead, taken as at least 1.
        defined = out > 1e-6 * max(float(scale.max(initial=0.0)), 1.0)
        return np.where(defined, np.abs(self.leak) / np.where(defined, out, 1.0), np.nan)

    def node_scores(self, *, geometry: bool = True, absolute: bool = False) -> np.ndarray:
        """Node relevance plus, with ``geometry``, half of each incident edge's direction and distance relevance.

        Parameters
        ----------
        geometry : bool, default True
            Add the edges' share (each edge gives half to each endpoint).
        absolute : bool, default False
            Return the magnitude: nodes with strong evidence against the class rank as important too.

        Returns
        -------
        numpy.ndarray, shape (n_nodes,)
            Node scores; signed, they sum to the graph's attributed total.
        """
        scores = self.node_relevance.copy()
        if geometry:
            assert self.edge_sh_by_l is not None and self.edge_distance is not None and self.edge_index is not None
            edge = self.edge_sh_by_l.sum(axis=1) + self.edge_distance
            for row in self.edge_index:
                np.add.at(scores, row, 0.5 * edge)
        return np.abs(scores) if absolute else scores


@contextmanager
def eval_mode(model: nn.Module) -> Iterator[nn.Module]:
    """Put ``model`` in eval mode for the duration of a block, then restore each submodule's mode.

    Parameters
    ----------
    model : torch.nn.Module
        The network.

    Yields
    ------
    torch.nn.Module
        The same model, in eval mode.
    """
    modes = [(m, m.training) for m in model.modules()]
    model.eval()
    try:
        yield model
    finally:
        for m, mode in modes:
            m.training = mode


def is_regression(model: nn.Module) -> bool:
    """Whether ``model`` predicts a value (``model.task == "regression"``) rather than class logits.

    Parameters
    ----------
    model : torch.nn.Module
        The network.

    Returns
    -------
    bool
        True for a regression model.
    """
    return getattr(model, "task", "classification") == "regression"


def model_geometry(model: nn.Module, graphs: Graphs, *, pos: torch.Tensor | None = None,
                   require_edges: bool = True) -> Geometry:
    """The model's geometry of a batch: ``model.graph_geometry`` when defined, else ``model.geometry``.

    Parameters
    ----------
    model : torch.nn.Module
        The network.
    graphs : Graphs
        The batch.
    pos : torch.Tensor, shape (n_nodes, 3), optional
        Coordinates to use instead of ``graphs.pos``.
    require_edges : bool, default True
        Raise when a graph has no edge within the cutoff.

    Returns
    -------
    Geometry
        Edges and their attributes.
    """
    pos = graphs.pos if pos is None else pos
    shaped: Any = model  # TFN-shaped: graph_geometry or geometry
    if hasattr(shaped, "graph_geometry"):
        return shaped.graph_geometry(graphs, pos=pos, require_edges=require_edges)
    return shaped.geometry(pos, graphs.batch, graphs.n_graphs, require_edges=require_edges)


def model_target(logits: torch.Tensor, target: int | np.ndarray | torch.Tensor | None, *,
                 regression: bool = False) -> tuple[torch.Tensor, torch.Tensor]:
    """The class explained per graph and the predicted class.

    Parameters
    ----------
    logits : torch.Tensor, shape (n_graphs, n_out)
        Model output.
    target : None, int or array of int
        None explains the prediction; an int or one int per graph names the class (for a single logit:
        0 or 1).
    regression : bool, default False
        The model predicts a value: the explained output is the prediction itself, ``target`` must be None
        (the returned target is 0 and the prediction is the value).

    Returns
    -------
    tuple of torch.Tensor
        ``(target, prediction)``, each of shape (n_graphs,) (int64; the prediction of a regression model is
        its value).

    Raises
    ------
    ValueError
        When a target is out of range, or given for a regression model.
    """
    n_graphs, n_out = logits.shape
    if regression:
        if target is not None:
            raise ValueError("a regression model explains its predicted value; pass target=None")
        return torch.zeros(n_graphs, dtype=torch.long), logits[:, 0].detach().clone()
    n_classes = 2 if n_out == 1 else n_out
    pred = (logits[:, 0] > 0).long() if n_out == 1 else logits.argmax(dim=1)
    if target is None:
        return pred, pred
    raw = target.detach().cpu().numpy() if isinstance(target, torch.Tensor) else np.asarray(target)
    if raw.dtype == bool or not np.issubdtype(raw.dtype, np.integer):
        raise ValueError(f"target must be an integer class or one integer per graph, got {target!r} "
                         f"(dtype {raw.dtype})")
    t = torch.as_tensor(raw, dtype=torch.long).reshape(-1)
    if t.numel() == 1:
        t = t.expand(n_graphs)
    if t.numel() != n_graphs:
        raise ValueError(f"target needs one class per graph ({n_graphs}), got {t.numel()}")
    if int(t.min()) < 0 or int(t.max()) >= n_classes:
        raise ValueError(f"target class {int(t.max()) if int(t.max()) >= n_classes else int(t.min())} is out of "
                         f"range: the model has {n_classes} classes (0..{n_classes - 1})")
    return t.clone(), pred


def target_output(logits: torch.Tensor, target: torch.Tensor, *, regression: bool = False) -> torch.Tensor:
    """The explained scalar per graph: the target's logit, or ``(2 t - 1) * z`` for a single logit ``z``.

    Parameters
    ----------
    logits : torch.Tensor, shape (n_graphs, n_out)
        Model output.
    target : torch.Tensor of int64, shape (n_graphs,)
        Class per graph.
    regression : bool, default False
        The explained value is the single output itself.

    Returns
    -------
    torch.Tensor, shape (n_graphs,)
        The explained value.
    """
    if regression:
        return logits[:, 0]
    if logits.shape[1] == 1:
        return logits[:, 0] * (2 * target - 1).to(logits)
    return logits.gather(1, target[:, None])[:, 0]


class EquiGX:
    """Explain an e3nn equivariant network by relevance propagation (Ling et al., ICML 2025).

    Parameters
    ----------
    model : equigx.models.TFN or compatible module
        A module with ``layers`` (parts with a registered rule), ``graph_geometry(graphs, pos=...)`` or
        ``geometry(pos, batch, n_graphs)``,
        ``run(node_attr, geometry, record)`` and ``check_graphs(graphs)``.
    variant : {"node", "split"}, default "node"
        ``"node"``: tensor-product relevance goes to node features only; ``"split"``: one third each to node
        features, edge spherical harmonics (directions) and radial weights (distances).
    root : {"input", "zero"}, default "input"
        Root point of the tensor-product Taylor expansion.
    eps : float, default 1e-9
        Stabiliser of every rule (positive: output blocks that no path reaches are exactly zero).
    norm_rule : {"rescale", "identity"}, default "rescale"
        NormActivation rule.
    head_rule : {"epsilon", "gamma"}, default "epsilon"
        Rule of the head's ``torch.nn.Linear`` layers (LRP-epsilon, or LRP-gamma with ``gamma``).
    gamma : float, default 0.25
        Weight of positive parts in the gamma rule.

    Examples
    --------
    >>> import numpy as np
    >>> import torch
    >>> from equigx import EquiGX, TFN
    >>> from equigx.data import make_shapes
    >>> _ = torch.manual_seed(0)
    >>> graphs = make_shapes(4, random_state=0, dtype=torch.float64)
    >>> model = TFN(n_out=5, mul=2, lmax=1, r_max=1.5).double()
    >>> exp = EquiGX(model, variant="split").explain(graphs)
    >>> exp.node_relevance.shape == (graphs.n_nodes,), exp.edge_direction.shape == exp.edge_distance.shape
    (True, True)
    >>> total = np.bincount(exp.batch, exp.node_scores(), minlength=4)  # relevance per graph
    >>> bool(np.allclose(total + exp.leak, exp.output))  # sums to the explained logit minus the leak
    True
    """

    def __init__(self, model: nn.Module, *, variant: Literal["node", "split"] = "node",
                 root: Literal["input", "zero"] = "input", eps: float = 1e-9,
                 norm_rule: Literal["rescale", "identity"] = "rescale",
                 head_rule: Literal["epsilon", "gamma"] = "epsilon", gamma: float = 0.25) -> None:
        self.model: Any = model  # a TFN-shaped module: layers, run, check_graphs, (graph_)geometry
        self.variant = variant
        self.root = root
        self.eps = eps
        self.norm_rule = norm_rule
        self.head_rule = head_rule
        self.gamma = gamma

    _parameter_constraints: dict = {
        "variant": [Options(str, {"node", "split"})],
        "root": [Options(str, {"input", "zero"})],
        # positive: eps = 0 divides the output blocks no path reaches (zero) by zero
        "eps": [Interval(float, 0, float("inf"), closed="neither")],
        "norm_rule": [Options(str, {"rescale", "identity"})],
        "head_rule": [Options(str, {"epsilon", "gamma"})],
        "gamma": [Interval(float, 0, float("inf"), closed="left")],
    }

    def _validate(self) -> None:
        check_params({name: getattr(self, name) for name in self._parameter_constraints}, self._parameter_constraints,
                     owner="EquiGX")
        for name in ("layers", "run", "check_graphs"):
            if not hasattr(self.model, name) or not (hasattr(self.model, "geometry")
                                                     or hasattr(self.model, "graph_geometry")):
                raise TypeError(f"model {type(self.model).__name__} has no '{name}'; EquiGX explains models shaped "
                                "like equigx.TFN")
        for layer in self.model.layers:
            find_rule(layer)

    def explain(self, graphs: Graphs, target: int | np.ndarray | torch.Tensor | None = None) -> Explanation:
        """Relevance of every node, edge direction and edge distance for the target class of each graph.

        Parameters
        ----------
        graphs : Graphs
            The batch (use float64 for identities to 1e-10).
        target : None, int or array of int, optional
            Class to explain per graph; None explains the predicted class.

        Returns
        -------
        Explanation
            Relevances, prediction and conservation leak.

        Raises
        ------
        TypeError
            When a part of the model has no rule (the message names it).
        ValueError
            On NaN or infinite coordinates, node features that do not match the model's irreps or dtype, a
            ``batch`` that does not match ``n_graphs``, a graph with no edge within the cutoff, or a target
            out of range or not an integer.
        RuntimeError
            Under ``torch.inference_mode()``.

        Notes
        -----
        The model is explained in eval mode (dropout off) and its train/eval mode is restored afterwards.
        """
        self._validate()
        if torch.is_inference_mode_enabled():
            raise RuntimeError("EquiGX.explain differentiates the tensor products and cannot run under "
                               "torch.inference_mode(); call it outside (torch.no_grad() is fine)")
        model = self.model
        model.check_graphs(graphs)
        with eval_mode(model):  # dropout and other train-time randomness off: reproducible logits
            return self._explain(graphs, target)

    def _explain(self, graphs: Graphs, target: int | np.ndarray | torch.Tensor | None) -> Explanation:
        model = self.model
        geo = model_geometry(model, graphs)
        record: list[torch.Tensor] = []
        with torch.no_grad():
            logits = model.run(graphs.node_attr, geo, record)
        regression = is_regression(model)
        t, pred = model_target(logits, target, regression=regression)
        out = target_output(logits, t, regression=regression)
        if logits.shape[1] == 1:
            relevance = out[:, None].clone()
        else:
            relevance = torch.zeros_like(logits).scatter_(1, t[:, None], out[:, None])
        ctx = RuleContext(geo, self.variant, self.root, float(self.eps), self.norm_rule, head_rule=self.head_rule,
                          gamma=float(self.gamma))
        n_layers = len(model.layers)
        layer_leak = out.new_zeros((n_layers, geo.n_graphs))
        layer_bias = out.new_zeros((n_layers, geo.n_graphs))
        before = _graph_total(relevance, ctx)
        for k in range(n_layers - 1, -1, -1):
            layer = model.layers[k]
            ctx.bias = None
            relevance = find_rule(layer)(layer, record[k], record[k + 1], relevance, ctx)
            after = _graph_total(relevance, ctx)
            layer_leak[k] = before - after
            if ctx.bias is not None:
                layer_bias[k] = _rows_to_graphs(ctx.bias, geo)
            before = after
        node = relevance.sum(dim=1)
        n_edges = geo.edge_src.shape[0]
        lmax = int(model.irreps_sh.lmax) if hasattr(model, "irreps_sh") else 0
        edge_sh = ctx.edge_sh if ctx.edge_sh is not None else node.new_zeros((n_edges, lmax + 1))
        edge_dist = ctx.edge_radial if ctx.edge_radial is not None else node.new_zeros(n_edges)
        edge_graph = geo.batch[geo.edge_dst]
        attributed = (scatter_sum(node, geo.batch, geo.n_graphs)
                      + scatter_sum(edge_sh.sum(dim=1) + edge_dist, edge_graph, geo.n_graphs))
        if ctx.conv_inputs:
            irreps, last = ctx.conv_inputs[0]
            by_l = _blocks_by_l(last, irreps, lmax)
        else:
            by_l = node[:, None]
        np64 = lambda a: a.detach().cpu().numpy()  # noqa: E731
        return Explanation(
            node_relevance=np64(node), batch=np64(graphs.batch), prediction=np64(pred), target=np64(t),
            method=f"equigx-{self.variant}", node_relevance_by_l=np64(by_l),
            edge_index=np64(torch.stack([geo.edge_src, geo.edge_dst])), edge_direction=np64(edge_sh[:, 1:].sum(dim=1)),
            edge_sh_by_l=np64(edge_sh), edge_distance=np64(edge_dist), output=np64(out),
            node_relevance_by_layer=np64(torch.stack([r.sum(dim=1) for _, r in reversed(ctx.conv_inputs)])
                                         if ctx.conv_inputs else node[None]),
            leak=np64(out - attributed), logits=np64(logits),
            layer_names=[f"{k}:{type(m).__name__}" for k, m in enumerate(model.layers)],
            layer_leak=np64(layer_leak), layer_bias=np64(layer_bias))


def _rows_to_graphs(values: torch.Tensor, geo: Geometry) -> torch.Tensor:
    """Per-graph sums of per-row values, rows being nodes (``n_nodes`` rows) or graphs (``n_graphs``)."""
    if values.shape[0] == geo.n_nodes:
        return scatter_sum(values, geo.batch, geo.n_graphs)
    if values.shape[0] == geo.n_graphs:
        return values
    raise ValueError(f"relevance has {values.shape[0]} rows; expected {geo.n_nodes} nodes or {geo.n_graphs} graphs")


def _graph_total(relevance: torch.Tensor, ctx: RuleContext) -> torch.Tensor:
    """Relevance held per graph: the current rows' plus the edges' attributed so far."""
    geo = ctx.geometry
    total = _rows_to_graphs(relevance.sum(dim=1), geo)
    edge = None
    if ctx.edge_sh is not None:
        edge = ctx.edge_sh.sum(dim=1)
    if ctx.edge_radial is not None:
        edge = ctx.edge_radial if edge is None else edge + ctx.edge_radial
    if edge is not None:
        total = total + scatter_sum(edge, geo.batch[geo.edge_dst], geo.n_graphs)
    return total


