"""Relevance rules (deep Taylor / LRP) for the parts of an e3nn network, in a registry keyed by module type.

Relevance is kept per irrep *block* (one copy of one irrep, ``2l+1`` components) so that every rule is
equivariant: wherever an LRP rule divides by an output ``z``, the rule here divides the block's
relevance by ``|z|^2 + eps`` and weighs each contribution by its inner product with ``z``. For scalar
blocks this is the usual ratio ``z_ij / z_j``; for ``l >= 1`` it is rotation invariant, so node relevances
do not change when the input is rotated. Rules:

- ``Convolution``: scatter-sum by the z-rule, then the tensor product by first-order Taylor
  (``x * d/dx <TP(x, Y, W), c>``, root ``x`` or ``0``); with ``variant="split"`` one third each to node
  features, edge spherical harmonics and radial weights, the last propagated through the radial
  ``FullyConnectedNet`` by the z-rule down to the radial basis (the distances).
- ``e3nn.o3.Linear``: per-path z-rule per irrep block (a bias takes its share: leak).
- ``e3nn.nn.NormActivation``: ``R / scaling`` renormalised per node to the incoming total (``norm_rule
  ="rescale"``), or passed through (``"identity"``).
- ``e3nn.nn.Gate``: relevance passes to the scalars and to the gated signal; the gates get none.
- ``SumPool``: z-rule from graphs to nodes.
- ``torch.nn.Linear``: LRP-epsilon (zennit's stabiliser ``z + eps * (sign(z) + (z == 0))``); elementwise
  activations pass relevance through.

Use :func:`register_rule` to add a rule for another module type.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any, Literal

import torch
from e3nn import o3
from e3nn.nn import FullyConnectedNet, Gate, NormActivation
from torch import nn

from equigx.graphs import Geometry, scatter_sum
from equigx.models import Convolution, GraphLayer, SumPool, Towers

__all__ = ["RULES", "RuleContext", "block_dot", "epsilon_rule", "expand_blocks", "find_rule", "gamma_rule", "linear_rule",
           "normact_rule",
           "register_rule", "scatter_rule", "stabilize", "tensor_product_rule"]

Rule = Callable[..., torch.Tensor]  # (module, x_in, y_out, R_out, ctx) -> R_in; modules are subclasses
RULES: dict[type, Rule] = {}


def register_rule(module_type: type) -> Callable[[Rule], Rule]:
    """Register ``rule(module, x_in, y_out, R_out, ctx) -> R_in`` for a module type (and its subclasses).

    Parameters
    ----------
    module_type : type
        A ``torch.nn.Module`` subclass.

    Returns
    -------
    callable
        A decorator that stores the rule and returns it unchanged.
    """
    def decorate(rule: Rule) -> Rule:
        RULES[module_type] = rule
        return rule

    return decorate


def find_rule(module: nn.Module) -> Rule:
    """The registered rule of ``module``'s type (its closest registered base class).

    Parameters
    ----------
    module : torch.nn.Module
        A part of the model.

    Returns
    -------
    callable
        The rule.

    Raises
    ------
    TypeError
        When no rule is registered for the module's type or its bases, or when the module inherits a rule
        from a base class but overrides its ``forward``; names the type.
    """
    for cls in type(module).__mro__:
        if cls in RULES:
            if getattr(type(module), "forward", None) is not getattr(cls, "forward", None):
                raise TypeError(f"module {type(module).__module__}.{type(module).__name__} subclasses "
                                f"{cls.__name__} but overrides forward, so {cls.__name__}'s relevance rule may "
                                "not describe it; register a rule for it with equigx.rules.register_rule")
            return RULES[cls]
    known = sorted(t.__name__ for t in RULES)
    raise TypeError(f"no relevance rule for module {type(module).__module__}.{type(module).__name__}; rules exist "
                    f"for {', '.join(known)} (add one with equigx.rules.register_rule)")


@dataclass
class RuleContext:
    """Settings and accumulators shared by the rules during one backward relevance pass.

    Attributes
    ----------
    geometry : Geometry
        Edges and their attributes.
    variant : {"node", "split"}
        Where tensor-product relevance goes.
    root : {"input", "zero"}
        Root point of the tensor-product Taylor expansion.
    eps : float
        Stabiliser.
    norm_rule : {"rescale", "identity"}
        NormActivation rule.
    edge_sh : torch.Tensor, shape (n_edges, lmax + 1)
        Relevance of the edge spherical harmonics by order ``l`` (split variant).
    edge_radial : torch.Tensor, shape (n_edges,)
        Relevance of the edge lengths (split variant).
    conv_inputs : list of torch.Tensor
        Relevance of each convolution's input blocks, from the last convolution back.
    head_rule : {"epsilon", "gamma"}
        Rule of ``torch.nn.Linear`` layers.
    gamma : float
        Weight of the positive parts in the gamma rule.
    bias : torch.Tensor or None
        Relevance the current rule gave to its layer's biases, one number per row (set by the rules of
        affine layers, read and cleared after each layer by :class:`equigx.EquiGX`).
    """

    geometry: Geometry
    variant: Literal["node", "split"] = "node"
    root: Literal["input", "zero"] = "input"
    eps: float = 1e-9
    norm_rule: Literal["rescale", "identity"] = "rescale"
    edge_sh: torch.Tensor | None = None
    edge_radial: torch.Tensor | None = None
    conv_inputs: list[tuple[o3.Irreps, torch.Tensor]] = field(default_factory=list)
    head_rule: Literal["epsilon", "gamma"] = "epsilon"
    gamma: float = 0.25
    bias: torch.Tensor | None = None


def stabilize(z: torch.Tensor, eps: float) -> torch.Tensor:
    """``z + eps * (sign(z) + (z == 0))`` (zennit's stabiliser: never zero).

    Parameters
    ----------
    z : torch.Tensor
        Denominator.
    eps : float
        Stabiliser.

    Returns
    -------
    torch.Tensor
        The stabilised denominator.
    """
    return z + eps * (torch.sign(z) + (z == 0).to(z))


@lru_cache(maxsize=256)
def _component_blocks(irreps: o3.Irreps) -> tuple[tuple[int, ...], int]:
    ids: list[int] = []
    block = 0
    for mul, ir in irreps:
        for _ in range(mul):
            ids.extend([block] * ir.dim)
            block += 1
    return tuple(ids), block


def _index(irreps: o3.Irreps, device: torch.device) -> tuple[torch.Tensor, int]:
    ids, n = _component_blocks(o3.Irreps(irreps))
    return torch.tensor(ids, dtype=torch.long, device=device), n


def block_dot(a: torch.Tensor, b: torch.Tensor, irreps: o3.Irreps) -> torch.Tensor:
    """Inner product of ``a`` and ``b`` within each irrep block (rotation invariant).

    Parameters
    ----------
    a, b : torch.Tensor, shape (rows, irreps.dim)
        Features laid out as e3nn does (``mul`` copies of ``2l+1`` components per entry).
    irreps : e3nn.o3.Irreps
        The layout.

    Returns
    -------
    torch.Tensor, shape (rows, irreps.num_irreps)
        One number per block.
    """
    idx, n = _index(irreps, a.device)
    return (a * b).new_zeros((a.shape[0], n)).index_add_(1, idx, a * b)


def expand_blocks(r: torch.Tensor, irreps: o3.Irreps) -> torch.Tensor:
    """Repeat one number per block over the block's components.

    Parameters
    ----------
    r : torch.Tensor, shape (rows, irreps.num_irreps)
        Block values.
    irreps : e3nn.o3.Irreps
        The layout.

    Returns
    -------
    torch.Tensor, shape (rows, irreps.dim)
        The expanded values.
    """
    idx, _ = _index(irreps, r.device)
    return r[:, idx]


def _blocks_by_l(r: torch.Tensor, irreps: o3.Irreps, lmax: int) -> torch.Tensor:
    orders = [ir.l for mul, ir in o3.Irreps(irreps) for _ in range(mul)]
    idx = torch.tensor(orders, dtype=torch.long, device=r.device)
    return r.new_zeros((r.shape[0], lmax + 1)).index_add_(1, idx, r)


def scatter_rule(messages: torch.Tensor, index: torch.Tensor, dim_size: int, relevance: torch.Tensor,
                 irreps: o3.Irreps, *, eps: float = 1e-9, scale: float = 1.0) -> torch.Tensor:
    """z-rule of ``y = scale * scatter_sum(messages, index)``: each message's share of its target's blocks.

    Parameters
    ----------
    messages : torch.Tensor, shape (n_items, irreps.dim)
        Summed rows.
    index : torch.Tensor of int64, shape (n_items,)
        Target of each row.
    dim_size : int
        Number of targets.
    relevance : torch.Tensor, shape (dim_size, irreps.num_irreps)
        Relevance of the targets' blocks.
    irreps : e3nn.o3.Irreps
        Layout.
    eps : float, default 1e-9
        Stabiliser of ``|y|^2``.
    scale : float, default 1.0
        Multiplier of the sum.

    Returns
    -------
    torch.Tensor, shape (n_items, irreps.num_irreps)
        ``<scale * m_e, y_t> / (|y_t|^2 + eps) * R_t``; sums to ``R_t * |y_t|^2 / (|y_t|^2 + eps)`` per target.
    """
    y = scatter_sum(messages, index, dim_size) * scale
    yt = y[index]
    share = block_dot(messages * scale, yt, irreps) / (block_dot(yt, yt, irreps) + eps)
    return share * relevance[index]


def tensor_product_rule(tp: o3.TensorProduct, x1: torch.Tensor, x2: torch.Tensor, weight: torch.Tensor,
                        relevance: torch.Tensor, *, eps: float = 1e-9,
                        root: Literal["input", "zero"] = "input") -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """First-order Taylor rule of ``y = TP(x1, x2, weight)`` towards each of its three arguments.

    ``R_a = a * d/da <TP(x1, x2, weight), c>`` with ``c = y * R / (|y|^2 + eps)`` per output block, the
    gradient taken at the argument (``root="input"``) or at zero (``"zero"``). A tensor product is linear
    in each argument, so each of the three sums to ``sum R |y|^2 / (|y|^2 + eps)``, and both roots give the
    same numbers.

    Parameters
    ----------
    tp : e3nn.o3.TensorProduct
        The product (``shared_weights=False``: one weight row per input row).
    x1, x2 : torch.Tensor, shape (rows, irreps_in1.dim), (rows, irreps_in2.dim)
        Its inputs.
    weight : torch.Tensor, shape (rows, weight_numel)
        Its weights.
    relevance : torch.Tensor, shape (rows, irreps_out.num_irreps)
        Relevance of the output blocks.
    eps : float, default 1e-9
        Stabiliser.
    root : {"input", "zero"}, default "input"
        Where the gradient is taken.

    Returns
    -------
    tuple of torch.Tensor
        Relevance of ``x1`` blocks (rows, irreps_in1.num_irreps), ``x2`` blocks (rows,
        irreps_in2.num_irreps) and of each weight (rows, weight_numel).
    """
    args = [t.detach().requires_grad_(True) for t in (x1, x2, weight)]
    with torch.enable_grad():
        y = tp(*args)
        c = (y * expand_blocks(relevance / (block_dot(y, y, tp.irreps_out) + eps), tp.irreps_out)).detach()
        grads: list[torch.Tensor] = []
        if root == "input":
            grads = list(torch.autograd.grad((y * c).sum(), args))
        elif root == "zero":
            for k in range(3):
                zero = torch.zeros_like(args[k], requires_grad=True)
                inputs = [zero if j == k else args[j].detach() for j in range(3)]
                grads.append(torch.autograd.grad((tp(*inputs) * c).sum(), zero)[0])
        else:
            raise ValueError(f"root must be 'input' or 'zero', got {root!r}")
    r1 = block_dot(x1.detach(), grads[0], tp.irreps_in1)
    r2 = block_dot(x2.detach(), grads[1], tp.irreps_in2)
    return r1, r2, weight.detach() * grads[2]


def _fcnet_rule(net: FullyConnectedNet, x: torch.Tensor, relevance: torch.Tensor, eps: float) -> torch.Tensor:
    inputs = []
    h = x
    for layer in net:
        inputs.append(h)
        h = layer(h)
    r = relevance
    for layer, h in zip(reversed(list(net)), reversed(inputs), strict=True):
        if layer.act is not None:
            w = layer.weight / (layer.h_in * layer.var_in) ** 0.5
        else:
            w = layer.weight / (layer.h_in * layer.var_in / layer.var_out) ** 0.5
        z = h @ w
        r = h * ((r / stabilize(z, eps)) @ w.T)
    return r


@register_rule(Convolution)
def _convolution_rule(conv: Convolution, x: torch.Tensor, y: torch.Tensor, relevance: torch.Tensor,
                      ctx: RuleContext) -> torch.Tensor:
    geo = ctx.geometry
    with torch.no_grad():
        basis = geo.edge_radial.detach()
        weight = conv.radial(basis)
        xs = x.detach()[geo.edge_src]
        messages = conv.tp(xs, geo.edge_sh.detach(), weight)
    r_edge = scatter_rule(messages, geo.edge_dst, geo.n_nodes, relevance, conv.irreps_out, eps=ctx.eps,
                          scale=conv.scale)
    r_x, r_sh, r_w = tensor_product_rule(conv.tp, xs, geo.edge_sh, weight, r_edge, eps=ctx.eps, root=ctx.root)
    r_nodes = scatter_sum(r_x, geo.edge_src, geo.n_nodes)
    if ctx.variant == "split":
        lmax = conv.irreps_sh.lmax
        by_l = _blocks_by_l(r_sh, conv.irreps_sh, lmax) / 3.0
        ctx.edge_sh = by_l if ctx.edge_sh is None else ctx.edge_sh + by_l
        dist = _fcnet_rule(conv.radial, basis, r_w / 3.0, ctx.eps).sum(dim=1)
        ctx.edge_radial = dist if ctx.edge_radial is None else ctx.edge_radial + dist
        r_nodes = r_nodes / 3.0
    ctx.conv_inputs.append((conv.irreps_in, r_nodes))
    return r_nodes


def linear_rule(linear: o3.Linear, x: torch.Tensor, relevance: torch.Tensor, *, eps: float = 1e-9) -> torch.Tensor:
    """Per-path z-rule of ``e3nn.o3.Linear`` per irrep block.

    Input block ``(i, u)`` receives ``sum_w <pw W[u, w] x_u, y_w> / (|y_w|^2 + eps) R_w`` from every output
    block ``w`` its instructions reach; the output ``y`` includes biases, which keep their share.

    Parameters
    ----------
    linear : e3nn.o3.Linear
        The layer.
    x : torch.Tensor, shape (rows, irreps_in.dim)
        Its input.
    relevance : torch.Tensor, shape (rows, irreps_out.num_irreps)
        Relevance of its output blocks.
    eps : float, default 1e-9
        Stabiliser.

    Returns
    -------
    torch.Tensor, shape (rows, irreps_in.num_irreps)
        Relevance of the input blocks.
    """
    x = x.detach()
    with torch.no_grad():
        y = linear(x)
    n_in_offsets = [0]
    for mul, _ in linear.irreps_in:
        n_in_offsets.append(n_in_offsets[-1] + mul)
    n_out_offsets = [0]
    for mul, _ in linear.irreps_out:
        n_out_offsets.append(n_out_offsets[-1] + mul)
    in_slices, out_slices = linear.irreps_in.slices(), linear.irreps_out.slices()
    out = relevance.new_zeros((x.shape[0], linear.irreps_in.num_irreps))
    for k, ins in enumerate(linear.instructions):
        if ins.i_in < 0:  # bias
            continue
        mul_in, ir = linear.irreps_in[ins.i_in]
        mul_out, _ = linear.irreps_out[ins.i_out]
        w = linear.weight_view_for_instruction(k).detach().reshape(mul_in, mul_out)
        xs = x[:, in_slices[ins.i_in]].reshape(-1, mul_in, ir.dim)
        ys = y[:, out_slices[ins.i_out]].reshape(-1, mul_out, ir.dim)
        rs = relevance[:, n_out_offsets[ins.i_out]:n_out_offsets[ins.i_out + 1]]
        c = ys * (rs / ((ys * ys).sum(-1) + eps))[..., None]
        out[:, n_in_offsets[ins.i_in]:n_in_offsets[ins.i_in + 1]] += ins.path_weight * torch.einsum(
            "nud,uw,nwd->nu", xs, w, c)
    return out


@register_rule(o3.Linear)
def _linear_rule(linear: o3.Linear, x: torch.Tensor, y: torch.Tensor, relevance: torch.Tensor,
                 ctx: RuleContext) -> torch.Tensor:
    if any(ins.i_in < 0 for ins in linear.instructions):
        with torch.no_grad():
            yb, y0 = linear(x.detach()), linear(torch.zeros_like(x[:1]))  # y0: the biases' output
        irreps = linear.irreps_out
        share = block_dot(y0.expand_as(yb), yb, irreps) / (block_dot(yb, yb, irreps) + ctx.eps)
        ctx.bias = (share * relevance).sum(dim=1)
    return linear_rule(linear, x, relevance, eps=ctx.eps)


def normact_rule(act: NormActivation, x: torch.Tensor, relevance: torch.Tensor, *, eps: float = 1e-9,
                 rule: Literal["rescale", "identity"] = "rescale") -> torch.Tensor:
    """NormActivation rule: ``y_k = s_k x_k`` per block, so ``R_in = R / s`` renormalised per row.

    Parameters
    ----------
    act : e3nn.nn.NormActivation
        The layer.
    x : torch.Tensor, shape (rows, irreps.dim)
        Its input.
    relevance : torch.Tensor, shape (rows, irreps.num_irreps)
        Relevance of its output blocks.
    eps : float, default 1e-9
        Stabiliser of the per-row total.
    rule : {"rescale", "identity"}, default "rescale"
        ``"identity"`` passes the relevance unchanged (the z-rule of a per-block rescaling).

    Returns
    -------
    torch.Tensor, shape (rows, irreps.num_irreps)
        Relevance of the input blocks; each row sums to the incoming row's sum.
    """
    if rule == "identity":
        return relevance
    if rule != "rescale":
        raise ValueError(f"norm_rule must be 'rescale' or 'identity', got {rule!r}")
    irreps = act.irreps_in
    x = x.detach()
    with torch.no_grad():
        y = act(x)
    xx = block_dot(x, x, irreps)
    scaling = block_dot(y, x, irreps) / torch.where(xx > 0, xx, torch.ones_like(xx))
    scaling = torch.where(xx > 0, scaling, torch.ones_like(scaling))
    r = relevance / torch.where(scaling.abs() > 0, scaling, torch.ones_like(scaling))
    total_in, total_out = r.sum(dim=1, keepdim=True), relevance.sum(dim=1, keepdim=True)
    return r * (total_out / stabilize(total_in, eps))


@register_rule(NormActivation)
def _normact_rule(act: NormActivation, x: torch.Tensor, y: torch.Tensor, relevance: torch.Tensor,
                  ctx: RuleContext) -> torch.Tensor:
    return normact_rule(act, x, relevance, eps=ctx.eps, rule=ctx.norm_rule)


@register_rule(Gate)
def _gate_rule(gate: Gate, x: torch.Tensor, y: torch.Tensor, relevance: torch.Tensor,
               ctx: RuleContext) -> torch.Tensor:
    cut = gate.sc.cut
    offsets = [0]
    for mul, _ in cut.irreps_in:
        offsets.append(offsets[-1] + mul)
    scalars, _gates, gated = ([b for i in ins for b in range(offsets[i], offsets[i + 1])] for ins in cut.instructions)
    out = relevance.new_zeros((relevance.shape[0], offsets[-1]))
    n_scalars = len(scalars)
    out[:, scalars] = relevance[:, :n_scalars]
    out[:, gated] = relevance[:, n_scalars:]
    return out


@register_rule(SumPool)
def _pool_rule(pool: SumPool, x: torch.Tensor, y: torch.Tensor, relevance: torch.Tensor,
               ctx: RuleContext) -> torch.Tensor:
    geo = ctx.geometry
    x = x.detach()
    if geo.node_mask is not None:
        x = x * geo.node_mask[:, None].to(x)
    return scatter_rule(x, geo.batch, geo.n_graphs, relevance, pool.irreps_in, eps=ctx.eps, scale=pool.scale)


@register_rule(Towers)
def _towers_rule(towers: Towers, x: torch.Tensor, y: torch.Tensor, relevance: torch.Tensor,
                 ctx: RuleContext) -> torch.Tensor:
    geo = ctx.geometry
    if len(geo.towers) != 2:
        raise ValueError("Towers needs a geometry with two towers (ProteinLigandTFN.graph_geometry)")
    x = x.detach()
    node = relevance.new_zeros((x.shape[0], o3.Irreps(towers.protein[0].irreps_in).num_irreps))
    sh, radial, bias, last_inputs = [], [], relevance.new_zeros(x.shape[0]), []
    start = 0
    lmax = max(int(layer.irreps_sh.lmax) for tower in towers.towers for layer in tower if isinstance(layer, Convolution))
    for tower, tgeo, width in zip(towers.towers, geo.towers, towers.widths, strict=True):
        sub = RuleContext(tgeo, ctx.variant, ctx.root, ctx.eps, ctx.norm_rule, head_rule=ctx.head_rule,
                          gamma=ctx.gamma)
        record: list[torch.Tensor] = []
        h = x
        with torch.no_grad():
            for layer in tower:
                record.append(h)
                h = layer(h, tgeo) if isinstance(layer, GraphLayer) else layer(h)
        record.append(h)
        r = relevance[:, start:start + width]
        start += width
        for k in range(len(tower) - 1, -1, -1):
            sub.bias = None
            r = find_rule(tower[k])(tower[k], record[k], record[k + 1], r, sub)
            if sub.bias is not None and sub.bias.shape[0] == x.shape[0]:
                bias = bias + sub.bias
        node = node + r
        n_edges = tgeo.edge_src.shape[0]
        sh.append(sub.edge_sh if sub.edge_sh is not None else r.new_zeros((n_edges, lmax + 1)))
        radial.append(sub.edge_radial if sub.edge_radial is not None else r.new_zeros(n_edges))
        last_inputs.append(sub.conv_inputs[0])
    (irreps_a, ra), (irreps_b, rb) = last_inputs
    ctx.conv_inputs.append((irreps_a, ra + rb) if irreps_a == irreps_b else (irreps_a, ra))
    if ctx.variant == "split":
        ctx.edge_sh = torch.cat(sh) if ctx.edge_sh is None else ctx.edge_sh + torch.cat(sh)
        ctx.edge_radial = torch.cat(radial) if ctx.edge_radial is None else ctx.edge_radial + torch.cat(radial)
    ctx.bias = bias
    return node


def epsilon_rule(linear: nn.Linear, x: torch.Tensor, relevance: torch.Tensor, *, eps: float = 1e-9) -> torch.Tensor:
    """LRP-epsilon of ``torch.nn.Linear``: ``R_in = x * ((R / stabilize(z)) @ W)``.

    Parameters
    ----------
    linear : torch.nn.Linear
        The layer.
    x : torch.Tensor, shape (rows, in_features)
        Its input.
    relevance : torch.Tensor, shape (rows, out_features)
        Relevance of its outputs.
    eps : float, default 1e-9
        Stabiliser.

    Returns
    -------
    torch.Tensor, shape (rows, in_features)
        Relevance of its inputs.
    """
    x = x.detach()
    with torch.no_grad():
        z = linear(x)
        return x * ((relevance / stabilize(z, eps)) @ linear.weight)


@register_rule(nn.Linear)
def _epsilon_rule(linear: nn.Linear, x: torch.Tensor, y: torch.Tensor, relevance: torch.Tensor,
                  ctx: RuleContext) -> torch.Tensor:
    if ctx.head_rule == "gamma":
        weight, bias = _gamma_params(linear, ctx.gamma)
    else:
        weight, bias = linear.weight, linear.bias
    if bias is not None:
        with torch.no_grad():
            z = nn.functional.linear(x.detach(), weight, bias)
            ctx.bias = (bias * relevance / stabilize(z, ctx.eps)).sum(dim=1)
    if ctx.head_rule == "gamma":
        return gamma_rule(linear, x, relevance, gamma=ctx.gamma, eps=ctx.eps)
    return epsilon_rule(linear, x, relevance, eps=ctx.eps)


def _gamma_params(linear: nn.Linear, gamma: float) -> tuple[torch.Tensor, torch.Tensor | None]:
    w = linear.weight.detach()
    b = None if linear.bias is None else linear.bias.detach()
    return w + gamma * w.clamp(min=0), None if b is None else b + gamma * b.clamp(min=0)


def gamma_rule(linear: nn.Linear, x: torch.Tensor, relevance: torch.Tensor, *, gamma: float = 0.25,
               eps: float = 1e-9) -> torch.Tensor:
    """LRP-gamma of ``torch.nn.Linear``: the epsilon rule with ``W + gamma W+`` and ``b + gamma b+``.

    Favours positive contributions (Montavon et al. 2019); ``gamma=0`` is the epsilon rule.

    Parameters
    ----------
    linear : torch.nn.Linear
        The layer.
    x : torch.Tensor, shape (rows, in_features)
        Its input.
    relevance : torch.Tensor, shape (rows, out_features)
        Relevance of its outputs.
    gamma : float, default 0.25
        Weight of the positive parts.
    eps : float, default 1e-9
        Stabiliser.

    Returns
    -------
    torch.Tensor, shape (rows, in_features)
        Relevance of its inputs.
    """
    weight, bias = _gamma_params(linear, gamma)
    x = x.detach()
    with torch.no_grad():
        z = nn.functional.linear(x, weight, bias)
        return x * ((relevance / stabilize(z, eps)) @ weight)


def _pass_through(module: Any, x: torch.Tensor, y: torch.Tensor, relevance: torch.Tensor,
                  ctx: RuleContext) -> torch.Tensor:
    return relevance


for _elementwise in (nn.ReLU, nn.SiLU, nn.Tanh, nn.Sigmoid, nn.Identity, nn.Dropout, nn.LeakyReLU, nn.GELU):
    register_rule(_elementwise)(_pass_through)


