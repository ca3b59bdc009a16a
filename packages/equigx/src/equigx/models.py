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
from typing import Any, Literal

import torch
from e3nn import o3
from e3nn.math import soft_one_hot_linspace
from e3nn.nn import FullyConnectedNet, Gate, NormActivation
from icml25_shared.validation import Interval, Options, check_params
from torch import nn

from equigx.graphs import Geometry, Graphs, radius_graph, scatter_sum

__all__ = ["TFN", "Convolution", "GraphLayer", "ProteinLigandTFN", "SumPool", "Towers", "norm_activation"]


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
        messages = self.messages(x, geometry)
        if geometry.edge_weight is not None:
            messages = messages * geometry.edge_weight[:, None].to(messages)
        return scatter_sum(messages, geometry.edge_dst, geometry.n_nodes) * self.scale


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
            Graph features (the sum over ``geometry.node_mask``'s nodes when it is set).
        """
        if geometry.node_mask is not None:
            x = x * geometry.node_mask[:, None].to(x)
        return scatter_sum(x, geometry.batch, geometry.n_graphs) * self.scale


def norm_activation(irreps: str | o3.Irreps) -> NormActivation:
    """The TFN norm nonlinearity ``y_k = sigmoid(|x_k|) x_k`` per irrep block (``|y_k| = silu(|x_k|)``).

    e3nn's ``NormActivation(irreps, torch.sigmoid)`` computes ``sigmoid(|x_k|) x_k / |x_k|``: a block of norm
    ``1e-7`` (a feature that is zero up to roundoff, such as a pseudoscalar of a planar neighbourhood) comes
    out with norm 0.5 and a direction set by the roundoff, so a rotation of the input can flip the output.
    Feeding ``silu`` to the normalised form gives ``sigmoid(|x_k|) x_k``: continuous at zero, gain at most 1,
    hence equivariant to roundoff, and its gradient is finite at zero (e3nn clamps the norm before dividing).

    Parameters
    ----------
    irreps : str or e3nn.o3.Irreps
        The blocks.

    Returns
    -------
    e3nn.nn.NormActivation
        The layer.
    """
    return NormActivation(irreps, torch.nn.functional.silu)


def _hidden_irreps(mul: int, lmax: int) -> o3.Irreps:
    return o3.Irreps([(mul, (order, p)) for order in range(lmax + 1) for p in (1, -1)])


def _body(irreps_in: o3.Irreps, irreps_sh: o3.Irreps, *, mul: int, lmax: int, n_layers: int, n_scalars: int,
          parity: str, nonlinearity: str, conv: dict, typical_nodes: float) -> list[nn.Module]:
    """Interaction blocks, a final convolution to ``n_scalars`` scalars of ``parity`` and a sum-pool."""
    hidden = _hidden_irreps(mul, lmax)
    layers: list[nn.Module] = []
    irreps = irreps_in
    for _ in range(n_layers):
        if nonlinearity == "norm":
            layers += [Convolution(irreps, irreps_sh, hidden, **conv), o3.Linear(hidden, hidden),
                       norm_activation(hidden)]
            irreps = hidden
        else:
            scalars = o3.Irreps(f"{mul}x0e+{mul}x0o")
            gated = o3.Irreps([(mul, (order, p)) for order in range(1, lmax + 1) for p in (1, -1)])
            gates = o3.Irreps(f"{gated.num_irreps}x0e")
            gate = Gate(scalars, [torch.nn.functional.silu, torch.tanh], gates, [torch.sigmoid], gated)
            layers += [Convolution(irreps, irreps_sh, gate.irreps_in, **conv), gate]
            irreps = gate.irreps_out
    layers += [Convolution(irreps, irreps_sh, f"{n_scalars}x{parity}", **conv),
               SumPool(f"{n_scalars}x{parity}", scale=1.0 / math.sqrt(typical_nodes))]
    return layers


_POSITIVE = Interval(int, 1, None)
_LENGTH = Interval(float, 0, float("inf"), closed="neither")
_TFN_CONSTRAINTS: dict = {
    **{name: [_POSITIVE] for name in ("n_types", "mul", "n_layers", "n_basis", "radial_hidden", "n_out", "n_scalars",
                                      "head_hidden")},
    "lmax": [Interval(int, 0, 4)],
    "r_max": [_LENGTH],
    "output": [Options(str, {"scalar", "pseudoscalar"})],
    "nonlinearity": [Options(str, {"norm", "gate"})],
    "num_neighbors": [_LENGTH],
    "typical_nodes": [_LENGTH],
    # a bool, never a truthy stand-in: head_bias="False" would keep the biases (and the leak)
    "self_loops": ["boolean"],
    "head_bias": ["boolean"],
}


def _check_positions(pos: torch.Tensor) -> None:
    if not torch.isfinite(pos).all():
        raise ValueError("pos holds NaN or infinite coordinates")


def _edge_attributes(pos: torch.Tensor, src: torch.Tensor, dst: torch.Tensor, irreps_sh: o3.Irreps, r_max: float,
                     n_basis: int, mask_orders: tuple[int, ...]) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    vec = pos[dst] - pos[src]
    sh = o3.spherical_harmonics(irreps_sh, vec, normalize=True, normalization="component")
    if mask_orders:
        keep = torch.tensor([ir.l not in mask_orders for _, ir in irreps_sh for _ in range(ir.dim)])
        sh = sh * keep.to(sh)
    radial = soft_one_hot_linspace(vec.norm(dim=1), 0.0, r_max, n_basis, basis="smooth_finite",
                                   cutoff=True) * math.sqrt(n_basis)
    return vec, sh, radial


def _run_layers(layers: nn.ModuleList | list[nn.Module], x: torch.Tensor, geometry: Geometry,
                record: list[torch.Tensor] | None = None) -> torch.Tensor:
    for layer in layers:
        if record is not None:
            record.append(x)
        x = layer(x, geometry) if isinstance(layer, GraphLayer) else layer(x)
    if record is not None:
        record.append(x)
    return x


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
    head_bias : bool, default True
        Biases in the MLP head. Biases keep a share of the logit that no input receives (the ``leak`` of an
        explanation); without them every rule conserves up to its stabiliser ``eps``.
    """

    def __init__(self, n_types: int = 1, *, lmax: int = 2, mul: int = 8, n_layers: int = 2, r_max: float = 2.5,
                 n_basis: int = 8, radial_hidden: int = 16, n_out: int = 2, n_scalars: int = 16,
                 head_hidden: int = 16, output: Literal["scalar", "pseudoscalar"] = "scalar",
                 nonlinearity: Literal["norm", "gate"] = "norm", num_neighbors: float = 8.0,
                 typical_nodes: float = 20.0, self_loops: bool = True, head_bias: bool = True) -> None:
        super().__init__()
        check_params({"n_types": n_types, "mul": mul, "n_layers": n_layers, "n_basis": n_basis,
                      "radial_hidden": radial_hidden, "n_out": n_out, "n_scalars": n_scalars, "head_hidden": head_hidden,
                      "lmax": lmax, "r_max": r_max, "output": output, "nonlinearity": nonlinearity,
                      "num_neighbors": num_neighbors, "typical_nodes": typical_nodes, "self_loops": self_loops,
                      "head_bias": head_bias}, _TFN_CONSTRAINTS, owner="TFN")
        self.lmax, self.r_max, self.n_basis, self.self_loops = lmax, float(r_max), n_basis, self_loops
        self.output = output
        #: spherical-harmonic orders zeroed on every edge (an ablation: ``(1, 2)`` keeps distances only)
        self.mask_sh_orders: tuple[int, ...] = ()
        self.irreps_in = o3.Irreps(f"{n_types}x0e")
        self.irreps_sh = o3.Irreps.spherical_harmonics(lmax)
        conv = {"n_basis": n_basis, "radial_hidden": radial_hidden, "num_neighbors": num_neighbors}
        parity = "0e" if output == "scalar" else "0o"
        layers = _body(self.irreps_in, self.irreps_sh, mul=mul, lmax=lmax, n_layers=n_layers, n_scalars=n_scalars,
                       parity=parity, nonlinearity=nonlinearity, conv=conv, typical_nodes=typical_nodes)
        if output == "scalar":
            layers += [nn.Linear(n_scalars, head_hidden, bias=head_bias), nn.ReLU(),
                       nn.Linear(head_hidden, n_out, bias=head_bias)]
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
        _check_positions(pos)
        src, dst = radius_graph(pos, batch, self.r_max, self_loops=self.self_loops)
        real = src != dst
        counts = torch.bincount(batch[src[real]], minlength=n_graphs)
        if require_edges and n_graphs and int(counts.min()) == 0:
            empty = torch.nonzero(counts == 0).reshape(-1).tolist()
            raise ValueError(f"graph(s) {empty[:5]} have no edge within the cutoff r_max={self.r_max}; "
                             "raise r_max or move the points closer")
        vec, sh, radial = _edge_attributes(pos, src, dst, self.irreps_sh, self.r_max, self.n_basis,
                                           self.mask_sh_orders)
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
        return _run_layers(self.layers, node_attr, geometry, record)

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
        return self.run(graphs.node_attr, self.graph_geometry(graphs))

    def graph_geometry(self, graphs: Graphs, *, pos: torch.Tensor | None = None,
                       require_edges: bool = True) -> Geometry:
        """:meth:`geometry` of a batch.

        Parameters
        ----------
        graphs : Graphs
            The batch.
        pos : torch.Tensor, shape (n_nodes, 3), optional
            Coordinates to use instead of ``graphs.pos`` (e.g. a copy that requires a gradient).
        require_edges : bool, default True
            Raise when a graph has no edge within the cutoff.

        Returns
        -------
        Geometry
            The edges and their attributes.
        """
        return self.geometry(graphs.pos if pos is None else pos, graphs.batch, graphs.n_graphs,
                             require_edges=require_edges)


class Towers(GraphLayer):
    """Two stacks of graph parts run side by side, one per part of a two-part graph; outputs concatenated.

    Each stack reads the geometry ``geometry.towers[k]`` (edges within its part only, pooling over its
    part's nodes), so a node of the other part sends and receives nothing in it.

    Parameters
    ----------
    protein, ligand : list of torch.nn.Module
        The parts of each tower, ending with a :class:`SumPool`.
    """

    def __init__(self, protein: list[nn.Module], ligand: list[nn.Module]) -> None:
        super().__init__()
        self.protein, self.ligand = nn.ModuleList(protein), nn.ModuleList(ligand)
        last: list[Any] = [protein[-1], ligand[-1]]  # SumPool parts, with irreps_out
        self.widths: tuple[int, int] = (int(last[0].irreps_out.dim), int(last[1].irreps_out.dim))

    @property
    def towers(self) -> tuple[nn.ModuleList, nn.ModuleList]:
        """The two stacks, protein first."""
        return self.protein, self.ligand

    def forward(self, x: torch.Tensor, geometry: Geometry) -> torch.Tensor:
        """Run both towers and concatenate their pooled outputs.

        Parameters
        ----------
        x : torch.Tensor, shape (n_nodes, dim)
            Node features of both parts.
        geometry : Geometry
            With ``towers`` (one geometry per tower).

        Returns
        -------
        torch.Tensor, shape (n_graphs, sum of the towers' widths)
            ``[protein embedding | ligand embedding]``.
        """
        if len(geometry.towers) != 2:
            raise ValueError("Towers needs a geometry with two towers (ProteinLigandTFN.graph_geometry)")
        return torch.cat([_run_layers(t, x, g) for t, g in zip(self.towers, geometry.towers, strict=True)], dim=1)


class ProteinLigandTFN(nn.Module):
    """Two-tower tensor-field network for protein-ligand complexes, with an MLP head on both embeddings.

    A protein tower (edges between pocket residues within ``r_max_protein``) and a ligand tower (edges
    between ligand atoms within ``r_max_ligand``) each end in a sum-pool; the head reads
    ``[protein embedding | ligand embedding]``. Node features are one-hot types:
    ``n_protein_types`` columns for residues, then ``n_ligand_types`` for ligand atoms
    (:func:`equigx.structures.complex_graph` builds them), and ``Graphs.node_part`` says which part a node is in.

    Parameters
    ----------
    n_protein_types : int, default 21
        Residue types (20 amino acids and "other").
    n_ligand_types : int, default 10
        Ligand atom types (:data:`equigx.structures.LIGAND_ELEMENTS` and "other").
    lmax, mul, n_layers, n_basis, radial_hidden, n_scalars, head_hidden, nonlinearity, num_neighbors, typical_nodes
        As in :class:`TFN`, for both towers.
    r_max_protein : float, default 10.0
        Protein-tower cutoff (Angstrom; residues are represented by their C-alpha atoms).
    r_max_ligand : float, default 5.0
        Ligand-tower cutoff (Angstrom).
    n_out : int, default 1
        Outputs: 1 for regression (e.g. pK = -log10 of the affinity in M), or the number of classes.
    task : {"regression", "classification"}, default "regression"
        Regression explains the predicted value itself (``target`` must be None).
    head_bias : bool, default True
        Biases in the MLP head.
    """

    def __init__(self, n_protein_types: int = 21, n_ligand_types: int = 10, *, lmax: int = 2, mul: int = 8,
                 n_layers: int = 2, r_max_protein: float = 10.0, r_max_ligand: float = 5.0, n_basis: int = 8,
                 radial_hidden: int = 16, n_scalars: int = 16, head_hidden: int = 16, n_out: int = 1,
                 task: Literal["regression", "classification"] = "regression",
                 nonlinearity: Literal["norm", "gate"] = "norm", num_neighbors: float = 8.0,
                 typical_nodes: float = 20.0, head_bias: bool = True) -> None:
        super().__init__()
        check_params({"n_protein_types": n_protein_types, "n_ligand_types": n_ligand_types, "mul": mul,
                      "n_layers": n_layers, "n_basis": n_basis, "radial_hidden": radial_hidden, "n_out": n_out,
                      "n_scalars": n_scalars, "head_hidden": head_hidden, "lmax": lmax, "r_max_protein": r_max_protein,
                      "r_max_ligand": r_max_ligand, "task": task, "nonlinearity": nonlinearity,
                      "num_neighbors": num_neighbors, "typical_nodes": typical_nodes, "head_bias": head_bias},
                     {**_TFN_CONSTRAINTS, "n_protein_types": [_POSITIVE], "n_ligand_types": [_POSITIVE],
                      "r_max_protein": [_LENGTH], "r_max_ligand": [_LENGTH],
                      "task": [Options(str, {"regression", "classification"})]}, owner="ProteinLigandTFN")
        if task == "regression" and n_out != 1:
            raise ValueError(f"ProteinLigandTFN: n_out must be 1 (a regression head has one output); got {n_out}")
        self.task, self.n_out, self.lmax, self.n_basis = task, n_out, lmax, n_basis
        self.r_max = (float(r_max_protein), float(r_max_ligand))
        self.n_types = (n_protein_types, n_ligand_types)
        self.mask_sh_orders: tuple[int, ...] = ()
        self.irreps_in = o3.Irreps(f"{n_protein_types + n_ligand_types}x0e")
        self.irreps_sh = o3.Irreps.spherical_harmonics(lmax)
        conv = {"n_basis": n_basis, "radial_hidden": radial_hidden, "num_neighbors": num_neighbors}
        body: dict[str, Any] = {"mul": mul, "lmax": lmax, "n_layers": n_layers, "n_scalars": n_scalars, "parity": "0e",
                "nonlinearity": nonlinearity, "conv": conv, "typical_nodes": typical_nodes}
        towers = Towers(_body(self.irreps_in, self.irreps_sh, **body), _body(self.irreps_in, self.irreps_sh, **body))
        self.layers = nn.ModuleList([towers, nn.Linear(2 * n_scalars, head_hidden, bias=head_bias), nn.ReLU(),
                                     nn.Linear(head_hidden, n_out, bias=head_bias)])

    def graph_geometry(self, graphs: Graphs, *, pos: torch.Tensor | None = None,
                       require_edges: bool = True) -> Geometry:
        """Per-tower radius graphs, spherical harmonics and radial bases.

        Parameters
        ----------
        graphs : Graphs
            The batch, with ``node_part`` (0 protein, 1 ligand).
        pos : torch.Tensor, shape (n_nodes, 3), optional
            Coordinates to use instead of ``graphs.pos``.
        require_edges : bool, default True
            Raise when a graph has no protein edge within ``r_max_protein``.

        Returns
        -------
        Geometry
            The concatenated edges (protein tower first) with ``towers`` set.

        Raises
        ------
        ValueError
            When ``node_part`` is missing or not 0/1, a graph lacks a protein or ligand node, coordinates are
            not finite, or (``require_edges``) a graph's pocket has no edge.
        """
        pos = graphs.pos if pos is None else pos
        _check_positions(pos)
        part = graphs.node_part
        if part is None or part.shape != graphs.batch.shape:
            raise ValueError("ProteinLigandTFN needs graphs.node_part (0 protein, 1 ligand), one per node; build "
                             "complexes with equigx.structures.complex_graph")
        if part.numel() and (int(part.min()) < 0 or int(part.max()) > 1):
            raise ValueError("graphs.node_part must hold 0 (protein) or 1 (ligand)")
        n_nodes, n_graphs = int(pos.shape[0]), graphs.n_graphs
        towers = []
        for k, r_max in enumerate(self.r_max):
            idx = torch.nonzero(part == k).reshape(-1)
            present = torch.bincount(graphs.batch[idx], minlength=n_graphs)
            if n_graphs and int(present.min()) == 0:
                missing = torch.nonzero(present == 0).reshape(-1).tolist()
                raise ValueError(f"graph(s) {missing[:5]} have no {('protein', 'ligand')[k]} node")
            src, dst = radius_graph(pos[idx], graphs.batch[idx], r_max, self_loops=True)
            src, dst = idx[src], idx[dst]
            if k == 0 and require_edges:
                counts = torch.bincount(graphs.batch[src[src != dst]], minlength=n_graphs)
                if n_graphs and int(counts.min()) == 0:
                    empty = torch.nonzero(counts == 0).reshape(-1).tolist()
                    raise ValueError(f"graph(s) {empty[:5]} have no protein edge within r_max_protein={r_max}")
            vec, sh, radial = _edge_attributes(pos, src, dst, self.irreps_sh, r_max, self.n_basis, self.mask_sh_orders)
            towers.append(Geometry(src, dst, vec, sh, radial, graphs.batch, n_nodes, n_graphs, node_mask=part == k))
        src, dst, vec, sh, radial = (torch.cat([getattr(t, f) for t in towers])
                                     for f in ("edge_src", "edge_dst", "edge_vec", "edge_sh", "edge_radial"))
        return Geometry(src, dst, vec, sh, radial, graphs.batch, n_nodes, n_graphs, towers=tuple(towers))

    def check_graphs(self, graphs: Graphs) -> None:
        """Raise when the batch does not match the model (see :meth:`TFN.check_graphs`).

        Parameters
        ----------
        graphs : Graphs
            The batch.
        """
        TFN.check_graphs(self, graphs)  # type: ignore[arg-type]
        if graphs.node_part is None:
            raise ValueError("ProteinLigandTFN needs graphs.node_part (0 protein, 1 ligand)")

    def run(self, node_attr: torch.Tensor, geometry: Geometry,
            record: list[torch.Tensor] | None = None) -> torch.Tensor:
        """Apply ``layers`` to node features on a computed geometry (see :meth:`TFN.run`).

        Parameters
        ----------
        node_attr : torch.Tensor, shape (n_nodes, irreps_in.dim)
            One-hot node types.
        geometry : Geometry
            From :meth:`graph_geometry`.
        record : list, optional
            Receives the input of every layer, then the output.

        Returns
        -------
        torch.Tensor, shape (n_graphs, n_out)
            Predictions.
        """
        return _run_layers(self.layers, node_attr, geometry, record)

    def forward(self, graphs: Graphs) -> torch.Tensor:
        """Predictions of each complex.

        Parameters
        ----------
        graphs : Graphs
            Complexes with ``node_part``.

        Returns
        -------
        torch.Tensor, shape (n_graphs, n_out)
            The predicted affinity (regression) or class logits.
        """
        self.check_graphs(graphs)
        return self.run(graphs.node_attr, self.graph_geometry(graphs))
