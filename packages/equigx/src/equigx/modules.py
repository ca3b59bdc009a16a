"""Relevance through any ``torch.nn.Module`` built from e3nn blocks, by rules registered per module type.

:class:`ModuleEquiGX` explains a model that is not shaped like :class:`equigx.TFN` (no ``layers`` list, its own
message passing), e.g. e3nn's ``gate_points_2101.Network``: as zennit's composites do, it attaches a rule to
every module of a registered type (``TensorProduct`` and ``FullyConnectedTensorProduct``, ``o3.Linear``,
``Gate``, ``NormActivation``, e3nn's ``Activation``, ``FullyConnectedNet``, ``torch.nn.Linear`` and elementwise
activations) and differentiates the code between them; any other leaf module called on the node features
(``nn.Softplus``, ``nn.LayerNorm``, a custom module) is refused by name until a rule is registered for it.

How relevance flows: a registered module's output ``y`` receives a message ``c`` (the gradient of the
explained output through the code after it), its relevance per irrep block is ``<y, c>``, its rule maps that
to its inputs' block relevance ``R_x``, and the message to the code before it is ``c_x = x R_x / (|x|^2 +
eps)`` per block. Code between modules must be linear in the node features (indexing ``x[src]``, scatter or
``index_add`` sums, scaling by constants, residual sums): for such code this is the z-rule, block by block
(each summand ``a`` of ``y = a + b`` gets ``<a, c_y>``). A tensor product gives its relevance to the
arguments that depend on the explained node features (equal shares when several do): edge harmonics, radial
weights and node attributes are conditions, not sources. Parameters are frozen while explaining, so "depends
on" means "requires a gradient".
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch
from e3nn import o3
from e3nn.nn import Activation, FullyConnectedNet, Gate, NormActivation
from torch import nn

from equigx.models import SumPool
from equigx.rules import (
    _fcnet_rule,
    _gate_rule,
    block_dot,
    epsilon_rule,
    expand_blocks,
    linear_rule,
    normact_rule,
)

__all__ = ["MODULE_RULES", "ModuleEquiGX", "ModuleExplanation", "ModuleRule", "register_module_rule"]


@dataclass(frozen=True)
class ModuleRule:
    """A relevance rule for one module type.

    Attributes
    ----------
    rule : callable
        ``rule(module, inputs, output, relevance, eps) -> list`` of block relevance per input (None for an
        input that gets none); ``relevance`` has one column per output block.
    irreps : callable
        ``irreps(module, inputs, output) -> (list of input irreps or None, output irreps)``.
    """

    rule: Callable[..., list[torch.Tensor | None]]
    irreps: Callable[..., tuple[list[o3.Irreps | None], o3.Irreps]]


MODULE_RULES: dict[type, ModuleRule] = {}


def register_module_rule(module_type: type, rule: Callable[..., list[torch.Tensor | None]],
                         irreps: Callable[..., tuple[list[o3.Irreps | None], o3.Irreps]]) -> None:
    """Register the rule of a module type (and its subclasses) for :class:`ModuleEquiGX`.

    Parameters
    ----------
    module_type : type
        A ``torch.nn.Module`` subclass.
    rule : callable
        ``rule(module, inputs, output, relevance, eps)``: see :class:`ModuleRule`.
    irreps : callable
        ``irreps(module, inputs, output) -> (input irreps, output irreps)``.
    """
    MODULE_RULES[module_type] = ModuleRule(rule, irreps)


def _find(module: nn.Module) -> ModuleRule | None:
    for cls in type(module).__mro__:
        if cls in MODULE_RULES:
            return MODULE_RULES[cls]
    return None


def _scalars(n: int) -> o3.Irreps:
    return o3.Irreps(f"{n}x0e")


def _tp_rule(tp: o3.TensorProduct, inputs: Sequence[torch.Tensor], output: torch.Tensor, relevance: torch.Tensor,
             eps: float) -> list[torch.Tensor | None]:
    x1, x2 = inputs[0], inputs[1]
    weight = inputs[2] if len(inputs) > 2 and inputs[2] is not None else None
    sources = [k for k, t in enumerate((x1, x2)) if t.requires_grad]
    out: list[torch.Tensor | None] = [None] * len(inputs)
    if not sources:
        return out
    args = [x1.detach().requires_grad_(0 in sources), x2.detach().requires_grad_(1 in sources)]
    if weight is not None:
        args.append(weight.detach())
    with torch.enable_grad():
        y = tp(*args)
        c = (y * expand_blocks(relevance / (block_dot(y, y, tp.irreps_out) + eps), tp.irreps_out)).detach()
        grads = torch.autograd.grad((y * c).sum(), [args[k] for k in sources])
    for k, g in zip(sources, grads, strict=True):
        irreps = tp.irreps_in1 if k == 0 else tp.irreps_in2
        # bilinear: each argument alone would receive the whole; several sources share it equally
        out[k] = block_dot(args[k].detach(), g, irreps) / len(sources)
    return out


register_module_rule(o3.TensorProduct, _tp_rule,
                     lambda m, inputs, y: ([m.irreps_in1, m.irreps_in2, None][:len(inputs)], m.irreps_out))
register_module_rule(o3.Linear, lambda m, inputs, y, r, eps: [linear_rule(m, inputs[0], r, eps=eps)],
                     lambda m, inputs, y: ([m.irreps_in], m.irreps_out))
register_module_rule(NormActivation, lambda m, inputs, y, r, eps: [normact_rule(m, inputs[0], r, eps=eps)],
                     lambda m, inputs, y: ([m.irreps_in], m.irreps_out))
register_module_rule(Gate, lambda m, inputs, y, r, eps: [_gate_rule(m, inputs[0], y, r, None)],
                     lambda m, inputs, y: ([m.irreps_in], m.irreps_out))
register_module_rule(FullyConnectedNet, lambda m, inputs, y, r, eps: [_fcnet_rule(m, inputs[0], r, eps)],
                     lambda m, inputs, y: ([_scalars(inputs[0].shape[-1])], _scalars(y.shape[-1])))
register_module_rule(nn.Linear, lambda m, inputs, y, r, eps: [epsilon_rule(m, inputs[0], r, eps=eps)],
                     lambda m, inputs, y: ([_scalars(m.in_features)], _scalars(m.out_features)))
for _elementwise in (nn.ReLU, nn.SiLU, nn.Tanh, nn.Sigmoid, nn.Identity, nn.Dropout, nn.LeakyReLU, nn.GELU):
    register_module_rule(_elementwise, lambda m, inputs, y, r, eps: [r],
                         lambda m, inputs, y: ([_scalars(y.shape[-1])], _scalars(y.shape[-1])))
register_module_rule(Activation, lambda m, inputs, y, r, eps: [r],
                     lambda m, inputs, y: ([m.irreps_in], m.irreps_out))

_SHAPE_ONLY = (nn.Flatten, nn.Unflatten, SumPool)
"""Leaf modules without a rule that reshape or sum (differentiated like the code between modules); any other
unregistered leaf module called on the node features is refused: a nonlinearity (``nn.Softplus``, a norm)
differentiated as if it were linear gives relevance that silently breaks the rules' conservation."""


