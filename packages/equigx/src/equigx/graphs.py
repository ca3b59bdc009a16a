"""Batched 3-D point graphs, the radius graph and scatter helpers (no torch-scatter or torch-cluster)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, replace

import numpy as np
import torch

__all__ = ["Geometry", "Graphs", "radius_graph", "scatter_sum"]


@dataclass
class Graphs:
    """A batch of 3-D graphs: node positions, node features and the graph each node belongs to.

    Attributes
    ----------
    pos : torch.Tensor, shape (n_nodes, 3)
        Coordinates (any length unit; the model's cutoff is in the same unit).
    node_attr : torch.Tensor, shape (n_nodes, n_features)
        Node input features (e.g. a one-hot type), read by the model as scalars ``0e``.
    batch : torch.Tensor of int64, shape (n_nodes,)
        Graph index of each node, in ``0 .. n_graphs - 1``, sorted.
    n_graphs : int
        Number of graphs.
    y : torch.Tensor, shape (n_graphs,), optional
        Labels (class indices, or 0/1 for a single-logit model).
    node_mask : torch.Tensor of bool, shape (n_nodes,), optional
        Ground-truth explanation (True on the motif's nodes).
    node_part : torch.Tensor of int64, shape (n_nodes,), optional
        Part of each node in a two-part graph (0 protein, 1 ligand), read by
        :class:`equigx.models.ProteinLigandTFN`.
    """

    pos: torch.Tensor
    node_attr: torch.Tensor
    batch: torch.Tensor
    n_graphs: int
    y: torch.Tensor | None = None
    node_mask: torch.Tensor | None = None
    node_part: torch.Tensor | None = None
    _sizes: tuple[int, ...] = field(default=(), repr=False)

    @classmethod
    def from_list(cls, pos: Sequence[np.ndarray | torch.Tensor], node_attr: Sequence[np.ndarray | torch.Tensor], *,
                  y: Sequence[float] | None = None, node_mask: Sequence[np.ndarray] | None = None,
                  node_part: Sequence[np.ndarray] | None = None, dtype: torch.dtype = torch.float32) -> Graphs:
        """Batch graphs given one array per graph.

        Parameters
        ----------
        pos : sequence of array, each shape (n_i, 3)
            Coordinates of each graph.
        node_attr : sequence of array, each shape (n_i, n_features)
            Node features of each graph.
        y : sequence of int or float, optional
            One label per graph (integers: class labels, int64; otherwise regression targets in ``dtype``).
        node_mask : sequence of bool array, optional
            Ground-truth node masks.
        node_part : sequence of int array, optional
            Part of each node (0 protein, 1 ligand) for two-part graphs.
        dtype : torch.dtype, default torch.float32
            Floating dtype of ``pos`` and ``node_attr``.

        Returns
        -------
        Graphs
            The batch.
        """
        if len(pos) == 0 or len(pos) != len(node_attr):
            raise ValueError(f"pos and node_attr need the same positive number of graphs, got {len(pos)} and "
                             f"{len(node_attr)}")
        sizes = [len(p) for p in pos]
        p = torch.cat([torch.as_tensor(np.asarray(a), dtype=dtype).reshape(-1, 3) for a in pos])
        x = torch.cat([torch.as_tensor(np.asarray(a), dtype=dtype).reshape(n, -1)
                       for a, n in zip(node_attr, sizes, strict=True)])
        batch = torch.repeat_interleave(torch.arange(len(sizes)), torch.tensor(sizes))
        yt = None
        if y is not None:
            ya = np.asarray(y)
            if len(ya) != len(sizes):
                raise ValueError(f"y needs one value per graph ({len(sizes)}), got {len(ya)}")
            integer = np.issubdtype(ya.dtype, np.integer) or np.issubdtype(ya.dtype, np.bool_)
            yt = torch.as_tensor(ya, dtype=torch.long if integer else dtype)
        mask = None if node_mask is None else torch.cat([torch.as_tensor(np.asarray(m), dtype=torch.bool)
                                                          for m in node_mask])
        part = None if node_part is None else torch.cat([torch.as_tensor(np.asarray(m), dtype=torch.long)
                                                         for m in node_part])
        for name, t in (("node_mask", mask), ("node_part", part)):
            if t is not None and t.shape[0] != p.shape[0]:
                raise ValueError(f"{name} has {t.shape[0]} entries but the graphs have {p.shape[0]} nodes")
        return cls(p, x, batch, len(sizes), yt, mask, part)

    @property
    def n_nodes(self) -> int:
        """Total number of nodes."""
        return int(self.pos.shape[0])

    def sizes(self) -> list[int]:
        """Number of nodes of each graph.

        Returns
        -------
        list of int
            ``n_graphs`` sizes.
        """
        return torch.bincount(self.batch, minlength=self.n_graphs).tolist()

    def to(self, dtype: torch.dtype) -> Graphs:
        """The same batch with floating tensors cast to ``dtype``.

        Parameters
        ----------
        dtype : torch.dtype
            Target floating dtype.

        Returns
        -------
        Graphs
            A new batch.
        """
        y = self.y.to(dtype) if self.y is not None and self.y.is_floating_point() else self.y
        return replace(self, pos=self.pos.to(dtype), node_attr=self.node_attr.to(dtype), y=y)

    def subset_nodes(self, keep: torch.Tensor) -> Graphs:
        """Remove nodes: the batch restricted to the nodes where ``keep`` is True.

        Parameters
        ----------
        keep : torch.Tensor of bool, shape (n_nodes,)
            Nodes to keep; every graph must keep at least one node.

        Returns
        -------
        Graphs
            A new batch with the same graphs and labels.
        """
        keep = torch.as_tensor(keep, dtype=torch.bool)
        if torch.bincount(self.batch[keep], minlength=self.n_graphs).min() == 0:
            raise ValueError("subset_nodes would leave a graph with no node")
        mask = None if self.node_mask is None else self.node_mask[keep]
        part = None if self.node_part is None else self.node_part[keep]
        return Graphs(self.pos[keep], self.node_attr[keep], self.batch[keep], self.n_graphs, self.y, mask, part)

    def select(self, graphs: Sequence[int] | torch.Tensor) -> Graphs:
        """A batch of some of the graphs, renumbered in the given order.

        Parameters
        ----------
        graphs : sequence of int
            Graph indices.

        Returns
        -------
        Graphs
            The selected graphs.
        """
        idx = torch.as_tensor(graphs, dtype=torch.long).reshape(-1)
        parts = [torch.nonzero(self.batch == g).reshape(-1) for g in idx.tolist()]
        nodes = torch.cat(parts)
        batch = torch.repeat_interleave(torch.arange(len(parts)), torch.tensor([len(p) for p in parts]))
        return Graphs(self.pos[nodes], self.node_attr[nodes], batch, len(parts),
                      None if self.y is None else self.y[idx],
                      None if self.node_mask is None else self.node_mask[nodes],
                      None if self.node_part is None else self.node_part[nodes])

    def rotate(self, rotation: torch.Tensor, translation: torch.Tensor | None = None) -> Graphs:
        """Apply ``pos @ rotation.T + translation`` to every node.

        Parameters
        ----------
        rotation : torch.Tensor, shape (3, 3)
            An orthogonal matrix (determinant -1 mirrors).
        translation : torch.Tensor, shape (3,), optional
            A shift.

        Returns
        -------
        Graphs
            The moved batch.
        """
        pos = self.pos @ rotation.to(self.pos).T
        if translation is not None:
            pos = pos + translation.to(self.pos)
        return replace(self, pos=pos)


@dataclass
class Geometry:
    """Edges of a radius graph and their geometric attributes, as the model computed them.

    Attributes
    ----------
    edge_src, edge_dst : torch.Tensor of int64, shape (n_edges,)
        Messages flow from ``edge_src`` to ``edge_dst``.
    edge_vec : torch.Tensor, shape (n_edges, 3)
        ``pos[dst] - pos[src]``.
    edge_sh : torch.Tensor, shape (n_edges, sh_dim)
        Spherical harmonics of the edge directions (zero vector for self-loops).
    edge_radial : torch.Tensor, shape (n_edges, n_basis)
        Radial basis of the edge lengths.
    batch : torch.Tensor of int64, shape (n_nodes,)
        Graph of each node.
    n_nodes, n_graphs : int
        Sizes.
    node_mask : torch.Tensor of bool, shape (n_nodes,), optional
        Nodes this geometry covers (one tower of a two-part graph); pooling sums these only.
    edge_weight : torch.Tensor, shape (n_edges,), optional
        A soft mask on the messages (edge-mask explainers); None for the model as trained.
    towers : tuple of Geometry, optional
        The geometries of the towers of a two-part graph (this geometry's edges are their concatenation).
    """

    edge_src: torch.Tensor
    edge_dst: torch.Tensor
    edge_vec: torch.Tensor
    edge_sh: torch.Tensor
    edge_radial: torch.Tensor
    batch: torch.Tensor
    n_nodes: int
    n_graphs: int
    node_mask: torch.Tensor | None = None
    edge_weight: torch.Tensor | None = None
    towers: tuple[Geometry, ...] = ()


def radius_graph(pos: torch.Tensor, batch: torch.Tensor, r: float, *, self_loops: bool = True) -> torch.Tensor:
    """Edges between nodes of the same graph closer than ``r``, by ``torch.cdist`` and a mask.

    Parameters
    ----------
    pos : torch.Tensor, shape (n_nodes, 3)
        Coordinates.
    batch : torch.Tensor of int64, shape (n_nodes,)
        Graph of each node.
    r : float
        Cutoff (strict: distance < r).
    self_loops : bool, default True
        Whether each node is its own neighbour.

    Returns
    -------
    torch.Tensor of int64, shape (2, n_edges)
        ``(src, dst)`` pairs, sorted by ``src`` then ``dst``.
    """
    dist = torch.cdist(pos.detach(), pos.detach())
    adj = (dist < r) & (batch[:, None] == batch[None, :])
    if not self_loops:
        adj.fill_diagonal_(False)
    else:
        adj.fill_diagonal_(True)
    return torch.nonzero(adj).T.contiguous()


def scatter_sum(src: torch.Tensor, index: torch.Tensor, dim_size: int) -> torch.Tensor:
    """Sum the rows of ``src`` into ``dim_size`` rows by ``index`` (``index_add_``).

    Parameters
    ----------
    src : torch.Tensor, shape (n, ...)
        Rows to add.
    index : torch.Tensor of int64, shape (n,)
        Target row of each source row.
    dim_size : int
        Number of target rows.

    Returns
    -------
    torch.Tensor, shape (dim_size, ...)
        The sums.
    """
    out = src.new_zeros((dim_size, *src.shape[1:]))
    return out.index_add_(0, index, src)
