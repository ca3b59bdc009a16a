"""Equivariant networks built from e3nn blocks: a tensor-field network (TFN) and a gated variant.

A model here is a sequence of parts in ``model.layers`` that the relevance rules of
:mod:`equigx.rules` know one by one: :class:`Convolution` (radial net + tensor product + scatter-sum),
``e3nn.o3.Linear``, ``e3nn.nn.NormActivation``, ``e3nn.nn.Gate``, :class:`SumPool` and the head's
``torch.nn.Linear`` / activations. The radius graph uses ``torch.cdist`` and a mask, the scatter
``index_add_``.
"""

from __future__ import annotations

import abc
import math
from typing import Literal

import torch
from e3nn import o3
from e3nn.math import soft_one_hot_linspace
from e3nn.nn import FullyConnectedNet, Gate, NormActivation
from torch import nn

from equigx.graphs import Geometry, Graphs, radius_graph, scatter_sum

__all__ = ["TFN", "Convolution", "GraphLayer", "SumPool"]


class GraphLayer(nn.Module, abc.ABC):
    """Base of the parts that read the graph: ``forward(x, geometry)``; a subclass must define it."""

    @abc.abstractmethod
    def forward(self, x: torch.Tensor, geometry: Geometry) -> torch.Tensor:
        """Apply the layer.

        Parameters
        ----------
        x : torch.Tensor
            Input rows.
        geometry : Geometry
            Edges and their attributes.

        Returns
        -------
        torch.Tensor
            Output rows.
        """


class Convolution(GraphLayer):
    """TFN convolution: ``x'_i = s * sum_{j -> i} TP(x_j, Y(r_ij), W(|r_ij|))``.

    Parameters
    ----------
    irreps_in, irreps_sh, irreps_out : str or e3nn.o3.Irreps
        Node input, edge spherical-harmonic and node output irreps.
    n_basis : int
        Size of the radial basis fed to the radial network.
    radial_hidden : int
        Width of the radial network's hidden layer (ReLU).
    num_neighbors : float
        Typical neighbour count; the sum is divided by its square root (``s``).
    """

    def __init__(self, irreps_in: str | o3.Irreps, irreps_sh: str | o3.Irreps, irreps_out: str | o3.Irreps, *,
                 n_basis: int, radial_hidden: int, num_neighbors: float) -> None:
        super().__init__()
        self.irreps_in, self.irreps_sh = o3.Irreps(irreps_in), o3.Irreps(irreps_sh)
        self.tp = o3.FullyConnectedTensorProduct(self.irreps_in, self.irreps_sh, irreps_out,
                                                 internal_weights=False, shared_weights=False)
        self.irreps_out = self.tp.irreps_out
        self.radial = FullyConnectedNet([n_basis, radial_hidden, self.tp.weight_numel], torch.relu)
        self.scale = 1.0 / math.sqrt(num_neighbors)

    def messages(self, x: torch.Tensor, geometry: Geometry) -> torch.Tensor:
        """Per-edge tensor-product messages, before the scatter.

        Parameters
        ----------
        x : torch.Tensor, shape (n_nodes, irreps_in.dim)
            Node features.
        geometry : Geometry
            Edges.

        Returns
        -------
        torch.Tensor, shape (n_edges, irreps_out.dim)
            The messages.
        """
        weight = self.radial(geometry.edge_radial)
        return self.tp(x[geometry.edge_src], geometry.edge_sh, weight)

    def forward(self, x: torch.Tensor, geometry: Geometry) -> torch.Tensor:
        """Aggregate the messages at their destination nodes.

        Parameters
        ----------
        x : torch.Tensor, shape (n_nodes, irreps_in.dim)
            Node features.
        geometry : Geometry
            Edges.

        Returns
        -------
        torch.Tensor, shape (n_nodes, irreps_out.dim)
            New node features.
        """
        return scatter_sum(self.messages(x, geometry), geometry.edge_dst, geometry.n_nodes) * self.scale