class _Boundary(torch.autograd.Function):
    """Identity on a registered module's output whose backward applies the module's rule."""

    @staticmethod
    def forward(ctx: Any, info: tuple, output: torch.Tensor, *inputs: torch.Tensor) -> torch.Tensor:
        ctx.info = info
        ctx.save_for_backward(output, *inputs)
        return output.clone()

    @staticmethod
    def backward(ctx: Any, message: torch.Tensor) -> tuple[torch.Tensor | None, ...]:
        module, rule, eps, requires, state = ctx.info
        output, *inputs = ctx.saved_tensors
        inputs = [x.requires_grad_(r) if x is not None else None for x, r in zip(inputs, requires, strict=True)]
        irreps_in, irreps_out = rule.irreps(module, inputs, output)
        relevance = block_dot(output, message, irreps_out)
        state["inside_rule"] = True  # a rule may call its module again: no boundary inside a rule
        try:
            with torch.no_grad():
                r_in = rule.rule(module, inputs, output, relevance, eps)
        finally:
            state["inside_rule"] = False
        grads: list[torch.Tensor | None] = []
        for x, irreps, r, need in zip(inputs, irreps_in + [None] * (len(inputs) - len(irreps_in)),
                                      r_in + [None] * (len(inputs) - len(r_in)), ctx.needs_input_grad[2:], strict=True):
            if r is None or irreps is None or not need:
                grads.append(None)
                continue
            x = x.detach()
            grads.append(x * expand_blocks(r / (block_dot(x, x, irreps) + eps), irreps))
        return (None, None, *grads)


