"""Baseline explainers behind EquiGX's interface: ``explain(graphs, target=None) -> Attribution``.

- :class:`CoordinateGradient`: ``|d z / d pos_i|`` (the reference code's gradient baseline).
- :class:`GradCAM`: ``sum over interaction layers of <activation_i, d z / d activation_i>``.
- :class:`InputXGradient`, :class:`Saliency`: node features times gradient / raw gradient, summed over
  features (equal to Captum's ``InputXGradient`` and ``Saliency(abs=False)``).
- :class:`IntegratedGradients`: Captum's, on node features from a zero baseline (needs ``captum``).
- :class:`GNNExplainer`: torch_geometric's, a learned node mask (needs ``torch_geometric``).
- :class:`PGExplainer`: a parametrised edge-mask explainer (Luo et al. 2020), implemented here: the
  torch_geometric one needs ``MessagePassing`` layers to apply its mask.
- :class:`LRIBernoulli`: learnable randomness injection with Bernoulli point masks (Miao et al. 2023), on
  the frozen model (post hoc).
- :class:`RandomExplainer`: uniform scores.
- :class:`DegreeBaseline`: each node's number of neighbours within the model's cutoff (no model gradient):
  the score an explainer must beat before it can be said to use geometry.

``z`` is the explained output of :func:`equigx.explain.target_output` (the target's logit).
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import importlib
from collections.abc import Callable, Iterator, Sequence
from typing import Any, NamedTuple, cast

import numpy as np
import torch
from e3nn import o3
from icml25_shared.random import RandomStateLike, check_random_state
from icml25_shared.validation import Interval, Options, check_params
from torch import nn

from equigx.explain import Attribution, eval_mode, is_regression, model_geometry, model_target, target_output
from equigx.graphs import Geometry, Graphs
from equigx.models import Convolution

__all__ = ["BASELINES", "CoordinateGradient", "DegreeBaseline", "GNNExplainer", "GradCAM", "InputXGradient",
           "IntegratedGradients", "LRIBernoulli", "PGExplainer", "RandomExplainer", "Saliency", "graph_forward",
           "node_embeddings"]


def _require(module: str, extra: str = "peers") -> Any:
    try:
        return importlib.import_module(module)
    except ImportError as err:  # pragma: no cover - depends on the environment
        raise ImportError(f"{module} is needed here: pip install 'equigx[{extra}]'") from err


def graph_forward(model: nn.Module, graphs: Graphs, target: torch.Tensor, geometry: Geometry) -> Any:
    """A function of stacked node features ``(B, n_nodes, F) -> (B,)``: the summed explained outputs.

    Graphs are independent, so the gradient of the sum with respect to a node's features is the gradient
    of its own graph's output. This is the form Captum's attribution methods take.

    Parameters
    ----------
    model : torch.nn.Module
        The network (``run(node_attr, geometry)``).
    graphs : Graphs
        The batch.
    target : torch.Tensor of int64, shape (n_graphs,)
        Class per graph.
    geometry : Geometry
        Precomputed edges.

    Returns
    -------
    callable
        ``f(x) -> torch.Tensor`` of shape ``(B,)``.
    """
    def forward(x: torch.Tensor) -> torch.Tensor:
        regression = is_regression(model)
        run = cast(Any, model).run
        return torch.stack([target_output(run(xb, geometry), target, regression=regression).sum() for xb in x])

    return forward


def _in_eval_mode(method: Any) -> Any:
    @functools.wraps(method)
    def wrapped(self: _Base, *args: Any, **kwargs: Any) -> Any:
        with eval_mode(self.model):
            return method(self, *args, **kwargs)

    return wrapped


_POSITIVE_INT = Interval(int, 1, None)
_POSITIVE_FLOAT = Interval(float, 0, float("inf"), closed="neither")
_NON_NEGATIVE_FLOAT = Interval(float, 0, float("inf"), closed="left")


def _leaf(x: torch.Tensor) -> torch.Tensor:
    """A detached copy of ``x`` that records gradients."""
    return x.detach().clone().requires_grad_(True)


@contextlib.contextmanager
def _convolution_hooks(model: nn.Module, hook: Callable[[Any, tuple[Any, ...], Any], None]) -> Iterator[None]:
    """``hook`` on every :class:`equigx.models.Convolution` of ``model`` while the block runs."""
    handles = [m.register_forward_hook(hook) for m in model.modules() if isinstance(m, Convolution)]
    try:
        yield
    finally:
        for h in handles:
            h.remove()


class _Base:
    name = "base"
    #: constraints (``icml25_shared.validation``) of the constructor's settings, checked before every explanation
    _parameter_constraints: dict[str, list[Any]] = {}

    def __init_subclass__(cls, **kwargs: Any) -> None:
        # every explainer explains the model in eval mode (dropout off) and restores its mode afterwards
        super().__init_subclass__(**kwargs)
        for name in ("explain", "attribute"):
            if name in cls.__dict__:
                setattr(cls, name, _in_eval_mode(cls.__dict__[name]))

    def __init__(self, model: nn.Module) -> None:
        self.model: Any = model  # a TFN-shaped module: run, check_graphs, (graph_)geometry

    def _validate(self) -> None:
        check_params({name: getattr(self, name) for name in self._parameter_constraints}, self._parameter_constraints,
                     owner=type(self).__name__)

    def _setup(self, graphs: Graphs, target: Any) -> tuple[Geometry, torch.Tensor, torch.Tensor]:
        """Validate the settings and the graphs; the geometry, the explained class and the prediction."""
        self._validate()
        self.model.check_graphs(graphs)
        geo = model_geometry(self.model, graphs)
        with torch.no_grad():
            logits = self.model.run(graphs.node_attr, geo)
        t, pred = model_target(logits, target, regression=is_regression(self.model))
        return geo, t, pred

    def _output(self, logits: torch.Tensor, t: torch.Tensor) -> torch.Tensor:
        return target_output(logits, t, regression=is_regression(self.model))

    def _output_gradient(self, t: torch.Tensor,
                         forward: Callable[[], tuple[torch.Tensor, Sequence[torch.Tensor]]]) -> tuple[torch.Tensor, ...]:
        """Gradient of the summed explained outputs with respect to the tensors ``forward`` returns beside the logits."""
        with torch.enable_grad():
            logits, inputs = forward()
            return torch.autograd.grad(self._output(logits, t).sum(), inputs)

    def _result(self, scores: torch.Tensor | np.ndarray, graphs: Graphs, t: torch.Tensor,
                pred: torch.Tensor) -> Attribution:
        s = scores.detach().cpu().numpy() if isinstance(scores, torch.Tensor) else np.asarray(scores)
        return Attribution(s.astype(np.float64), graphs.batch.numpy(), pred.cpu().numpy(), t.numpy(), self.name)


class CoordinateGradient(_Base):
    """Node score ``|d z / d pos_i|`` (Euclidean norm over x, y, z: rotation invariant).

    Parameters
    ----------
    model : torch.nn.Module
        The network.
    """

    name = "gradient"

    def explain(self, graphs: Graphs, target: Any = None) -> Attribution:
        """Scores of each node.

        Parameters
        ----------
        graphs : Graphs
            The batch.
        target : None, int or array of int, optional
            Class to explain (None: the prediction).

        Returns
        -------
        Attribution
            The scores.
        """
        _, t, pred = self._setup(graphs, target)
        pos = _leaf(graphs.pos)
        (grad,) = self._output_gradient(
            t, lambda: (self.model.run(graphs.node_attr, model_geometry(self.model, graphs, pos=pos)), [pos]))
        return self._result(grad.norm(dim=1), graphs, t, pred)


class GradCAM(_Base):
    """Node score ``sum_layers <a_i, d z / d a_i>`` over the outputs ``a`` of node-level convolutions.

    Parameters
    ----------
    model : torch.nn.Module
        The network.
    """

    name = "gradcam"

    def explain(self, graphs: Graphs, target: Any = None) -> Attribution:
        """Scores of each node.

        Parameters
        ----------
        graphs : Graphs
            The batch.
        target : None, int or array of int, optional
            Class to explain (None: the prediction).

        Returns
        -------
        Attribution
            The scores.
        """
        geo, t, pred = self._setup(graphs, target)
        acts: list[torch.Tensor] = []
        with _convolution_hooks(self.model, lambda _m, _i, o: acts.append(o)):
            # node features that record gradients, so that every activation does
            grads = self._output_gradient(t, lambda: (self.model.run(_leaf(graphs.node_attr), geo), acts))
        scores = torch.stack([(a * g).sum(dim=1) for a, g in zip(acts, grads, strict=True)]).sum(dim=0)
        return self._result(scores, graphs, t, pred)


class InputXGradient(_Base):
    """Node score ``sum_f x_if * d z / d x_if`` (node features times gradient).

    Parameters
    ----------
    model : torch.nn.Module
        The network.
    """

    name = "input_x_gradient"
    _times_input = True  # Saliency: the raw gradient

    def attribute(self, graphs: Graphs, target: Any = None) -> torch.Tensor:
        """Per-feature attributions.

        Parameters
        ----------
        graphs : Graphs
            The batch.
        target : None, int or array of int, optional
            Class to explain.

        Returns
        -------
        torch.Tensor, shape (n_nodes, n_features)
            ``x * grad``.
        """
        geo, t, _ = self._setup(graphs, target)
        return self._grad(graphs, geo, t)

    def _grad(self, graphs: Graphs, geo: Geometry, t: torch.Tensor) -> torch.Tensor:
        x = _leaf(graphs.node_attr)
        (grad,) = self._output_gradient(t, lambda: (self.model.run(x, geo), [x]))
        return x.detach() * grad if self._times_input else grad

    def explain(self, graphs: Graphs, target: Any = None) -> Attribution:
        """Scores of each node.

        Parameters
        ----------
        graphs : Graphs
            The batch.
        target : None, int or array of int, optional
            Class to explain (None: the prediction).

        Returns
        -------
        Attribution
            The scores (summed over features).
        """
        geo, t, pred = self._setup(graphs, target)
        return self._result(self._grad(graphs, geo, t).sum(dim=1), graphs, t, pred)


class Saliency(InputXGradient):
    """Node score ``sum_f d z / d x_if`` (raw gradient, signed).

    Parameters
    ----------
    model : torch.nn.Module
        The network.
    """

    name = "saliency"
    _times_input = False

    def attribute(self, graphs: Graphs, target: Any = None) -> torch.Tensor:
        """Per-feature gradients.

        Parameters
        ----------
        graphs : Graphs
            The batch.
        target : None, int or array of int, optional
            Class to explain.

        Returns
        -------
        torch.Tensor, shape (n_nodes, n_features)
            The gradient.
        """
        geo, t, _ = self._setup(graphs, target)
        return self._grad(graphs, geo, t)


class IntegratedGradients(_Base):
    """Captum's integrated gradients on node features from a zero baseline, summed over features.

    Parameters
    ----------
    model : torch.nn.Module
        The network.
    n_steps : int, default 32
        Integration steps.
    method : str, default "gausslegendre"
        Captum's integration rule (``"riemann_middle"``, ``"riemann_trapezoid"``, ...).
    """

    name = "integrated_gradients"
    _parameter_constraints = {"n_steps": [_POSITIVE_INT], "method": [Options(str, {
        "gausslegendre", "riemann_left", "riemann_right", "riemann_middle", "riemann_trapezoid"})]}

    def __init__(self, model: nn.Module, *, n_steps: int = 32, method: str = "gausslegendre") -> None:
        super().__init__(model)
        self.n_steps = n_steps
        self.method = method

    def explain(self, graphs: Graphs, target: Any = None) -> Attribution:
        """Scores of each node.

        Parameters
        ----------
        graphs : Graphs
            The batch.
        target : None, int or array of int, optional
            Class to explain (None: the prediction).

        Returns
        -------
        Attribution
            The scores.
        """
        attr = _require("captum.attr")
        geo, t, pred = self._setup(graphs, target)
        ig = attr.IntegratedGradients(graph_forward(self.model, graphs, t, geo))
        with torch.enable_grad():
            a = ig.attribute(graphs.node_attr[None].detach(), n_steps=self.n_steps, method=self.method)
        return self._result(a[0].sum(dim=1), graphs, t, pred)


class _PygModel(nn.Module):
    def __init__(self, model: nn.Module, geometry: Geometry) -> None:
        super().__init__()
        self.model: Any = model
        self.geometry = geometry

    def forward(self, x: torch.Tensor, edge_index: torch.Tensor, **kwargs: Any) -> torch.Tensor:
        return self.model.run(x, self.geometry)


class GNNExplainer(_Base):
    """torch_geometric's GNNExplainer with a learned per-node mask on the node features.

    Parameters
    ----------
    model : torch.nn.Module
        The network.
    epochs : int, default 100
        Optimisation steps (torch_geometric's default).
    lr : float, default 0.01
        Adam learning rate (torch_geometric's default).
    """

    name = "gnnexplainer"
    _parameter_constraints = {"epochs": [_POSITIVE_INT], "lr": [_POSITIVE_FLOAT]}

    def __init__(self, model: nn.Module, *, epochs: int = 100, lr: float = 0.01) -> None:
        super().__init__(model)
        self.epochs, self.lr = epochs, lr

    def explain(self, graphs: Graphs, target: Any = None) -> Attribution:
        """Scores of each node (the learned mask).

        Parameters
        ----------
        graphs : Graphs
            The batch.
        target : None, int or array of int, optional
            Class to explain (None: the prediction).

        Returns
        -------
        Attribution
            The scores.
        """
        explain = _require("torch_geometric.explain")
        geo, t, pred = self._setup(graphs, target)
        wrapper = _PygModel(self.model, geo)
        regression = is_regression(self.model)
        binary = self.model.n_out == 1 and not regression
        mode = "regression" if regression else "binary_classification" if binary else "multiclass_classification"
        config = {"mode": mode, "task_level": "graph", "return_type": "raw"}
        explainer = explain.Explainer(model=wrapper, algorithm=explain.GNNExplainer(epochs=self.epochs, lr=self.lr),
                                      explanation_type="phenomenon", node_mask_type="object", edge_mask_type=None,
                                      model_config=config)
        edge_index = torch.stack([geo.edge_src, geo.edge_dst])
        with torch.enable_grad():
            target_values = (pred[:, None].to(graphs.node_attr) if regression
                             else t[:, None].to(graphs.node_attr) if binary else t)
            result = explainer(graphs.node_attr.detach(), edge_index, target=target_values)
        return self._result(result.node_mask[:, 0], graphs, t, pred)


class DegreeBaseline(_Base):
    """Node score = number of neighbours within the model's cutoff (self-loops not counted).

    Uses no gradient and no learned weight: on a data set where the ground-truth nodes are the densely
    connected ones it scores high AUROC without looking at directions or at the model's reasoning.

    Parameters
    ----------
    model : torch.nn.Module
        The network (its radius graph and its prediction).
    """

    name = "degree"

    def explain(self, graphs: Graphs, target: Any = None) -> Attribution:
        """Degrees.

        Parameters
        ----------
        graphs : Graphs
            The batch.
        target : None, int or array of int, optional
            Class to explain (None: the prediction); the scores do not depend on it.

        Returns
        -------
        Attribution
            The degrees as scores.
        """
        geo, t, pred = self._setup(graphs, target)
        real = geo.edge_src != geo.edge_dst
        degree = torch.bincount(geo.edge_dst[real], minlength=graphs.n_nodes).to(torch.float64)
        return self._result(degree, graphs, t, pred)


class RandomExplainer(_Base):
    """Uniform random node scores.

    Parameters
    ----------
    model : torch.nn.Module
        The network (used for the prediction only).
    random_state : None, int or numpy Generator
        Source of the scores.
    """

    name = "random"
    _parameter_constraints = {"random_state": ["random_state"]}

    def __init__(self, model: nn.Module, *, random_state: RandomStateLike = None) -> None:
        super().__init__(model)
        self.random_state = random_state

    def explain(self, graphs: Graphs, target: Any = None) -> Attribution:
        """Random scores.

        Parameters
        ----------
        graphs : Graphs
            The batch.
        target : None, int or array of int, optional
            Class to explain (None: the prediction).

        Returns
        -------
        Attribution
            The scores.
        """
        _, t, pred = self._setup(graphs, target)
        rng = check_random_state(self.random_state)
        return self._result(rng.uniform(size=graphs.n_nodes), graphs, t, pred)


def node_embeddings(model: nn.Module, graphs: Graphs, geometry: Geometry) -> torch.Tensor:
    """Rotation-invariant node embeddings: the norm of every irrep block entering every convolution.

    Parameters
    ----------
    model : torch.nn.Module
        The network (its :class:`equigx.models.Convolution` parts are read).
    graphs : Graphs
        The batch.
    geometry : Geometry
        Its geometry.

    Returns
    -------
    torch.Tensor, shape (n_nodes, total blocks)
        Block norms, convolutions in forward order.
    """
    from equigx.rules import block_dot

    inputs: list[tuple[o3.Irreps, torch.Tensor]] = []
    with _convolution_hooks(model, lambda mod, args, _o: inputs.append((mod.irreps_in, args[0]))), torch.no_grad():
        cast(Any, model).run(graphs.node_attr, geometry)
    return torch.cat([block_dot(x, x, irreps).clamp(min=0).sqrt() for irreps, x in inputs], dim=1)


def _with_edge_weight(geo: Geometry, weight: torch.Tensor) -> Geometry:
    towers, start = [], 0
    for t in geo.towers:
        n = t.edge_src.shape[0]
        towers.append(dataclasses.replace(t, edge_weight=weight[start:start + n]))
        start += n
    return dataclasses.replace(geo, edge_weight=weight, towers=tuple(towers))


def _edges_to_nodes(values: torch.Tensor, geo: Geometry) -> torch.Tensor:
    """Mean of the values of the edges incident to each node (a self-loop counts once)."""
    loop = geo.edge_src == geo.edge_dst
    total = values.new_zeros(geo.n_nodes).index_add_(0, geo.edge_src, values)
    total = total.index_add_(0, geo.edge_dst[~loop], values[~loop])
    count = values.new_zeros(geo.n_nodes).index_add_(0, geo.edge_src, torch.ones_like(values))
    count = count.index_add_(0, geo.edge_dst[~loop], torch.ones_like(values[~loop]))
    return total / count.clamp(min=1)


@contextlib.contextmanager
def _frozen(model: nn.Module) -> Iterator[None]:
    params = [(p, p.requires_grad) for p in model.parameters()]
    for p, _ in params:
        p.requires_grad_(False)
    try:
        yield
    finally:
        for p, flag in params:
            p.requires_grad_(flag)


class _MaskProblem(NamedTuple):
    """What the learned-mask explainers train on."""

    geometry: Geometry
    target: torch.Tensor
    prediction: torch.Tensor
    embeddings: torch.Tensor  # standardised node embeddings of the whole batch
    net: nn.Module  # the mask network, on the embeddings' device and dtype
    generator: torch.Generator  # the sampling noise, on the embeddings' device
    chunks: list[tuple[Graphs, Geometry, torch.Tensor, torch.Tensor, torch.Tensor]]  # graphs, geometry, emb, t, ref
    rng: np.random.Generator  # the order of the chunks


class _MaskExplainer(_Base):
    """Shared set-up and training loop of the learned-mask explainers (frozen model, Adam on the mask network)."""

    _parameter_constraints = {"epochs": [_POSITIVE_INT], "lr": [_POSITIVE_FLOAT], "hidden": [_POSITIVE_INT],
                              "batch_size": [_POSITIVE_INT], "random_state": ["random_state"]}

    def __init__(self, model: nn.Module, *, epochs: int, lr: float, hidden: int, batch_size: int,
                 random_state: RandomStateLike) -> None:
        super().__init__(model)
        self.epochs, self.lr, self.hidden, self.random_state = epochs, lr, hidden, random_state
        self.batch_size = batch_size

    def _fit_loss(self, logits: torch.Tensor, t: torch.Tensor, reference: torch.Tensor) -> torch.Tensor:
        if is_regression(self.model):
            return nn.functional.mse_loss(logits[:, 0], reference[:, 0])
        if logits.shape[1] == 1:
            return nn.functional.binary_cross_entropy_with_logits(logits[:, 0], t.to(logits))
        return nn.functional.cross_entropy(logits, t)

    def _problem(self, graphs: Graphs, target: Any, n_in: int) -> _MaskProblem:
        """Geometry, targets, standardised embeddings, the mask network, a generator and training chunks."""
        geo, t, pred = self._setup(graphs, target)
        emb = node_embeddings(self.model, graphs, geo)
        mean = emb.mean(dim=0, keepdim=True)
        std = emb.std(dim=0, keepdim=True) if emb.shape[0] > 1 else torch.ones_like(emb[:1])

        def standardise(e: torch.Tensor) -> torch.Tensor:
            return torch.where(std > 1e-12, (e - mean) / std.clamp(min=1e-12), 0.0)

        with torch.no_grad():
            reference = self.model.run(graphs.node_attr, geo)
        chunks = []
        for start in range(0, graphs.n_graphs, self.batch_size):
            idx = list(range(start, min(start + self.batch_size, graphs.n_graphs)))
            sub = graphs.select(idx)
            sub_geo = model_geometry(self.model, sub)
            chunks.append((sub, sub_geo, standardise(node_embeddings(self.model, sub, sub_geo)), t[idx],
                           reference[idx]))
        rng = check_random_state(self.random_state)
        gen = torch.Generator(device=emb.device).manual_seed(int(rng.integers(2**63 - 1)))  # draws on emb's device
        with torch.random.fork_rng(devices=[]):  # the explainer's initial weights, the caller's generator untouched
            torch.manual_seed(int(rng.integers(2**63 - 1)))
            net = nn.Sequential(nn.Linear(n_in * emb.shape[1], self.hidden), nn.ReLU(), nn.Linear(self.hidden, 1))
        return _MaskProblem(geo, t, pred, standardise(emb), net.to(device=emb.device, dtype=emb.dtype), gen, chunks,
                            rng)

    def _optimise(self, problem: _MaskProblem, loss: Callable[..., torch.Tensor]) -> None:
        """Adam on the mask network, the model frozen: one step per chunk, chunks in random order every epoch.

        ``loss(epoch, graphs, geometry, embeddings, target, reference)`` is the loss of one chunk.
        """
        opt = torch.optim.Adam(problem.net.parameters(), lr=self.lr)
        with torch.enable_grad(), _frozen(self.model):
            for epoch in range(self.epochs):
                for k in problem.rng.permutation(len(problem.chunks)):
                    value = loss(epoch, *problem.chunks[k])
                    opt.zero_grad()
                    value.backward()
                    opt.step()


class PGExplainer(_MaskExplainer):
    """PGExplainer (Luo et al., NeurIPS 2020): an MLP on endpoint embeddings predicts an edge mask.

    The MLP reads ``[h_src | h_dst]`` (:func:`node_embeddings`, rotation invariant), its logits are
    sampled as binary-concrete variables with a temperature annealed from 5 to 2, and the sampled mask
    weighs every message of every convolution. The loss is the cross-entropy of the masked model to the
    explained class plus ``edge_size * sum(mask)`` per graph and ``edge_ent * mean(entropy(mask))``
    (torch_geometric's constants). It is trained on the graphs it explains, one step per ``batch_size``
    graphs, in random order each epoch; a node's score is the mean mask of its edges.

    Parameters
    ----------
    model : torch.nn.Module
        The network (frozen).
    epochs : int, default 30
        Passes over the batch.
    lr : float, default 0.003
        Adam learning rate.
    hidden : int, default 64
        Width of the mask MLP.
    edge_size, edge_ent : float, default 0.05 and 1.0
        Regulariser weights.
    temperature : tuple of float, default (5.0, 2.0)
        First and last temperature.
    batch_size : int, default 1
        Graphs per optimisation step (torch_geometric steps once per graph).
    random_state : None, int or numpy Generator
        Initialisation, sampling and the order of the graphs.
    """

    name = "pgexplainer"

    def __init__(self, model: nn.Module, *, epochs: int = 30, lr: float = 0.003, hidden: int = 64,
                 edge_size: float = 0.05, edge_ent: float = 1.0, temperature: tuple[float, float] = (5.0, 2.0),
                 batch_size: int = 1, random_state: RandomStateLike = 0) -> None:
        super().__init__(model, epochs=epochs, lr=lr, hidden=hidden, batch_size=batch_size,
                         random_state=random_state)
        self.edge_size, self.edge_ent, self.temperature = edge_size, edge_ent, temperature

    _parameter_constraints = {**_MaskExplainer._parameter_constraints, "edge_size": [_NON_NEGATIVE_FLOAT],
                              "edge_ent": [_NON_NEGATIVE_FLOAT]}

    def _validate(self) -> None:
        super()._validate()
        # a pair: no declarative constraint expresses it
        temps = self.temperature
        if not isinstance(temps, tuple | list) or len(temps) != 2 or not all(_POSITIVE_FLOAT.accepts_type(v)
                                                                          for v in temps):
            raise TypeError(f"PGExplainer: temperature must be a pair of floats (first, last); got {temps!r}")
        if not all(_POSITIVE_FLOAT(v) for v in temps):
            raise ValueError(f"PGExplainer: temperature must be a pair of positive finite floats (first, last); "
                             f"got {temps!r}")

    def edge_mask(self, graphs: Graphs, target: Any = None) -> tuple[torch.Tensor, Geometry, torch.Tensor,
                                                                     torch.Tensor]:
        """Train the mask network on ``graphs`` and return the edge mask.

        Parameters
        ----------
        graphs : Graphs
            The batch.
        target : None, int or array of int, optional
            Class to explain (None: the prediction).

        Returns
        -------
        tuple
            ``(mask (n_edges,) in [0, 1], geometry, target, prediction)``.
        """
        problem = self._problem(graphs, target, 2)
        net, t0, t1 = problem.net, *self.temperature
        bias = 0.01

        def loss(epoch: int, sub: Graphs, sub_geo: Geometry, sub_emb: torch.Tensor, sub_t: torch.Tensor,
                 sub_ref: torch.Tensor) -> torch.Tensor:
            temp = t0 * (t1 / t0) ** (epoch / self.epochs)
            logits = net(torch.cat([sub_emb[sub_geo.edge_src], sub_emb[sub_geo.edge_dst]], dim=1))[:, 0]
            u = (1 - 2 * bias) * torch.rand(logits.shape, generator=problem.generator, dtype=logits.dtype,
                                            device=logits.device) + bias
            mask = ((u.log() - (1 - u).log() + logits) / temp).sigmoid()
            out = self.model.run(sub.node_attr, _with_edge_weight(sub_geo, mask))
            ent = -mask * (mask + 1e-15).log() - (1 - mask) * (1 - mask + 1e-15).log()
            return (self._fit_loss(out, sub_t, sub_ref) + self.edge_size * mask.sum() / sub.n_graphs
                    + self.edge_ent * ent.mean())

        self._optimise(problem, loss)
        geo, emb = problem.geometry, problem.embeddings
        with torch.no_grad():
            mask = net(torch.cat([emb[geo.edge_src], emb[geo.edge_dst]], dim=1))[:, 0].sigmoid()
        return mask, geo, problem.target, problem.prediction

    def explain(self, graphs: Graphs, target: Any = None) -> Attribution:
        """Scores of each node (mean mask of its edges).

        Parameters
        ----------
        graphs : Graphs
            The batch.
        target : None, int or array of int, optional
            Class to explain (None: the prediction).

        Returns
        -------
        Attribution
            The scores.
        """
        mask, geo, t, pred = self.edge_mask(graphs, target)
        return self._result(_edges_to_nodes(mask, geo), graphs, t, pred)


class LRIBernoulli(_MaskExplainer):
    """LRI-Bernoulli (Miao et al., ICML 2023) on a frozen model: learned point-wise keep probabilities.

    An MLP on :func:`node_embeddings` gives each point a logit; binary-concrete samples ``m_i`` (temperature
    1) weigh each message by ``m_src m_dst``. The loss is the cross-entropy of the masked model to the
    explained class plus ``info_coef`` times the mean KL divergence of ``Bernoulli(p_i)`` from
    ``Bernoulli(r)``, with ``r`` lowered from ``init_r`` by ``decay_r`` every ``decay_interval`` epochs down to
    ``final_r``. The node score is ``p_i``. The paper trains the predictor together with the extractor; here the
    model stays fixed, as for the other post-hoc explainers.

    Parameters
    ----------
    model : torch.nn.Module
        The network (frozen).
    epochs : int, default 30
        Passes over the batch.
    lr : float, default 0.003
        Adam learning rate.
    hidden : int, default 64
        Width of the extractor MLP.
    info_coef : float, default 1.0
        Weight of the KL term.
    init_r, final_r, decay_r : float, default 0.9, 0.7, 0.1
        Prior keep probability schedule.
    decay_interval : int, default 10
        Epochs between prior decays.
    temperature : float, default 1.0
        Concrete temperature.
    batch_size : int, default 1
        Graphs per optimisation step.
    random_state : None, int or numpy Generator
        Initialisation, sampling and the order of the graphs.
    """

    name = "lri_bernoulli"

    def __init__(self, model: nn.Module, *, epochs: int = 30, lr: float = 0.003, hidden: int = 64,
                 info_coef: float = 1.0, init_r: float = 0.9, final_r: float = 0.7, decay_r: float = 0.1,
                 decay_interval: int = 10, temperature: float = 1.0, batch_size: int = 1,
                 random_state: RandomStateLike = 0) -> None:
        super().__init__(model, epochs=epochs, lr=lr, hidden=hidden, batch_size=batch_size,
                         random_state=random_state)
        self.info_coef, self.init_r, self.final_r, self.decay_r = info_coef, init_r, final_r, decay_r
        self.decay_interval, self.temperature = decay_interval, temperature

    _parameter_constraints = {**_MaskExplainer._parameter_constraints, "info_coef": [_NON_NEGATIVE_FLOAT],
                              "init_r": [Interval(float, 0, 1, closed="neither")],
                              "final_r": [Interval(float, 0, 1, closed="neither")], "decay_r": [_NON_NEGATIVE_FLOAT],
                              "decay_interval": [_POSITIVE_INT], "temperature": [_POSITIVE_FLOAT]}

    def _validate(self) -> None:
        super()._validate()
        if self.final_r > self.init_r:  # a relation between two settings: no declarative constraint expresses it
            raise ValueError(f"LRIBernoulli: final_r must be <= init_r ({self.init_r}); got {self.final_r}")

    def prior(self, epoch: int) -> float:
        """Prior keep probability ``r`` at an epoch.

        Parameters
        ----------
        epoch : int
            Epoch (from 0).

        Returns
        -------
        float
            ``max(final_r, init_r - (epoch // decay_interval) * decay_r)``.
        """
        return max(self.final_r, self.init_r - (epoch // self.decay_interval) * self.decay_r)

    @staticmethod
    def info_loss(p: torch.Tensor, r: float) -> torch.Tensor:
        """Mean KL divergence of ``Bernoulli(p)`` from ``Bernoulli(r)``.

        Parameters
        ----------
        p : torch.Tensor
            Keep probabilities in (0, 1).
        r : float
            Prior keep probability in (0, 1).

        Returns
        -------
        torch.Tensor
            A scalar.
        """
        return (p * (p / r + 1e-6).log() + (1 - p) * ((1 - p) / (1 - r) + 1e-6).log()).mean()

    def explain(self, graphs: Graphs, target: Any = None) -> Attribution:
        """Scores of each node (its learned keep probability).

        Parameters
        ----------
        graphs : Graphs
            The batch.
        target : None, int or array of int, optional
            Class to explain (None: the prediction).

        Returns
        -------
        Attribution
            The scores.
        """
        problem = self._problem(graphs, target, 1)
        net = problem.net

        def loss(epoch: int, sub: Graphs, sub_geo: Geometry, sub_emb: torch.Tensor, sub_t: torch.Tensor,
                 sub_ref: torch.Tensor) -> torch.Tensor:
            logits = net(sub_emb)[:, 0]
            u = torch.empty(logits.shape, dtype=logits.dtype, device=logits.device).uniform_(
                1e-10, 1 - 1e-10, generator=problem.generator)
            m = ((logits + u.log() - (1 - u).log()) / self.temperature).sigmoid()
            out = self.model.run(sub.node_attr, _with_edge_weight(sub_geo, m[sub_geo.edge_src] * m[sub_geo.edge_dst]))
            return (self._fit_loss(out, sub_t, sub_ref)
                    + self.info_coef * self.info_loss(logits.sigmoid(), self.prior(epoch)))

        self._optimise(problem, loss)
        with torch.no_grad():
            scores = net(problem.embeddings)[:, 0].sigmoid()
        return self._result(scores, graphs, problem.target, problem.prediction)


BASELINES: dict[str, type] = {c.name: c for c in (CoordinateGradient, GradCAM, InputXGradient, Saliency,
                                                    IntegratedGradients, GNNExplainer, PGExplainer, LRIBernoulli,
                                                    RandomExplainer, DegreeBaseline)}