class SumPool(GraphLayer):
    """Sum of the node features of each graph times ``scale`` (scalar irreps only).

    Parameters
    ----------
    irreps : str or e3nn.o3.Irreps
        Node irreps (every irrep of order 0).
    scale : float, default 1.0
        Multiplier (e.g. one over the square root of a typical node count).
    """

    def __init__(self, irreps: str | o3.Irreps, *, scale: float = 1.0) -> None:
        super().__init__()
        self.irreps_in = self.irreps_out = o3.Irreps(irreps)
        if self.irreps_in.lmax != 0:
            raise ValueError(f"SumPool pools scalar irreps only, got {self.irreps_in}")
        self.scale = float(scale)

    def forward(self, x: torch.Tensor, geometry: Geometry) -> torch.Tensor:
        """Pool nodes to graphs.

        Parameters
        ----------
        x : torch.Tensor, shape (n_nodes, dim)
            Node features.
        geometry : Geometry
            Gives ``batch`` and ``n_graphs``.

        Returns
        -------
        torch.Tensor, shape (n_graphs, dim)
            Graph features.
        """
        return scatter_sum(x, geometry.batch, geometry.n_graphs) * self.scale


def _hidden_irreps(mul: int, lmax: int) -> o3.Irreps:
    return o3.Irreps([(mul, (order, p)) for order in range(lmax + 1) for p in (1, -1)])


