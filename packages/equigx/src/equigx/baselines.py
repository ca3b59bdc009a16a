"""Baseline explainers behind EquiGX's interface: ``explain(graphs, target=None) -> Attribution``.

- :class:`CoordinateGradient`: ``|d z / d pos_i|`` (the reference code's gradient baseline).
- :class:`GradCAM`: ``sum over interaction layers of <activation_i, d z / d activation_i>``.
- :class:`InputXGradient`, :class:`Saliency`: node features times gradient / raw gradient, summed over
  features (equal to Captum's ``InputXGradient`` and ``Saliency(abs=False)``).
- :class:`IntegratedGradients`: Captum's, on node features from a zero baseline (needs ``captum``).
- :class:`GNNExplainer`: torch_geometric's, a learned node mask (needs ``torch_geometric``).
- :class:`RandomExplainer`: uniform scores.

``z`` is the explained output of :func:`equigx.explain.target_output` (the target's logit).
"""

from __future__ import annotations

import functools
import importlib
from typing import Any

import numpy as np
import torch
from icml25_shared.random import RandomStateLike, check_random_state
from torch import nn

from equigx.explain import Attribution, eval_mode, model_target, target_output
from equigx.graphs import Geometry, Graphs
from equigx.models import Convolution

__all__ = ["BASELINES", "CoordinateGradient", "GNNExplainer", "GradCAM", "InputXGradient", "IntegratedGradients",
           "RandomExplainer", "Saliency", "graph_forward"]


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
        return torch.stack([target_output(model.run(xb, geometry), target).sum() for xb in x])

    return forward


def _in_eval_mode(method: Any) -> Any:
    @functools.wraps(method)
    def wrapped(self: _Base, *args: Any, **kwargs: Any) -> Any:
        with eval_mode(self.model):
            return method(self, *args, **kwargs)

    return wrapped


class _Base:
    name = "base"

    def __init_subclass__(cls, **kwargs: Any) -> None:
        # every explainer explains the model in eval mode (dropout off) and restores its mode afterwards
        super().__init_subclass__(**kwargs)
        for name in ("explain", "attribute"):
            if name in cls.__dict__:
                setattr(cls, name, _in_eval_mode(cls.__dict__[name]))

    def __init__(self, model: nn.Module) -> None:
        self.model = model

    def _setup(self, graphs: Graphs, target: Any) -> tuple[Geometry, torch.Tensor, torch.Tensor]:
        self.model.check_graphs(graphs)
        geo = self.model.geometry(graphs.pos, graphs.batch, graphs.n_graphs)
        with torch.no_grad():
            logits = self.model.run(graphs.node_attr, geo)
        t, pred = model_target(logits, target)
        return geo, t, pred

    def _result(self, scores: torch.Tensor | np.ndarray, graphs: Graphs, t: torch.Tensor,
                pred: torch.Tensor) -> Attribution:
        s = scores.detach().cpu().numpy() if isinstance(scores, torch.Tensor) else np.asarray(scores)
        return Attribution(s.astype(np.float64), graphs.batch.numpy(), pred.numpy(), t.numpy(), self.name)


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
        pos = graphs.pos.detach().clone().requires_grad_(True)
        with torch.enable_grad():
            geo = self.model.geometry(pos, graphs.batch, graphs.n_graphs)
            out = target_output(self.model.run(graphs.node_attr, geo), t).sum()
            (grad,) = torch.autograd.grad(out, pos)
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
        hooks = [m.register_forward_hook(lambda _m, _i, o: acts.append(o)) for m in self.model.layers
                 if isinstance(m, Convolution)]
        try:
            with torch.enable_grad():
                x = graphs.node_attr.detach().clone().requires_grad_(True)
                out = target_output(self.model.run(x, geo), t).sum()
                grads = torch.autograd.grad(out, acts)
        finally:
            for h in hooks:
                h.remove()
        scores = sum((a * g).sum(dim=1) for a, g in zip(acts, grads, strict=True))
        return self._result(scores, graphs, t, pred)


class InputXGradient(_Base):
    """Node score ``sum_f x_if * d z / d x_if`` (node features times gradient).

    Parameters
    ----------
    model : torch.nn.Module
        The network.
    """

    name = "input_x_gradient"

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
        return self._grad(graphs, geo, t, times_input=True)

    def _grad(self, graphs: Graphs, geo: Geometry, t: torch.Tensor, *, times_input: bool) -> torch.Tensor:
        x = graphs.node_attr.detach().clone().requires_grad_(True)
        with torch.enable_grad():
            out = target_output(self.model.run(x, geo), t).sum()
            (grad,) = torch.autograd.grad(out, x)
        return x.detach() * grad if times_input else grad

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
        return self._result(self._grad(graphs, geo, t, times_input=self.name != "saliency").sum(dim=1), graphs, t, pred)


class Saliency(InputXGradient):
    """Node score ``sum_f d z / d x_if`` (raw gradient, signed).

    Parameters
    ----------
    model : torch.nn.Module
        The network.
    """

    name = "saliency"

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
        return self._grad(graphs, geo, t, times_input=False)


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
        self.model = model
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
        binary = self.model.n_out == 1
        config = {"mode": "binary_classification" if binary else "multiclass_classification", "task_level": "graph",
                  "return_type": "raw"}
        explainer = explain.Explainer(model=wrapper, algorithm=explain.GNNExplainer(epochs=self.epochs, lr=self.lr),
                                      explanation_type="phenomenon", node_mask_type="object", edge_mask_type=None,
                                      model_config=config)
        edge_index = torch.stack([geo.edge_src, geo.edge_dst])
        with torch.enable_grad():
            result = explainer(graphs.node_attr.detach(), edge_index, target=t[:, None].to(graphs.node_attr)
                               if binary else t)
        return self._result(result.node_mask[:, 0], graphs, t, pred)


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


BASELINES: dict[str, type] = {c.name: c for c in (CoordinateGradient, GradCAM, InputXGradient, Saliency,
                                                    IntegratedGradients, GNNExplainer, RandomExplainer)}