@dataclass
class ModuleExplanation:
    """Node relevance of a module explained by :class:`ModuleEquiGX`.

    Attributes
    ----------
    node_relevance : numpy.ndarray, shape (n_nodes,)
        Relevance of each node's input features (sum over its irrep blocks).
    node_relevance_by_block : numpy.ndarray, shape (n_nodes, irreps.num_irreps)
        The same per input irrep block.
    output : numpy.ndarray, shape (n_rows,)
        The explained value of each output row (one column of the output).
    attributed : numpy.ndarray, shape (n_rows,)
        Relevance summed over the nodes of each row (needs ``batch``; rows are graphs).
    leak : numpy.ndarray, shape (n_rows,)
        ``output - attributed``: what biases and stabilisers kept.
    """

    node_relevance: np.ndarray
    node_relevance_by_block: np.ndarray
    output: np.ndarray
    attributed: np.ndarray
    leak: np.ndarray


class ModuleEquiGX:
    """EquiGX relevance for any module built from e3nn blocks (rules per module type; see the module docstring).

    Parameters
    ----------
    model : torch.nn.Module
        The network. Every leaf module that it calls on the path of the node features must have a rule
        (:data:`MODULE_RULES`, :func:`register_module_rule`), except ``nn.Flatten``, ``nn.Unflatten`` and
        :class:`equigx.models.SumPool`; a
        registered module's children are not visited.
    eps : float, default 1e-9
        Stabiliser of every division.

    Examples
    --------
    >>> import torch
    >>> from e3nn.nn.models.gate_points_2101 import Network
    >>> from equigx.modules import ModuleEquiGX
    >>> _ = torch.manual_seed(0)
    >>> net = Network(irreps_in="2x0e", irreps_hidden="4x0e+4x0o+2x1e+2x1o", irreps_out="1x0e",
    ...               irreps_node_attr=None, irreps_edge_attr="0e+1o+2e", layers=2, max_radius=2.0,
    ...               number_of_basis=5, radial_layers=1, radial_neurons=8, num_neighbors=3.0, num_nodes=6.0).double()
    >>> pos, x = torch.randn(6, 3, dtype=torch.float64), torch.eye(2, dtype=torch.float64)[[0, 1, 0, 0, 1, 1]]
    >>> exp = ModuleEquiGX(net, eps=1e-14).explain(lambda h: net({"pos": pos, "x": h}), x, "2x0e")
    >>> exp.node_relevance.shape, bool(abs(exp.leak[0]) < 1e-6 * abs(exp.output[0]))
    ((6,), True)
    """

    def __init__(self, model: nn.Module, *, eps: float = 1e-9) -> None:
        self.model = model
        self.eps = eps
        self._state = {"inside_rule": False}

    def explain(self, forward: Callable[[torch.Tensor], torch.Tensor], node_features: torch.Tensor,
                irreps: str | o3.Irreps, *, target: int = 0, batch: torch.Tensor | None = None) -> ModuleExplanation:
        """Relevance of each node's features for one output column.

        Parameters
        ----------
        forward : callable
            ``forward(node_features) -> output`` runs the model on the batch (e.g. ``lambda h: net({"pos": pos,
            "x": h})``); output of shape (n_rows, n_columns): graphs, or nodes for a node-level model.
        node_features : torch.Tensor, shape (n_nodes, irreps.dim)
            The node input features.
        irreps : str or e3nn.o3.Irreps
            Their irreps.
        target : int, default 0
            The explained output column (a scalar ``0e`` channel for an invariant explanation).
        batch : torch.Tensor of int64, shape (n_nodes,), optional
            Graph of each node, to add relevance up per output row (default: all nodes in row 0 when there is
            one row, else node i in row i).

        Returns
        -------
        ModuleExplanation
            Node relevance, the explained output and the leak.

        Raises
        ------
        TypeError
            When the model calls, on the node path, a leaf module with no rule (the message names
            it).
        ValueError
            When ``node_features`` does not match ``irreps`` or ``target`` is not a column of the output.
        """
        irreps = o3.Irreps(irreps)
        if not isinstance(self.eps, (int, float)) or isinstance(self.eps, bool) or not self.eps > 0:
            raise ValueError(f"ModuleEquiGX: eps must be a positive float; got {self.eps!r}")
        if node_features.ndim != 2 or node_features.shape[1] != irreps.dim:
            raise ValueError(f"ModuleEquiGX: node_features must have shape (n_nodes, {irreps.dim}) for irreps "
                             f"{irreps}; got {tuple(node_features.shape)}")
        x = node_features.detach().clone().requires_grad_(True)
        frozen = [(p, p.requires_grad) for p in self.model.parameters()]
        modes = [(m, m.training) for m in self.model.modules()]
        handles = self._attach()
        try:
            for p, _ in frozen:
                p.requires_grad_(False)
            self.model.eval()
            with torch.enable_grad():
                out = forward(x)
                if out.ndim != 2 or not 0 <= target < out.shape[1]:
                    raise ValueError(f"ModuleEquiGX: target must be a column of the output of shape "
                                     f"{tuple(out.shape)}; got {target!r}")
                value = out[:, target].detach()
                message = torch.zeros_like(out)
                message[:, target] = value * value / (value * value + self.eps)  # c = y R / (y^2 + eps), R = y
                (grad,) = torch.autograd.grad(out, x, message, allow_unused=True)
        finally:
            for h in handles:
                h.remove()
            for p, flag in frozen:
                p.requires_grad_(flag)
            for m, flag in modes:
                m.training = flag
        if grad is None:
            grad = torch.zeros_like(x)
        by_block = block_dot(x.detach(), grad, irreps)
        node = by_block.sum(dim=1)
        n_rows = out.shape[0]
        if batch is None:
            batch = torch.zeros(len(node), dtype=torch.long) if n_rows == 1 else torch.arange(len(node))
        attributed = node.new_zeros(n_rows).index_add_(0, batch.to(node.device), node)
        np64 = lambda a: a.detach().cpu().numpy()  # noqa: E731
        return ModuleExplanation(np64(node), np64(by_block), np64(value), np64(attributed), np64(value - attributed))

    def _attach(self) -> list[Any]:
        handles: list[Any] = []
        ruled: set[int] = set()

        def visit(module: nn.Module, inside: bool) -> None:
            rule = _find(module)
            if rule is not None and not inside:
                ruled.add(id(module))
                handles.append(module.register_forward_hook(self._hook(module, rule), with_kwargs=True))
            elif not inside and not list(module.children()) and not isinstance(module, _SHAPE_ONLY):
                handles.append(module.register_forward_pre_hook(_refuse_unruled, with_kwargs=True))
            for child in module.children():
                visit(child, inside or rule is not None)

        visit(self.model, False)
        return handles

    def _hook(self, module: nn.Module, rule: ModuleRule) -> Callable[..., torch.Tensor | None]:
        eps = float(self.eps)

        state = self._state

        def hook(mod: nn.Module, args: tuple, kwargs: dict, output: Any) -> torch.Tensor | None:
            tensors = [a for a in (*args, *kwargs.values()) if isinstance(a, torch.Tensor)]
            if state["inside_rule"] or not isinstance(output, torch.Tensor) or not any(t.requires_grad for t in tensors):
                return None  # off the node path (e.g. the radial network on edge lengths), or a rule's own call
            requires = tuple(t.requires_grad for t in tensors)
            return _Boundary.apply((mod, rule, eps, requires, state), output.detach(), *tensors)

        return hook


def _refuse_unruled(module: nn.Module, args: tuple, kwargs: dict) -> None:
    if torch.is_grad_enabled() and any(isinstance(a, torch.Tensor) and a.requires_grad for a in (*args, *kwargs.values())):
        raise TypeError(f"ModuleEquiGX: module {type(module).__module__}.{type(module).__name__} is called on the "
                        "node features but has no relevance rule; register one with "
                        "equigx.modules.register_module_rule")