class TFN(nn.Module):
    """Tensor-field network on e3nn with a graph-level head.

    ``Convolution -> Linear -> NormActivation`` (or ``Convolution -> Gate``) ``n_layers`` times, a final
    convolution to scalars, a sum-pool and an MLP head (or, with ``output="pseudoscalar"``, an unbiased
    linear read-out of ``0o`` channels: a single logit that changes sign under a mirror).

    Parameters
    ----------
    n_types : int, default 1
        Width of the one-hot node features (read as ``n_types x 0e``).
    lmax : int, default 2
        Highest spherical-harmonic order of edges and hidden features.
    mul : int, default 8
        Multiplicity of each hidden irrep ``l e`` and ``l o``, ``l = 0..lmax``.
    n_layers : int, default 2
        Interaction blocks before the final convolution.
    r_max : float, default 2.5
        Radius-graph cutoff (same unit as the coordinates).
    n_basis : int, default 8
        Radial basis size (``soft_one_hot_linspace``, smooth_finite, cutoff at ``r_max``).
    radial_hidden : int, default 16
        Hidden width of each radial network.
    n_out : int, default 2
        Classes (ignored with ``output="pseudoscalar"``, which has one logit).
    n_scalars : int, default 16
        Channels of the last convolution.
    head_hidden : int, default 16
        Hidden width of the MLP head.
    output : {"scalar", "pseudoscalar"}, default "scalar"
        Read-out parity.
    nonlinearity : {"norm", "gate"}, default "norm"
        ``Linear + NormActivation(sigmoid)`` (TFN) or an e3nn ``Gate`` (NequIP-style interaction).
    num_neighbors : float, default 8.0
        Typical neighbour count (message normalisation).
    typical_nodes : float, default 20.0
        Typical graph size (pool normalisation).
    self_loops : bool, default True
        Whether each node sends a message to itself.
    """

    def __init__(self, n_types: int = 1, *, lmax: int = 2, mul: int = 8, n_layers: int = 2, r_max: float = 2.5,
                 n_basis: int = 8, radial_hidden: int = 16, n_out: int = 2, n_scalars: int = 16,
                 head_hidden: int = 16, output: Literal["scalar", "pseudoscalar"] = "scalar",
                 nonlinearity: Literal["norm", "gate"] = "norm", num_neighbors: float = 8.0,
                 typical_nodes: float = 20.0, self_loops: bool = True) -> None:
        super().__init__()
        for name, value in (("n_types", n_types), ("mul", mul), ("n_layers", n_layers), ("n_basis", n_basis),
                            ("radial_hidden", radial_hidden), ("n_out", n_out), ("n_scalars", n_scalars),
                            ("head_hidden", head_hidden)):
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ValueError(f"{name} must be a positive int, got {value!r}")
        if isinstance(lmax, bool) or not isinstance(lmax, int) or not 0 <= lmax <= 4:
            raise ValueError(f"lmax must be an int in [0, 4], got {lmax!r}")
        if not r_max > 0:
            raise ValueError(f"r_max must be positive, got {r_max!r}")
        if output not in ("scalar", "pseudoscalar"):
            raise ValueError(f"output must be 'scalar' or 'pseudoscalar', got {output!r}")
        if nonlinearity not in ("norm", "gate"):
            raise ValueError(f"nonlinearity must be 'norm' or 'gate', got {nonlinearity!r}")
        self.lmax, self.r_max, self.n_basis, self.self_loops = lmax, float(r_max), n_basis, self_loops
        self.output = output
        #: spherical-harmonic orders zeroed on every edge (an ablation: ``(1, 2)`` keeps distances only)
        self.mask_sh_orders: tuple[int, ...] = ()
        self.irreps_in = o3.Irreps(f"{n_types}x0e")
        self.irreps_sh = o3.Irreps.spherical_harmonics(lmax)
        hidden = _hidden_irreps(mul, lmax)
        conv = {"n_basis": n_basis, "radial_hidden": radial_hidden, "num_neighbors": num_neighbors}
        layers: list[nn.Module] = []
        irreps = self.irreps_in
        for _ in range(n_layers):
            if nonlinearity == "norm":
                layers += [Convolution(irreps, self.irreps_sh, hidden, **conv), o3.Linear(hidden, hidden),
                           NormActivation(hidden, torch.sigmoid)]
                irreps = hidden
            else:
                scalars = o3.Irreps(f"{mul}x0e+{mul}x0o")
                gated = o3.Irreps([(mul, (order, p)) for order in range(1, lmax + 1) for p in (1, -1)])
                gates = o3.Irreps(f"{gated.num_irreps}x0e")
                gate = Gate(scalars, [torch.nn.functional.silu, torch.tanh], gates,
                            [torch.sigmoid], gated)
                layers += [Convolution(irreps, self.irreps_sh, gate.irreps_in, **conv), gate]
                irreps = gate.irreps_out
        parity = "0e" if output == "scalar" else "0o"
        layers += [Convolution(irreps, self.irreps_sh, f"{n_scalars}x{parity}", **conv),
                   SumPool(f"{n_scalars}x{parity}", scale=1.0 / math.sqrt(typical_nodes))]
        if output == "scalar":
            layers += [nn.Linear(n_scalars, head_hidden), nn.ReLU(), nn.Linear(head_hidden, n_out)]
            self.n_out = n_out
        else:
            layers += [nn.Linear(n_scalars, 1, bias=False)]
            self.n_out = 1
        self.layers = nn.ModuleList(layers)

    def geometry(self, pos: torch.Tensor, batch: torch.Tensor, n_graphs: int, *,
                 require_edges: bool = True) -> Geometry:
        """Radius graph, spherical harmonics and radial basis of the edges.

        Parameters
        ----------
        pos : torch.Tensor, shape (n_nodes, 3)
            Coordinates.
        batch : torch.Tensor of int64, shape (n_nodes,)
            Graph of each node.
        n_graphs : int
            Number of graphs.
        require_edges : bool, default True
            Raise when a graph has no edge (besides self-loops) within the cutoff.

        Returns
        -------
        Geometry
            The edges and their attributes.

        Raises
        ------
        ValueError
            When a coordinate is NaN or infinite, or a graph has no edge within the cutoff.
        """
        if not torch.isfinite(pos).all():
            raise ValueError("pos holds NaN or infinite coordinates")
        src, dst = radius_graph(pos, batch, self.r_max, self_loops=self.self_loops)
        real = src != dst
        counts = torch.bincount(batch[src[real]], minlength=n_graphs)
        if require_edges and n_graphs and int(counts.min()) == 0:
            empty = torch.nonzero(counts == 0).reshape(-1).tolist()
            raise ValueError(f"graph(s) {empty[:5]} have no edge within the cutoff r_max={self.r_max}; "
                             "raise r_max or move the points closer")
        vec = pos[dst] - pos[src]
        sh = o3.spherical_harmonics(self.irreps_sh, vec, normalize=True, normalization="component")
        if self.mask_sh_orders:
            keep = torch.tensor([ir.l not in self.mask_sh_orders for _, ir in self.irreps_sh for _ in range(ir.dim)])
            sh = sh * keep.to(sh)
        length = vec.norm(dim=1)
        radial = soft_one_hot_linspace(length, 0.0, self.r_max, self.n_basis, basis="smooth_finite",
                                       cutoff=True) * math.sqrt(self.n_basis)
        return Geometry(src, dst, vec, sh, radial, batch, int(pos.shape[0]), int(n_graphs))

    def check_graphs(self, graphs: Graphs) -> None:
        """Raise when the node features do not match ``irreps_in``.

        Parameters
        ----------
        graphs : Graphs
            The batch.

        Raises
        ------
        ValueError
            When ``node_attr`` has the wrong width or rows, ``batch`` does not match the nodes or ``n_graphs``,
            or the coordinates' dtype is not the parameters' dtype.
        """
        if graphs.node_attr.ndim != 2 or graphs.node_attr.shape[1] != self.irreps_in.dim:
            raise ValueError(f"node_attr has shape {tuple(graphs.node_attr.shape)} but the model reads irreps "
                             f"{self.irreps_in} (width {self.irreps_in.dim})")
        if graphs.pos.ndim != 2 or graphs.pos.shape != (graphs.node_attr.shape[0], 3):
            raise ValueError(f"pos must have shape ({graphs.node_attr.shape[0]}, 3), got {tuple(graphs.pos.shape)}")
        n_nodes = graphs.pos.shape[0]
        if graphs.batch.ndim != 1 or graphs.batch.shape[0] != n_nodes:
            raise ValueError(f"batch must have one graph index per node, shape ({n_nodes},), got "
                             f"{tuple(graphs.batch.shape)}")
        if n_nodes and (int(graphs.batch.min()) < 0 or int(graphs.batch.max()) >= graphs.n_graphs):
            raise ValueError(f"batch holds graph indices {int(graphs.batch.min())}..{int(graphs.batch.max())} "
                             f"but n_graphs={graphs.n_graphs} (indices must lie in 0..n_graphs - 1)")
        dtype = next((p.dtype for p in self.parameters() if p.is_floating_point()), None)
        for name in ("pos", "node_attr"):
            got = getattr(graphs, name).dtype
            if dtype is not None and got != dtype:
                raise ValueError(f"graphs.{name} is {got} but the model's parameters are {dtype}; cast one of "
                                 f"them (graphs.to({dtype}) or model.to({got}))")

    def run(self, node_attr: torch.Tensor, geometry: Geometry,
            record: list[torch.Tensor] | None = None) -> torch.Tensor:
        """Apply ``layers`` to node features on a computed geometry.

        Parameters
        ----------
        node_attr : torch.Tensor, shape (n_nodes, irreps_in.dim)
            Input node features.
        geometry : Geometry
            From :meth:`geometry`.
        record : list, optional
            When given, receives the input of every layer, then the output.

        Returns
        -------
        torch.Tensor, shape (n_graphs, n_out)
            Logits.
        """
        x = node_attr
        for layer in self.layers:
            if record is not None:
                record.append(x)
            x = layer(x, geometry) if isinstance(layer, GraphLayer) else layer(x)
        if record is not None:
            record.append(x)
        return x

    def forward(self, graphs: Graphs) -> torch.Tensor:
        """Logits of each graph.

        Parameters
        ----------
        graphs : Graphs
            The batch.

        Returns
        -------
        torch.Tensor, shape (n_graphs, n_out)
            Class logits (one column, the pseudoscalar logit, with ``output="pseudoscalar"``).
        """
        self.check_graphs(graphs)
        return self.run(graphs.node_attr, self.geometry(graphs.pos, graphs.batch, graphs.n_graphs))
