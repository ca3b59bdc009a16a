"""Motif decomposition: bond graph -> ring-aware chordal completion -> motifs -> judged motif tree."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import networkx as nx
from icml25_shared.random import RandomStateLike, check_random_state
from rdkit import Chem

from fmg.chem import canonical_smiles, parse_molecule
from fmg.judges import MolecularJudge, MotifView

__all__ = ["Decomposition", "bond_graph", "chordal_completion", "decompose", "maximal_cliques"]


@dataclass(frozen=True, eq=False)
class Decomposition:
    """A molecule's motifs arranged in a tree, ready for grammar extraction.

    Attributes
    ----------
    smiles : str
        Canonical SMILES of the molecule (stereochemistry removed).
    mol : rdkit.Chem.Mol
        The kekulised molecule; motifs and bags hold its bond indices.
    motifs : tuple of frozenset of int
        Bond indices of each motif after merging (the maximal cliques of the completed bond graph).
    descriptions : tuple of str
        The judge's description of each motif.
    root : int
        Index of the root motif.
    tree : networkx.Graph
        Tree over motif indices; edge attribute ``weight`` is the number of shared bonds.
    bags : tuple of frozenset of int
        Bond nodes of each tree node. Equal to ``motifs`` unless the tree broke the running-intersection
        property, in which case bonds were added along tree paths (``n_repaired`` of them).
    owner : tuple of int
        For every atom, the tree node that owns it (the first bag, in breadth-first order from the root,
        holding all of the atom's bonds).
    merges : tuple of (int, int)
        The judge's merges, in order (indices as numbered at the time).
    deleted : tuple of (int, int)
        Clique-graph edges removed to make the tree, in order.
    n_repaired : int
        Bond memberships added to restore the running-intersection property.
    """

    smiles: str
    mol: Chem.Mol
    motifs: tuple[frozenset[int], ...]
    descriptions: tuple[str, ...]
    root: int
    tree: nx.Graph
    bags: tuple[frozenset[int], ...]
    owner: tuple[int, ...]
    merges: tuple[tuple[int, int], ...]
    deleted: tuple[tuple[int, int], ...]
    n_repaired: int

    def __repr__(self) -> str:
        return (f"Decomposition(smiles={self.smiles!r}, motifs={len(self.motifs)}, root={self.root}, "
                f"merges={len(self.merges)}, repaired={self.n_repaired})")


def bond_graph(mol: Chem.Mol) -> nx.Graph:
    """Bond graph: a node per bond, an edge between bonds sharing an atom, every SSSR ring a clique.

    Parameters
    ----------
    mol : rdkit.Chem.Mol
        The molecule.

    Returns
    -------
    networkx.Graph
        Nodes are bond indices.
    """
    g = nx.Graph()
    g.add_nodes_from(range(mol.GetNumBonds()))
    for atom in mol.GetAtoms():
        bonds = [b.GetIdx() for b in atom.GetBonds()]
        g.add_edges_from((u, v) for i, u in enumerate(bonds) for v in bonds[i + 1:])
    for ring in mol.GetRingInfo().BondRings():
        g.add_edges_from((u, v) for i, u in enumerate(ring) for v in ring[i + 1:])
    return g


def chordal_completion(graph: nx.Graph, rings: Sequence[Sequence[int]] = ()) -> nx.Graph:
    """Ring-aware chordal completion of a bond graph (a new graph; the input is unchanged).

    While the graph is not chordal, take a chordless-cycle witness ``(u, v, w)`` and make one clique of the
    bonds of every ring holding ``u`` or ``w`` (or just join ``u`` and ``w`` when neither is in a ring).

    Parameters
    ----------
    graph : networkx.Graph
        The bond graph.
    rings : sequence of sequences of int
        Bond indices of each ring (RDKit's ``BondRings``).

    Returns
    -------
    networkx.Graph
        A chordal supergraph on the same nodes.
    """
    from networkx.algorithms.chordal import _find_chordality_breaker

    g = graph.copy()
    ring_sets = [set(r) for r in rings]
    while True:
        breaker = _find_chordality_breaker(g)
        if not breaker:
            return g
        u, _, w = breaker
        group = set().union(*(r for r in ring_sets if u in r or w in r)) | {u, w}
        members = sorted(group)
        g.add_edges_from((a, b) for i, a in enumerate(members) for b in members[i + 1:])


def maximal_cliques(graph: nx.Graph) -> list[frozenset[int]]:
    """Maximal cliques of a chordal graph, sorted by their smallest node then lexicographically."""
    return sorted((frozenset(c) for c in nx.find_cliques(graph)), key=lambda c: sorted(c))


def _clique_graph(motifs: Sequence[frozenset[int]]) -> nx.Graph:
    g = nx.Graph()
    g.add_nodes_from(range(len(motifs)))
    for i, a in enumerate(motifs):
        for j in range(i + 1, len(motifs)):
            shared = len(a & motifs[j])
            if shared:
                g.add_edge(i, j, weight=shared)
    return g


def _check_index(value: object, n: int, what: str, smiles: str, noun: str = "motif") -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value < n:
        raise ValueError(f"molecule {smiles!r}: the judge's {what} {value!r} names no {noun}; accepted: an int in "
                         f"[0, {n - 1}]")
    return value


def decompose(smiles: str, judge: MolecularJudge, *, merge: bool = True, root: str = "judge",
              tree: str = "judge", random_state: RandomStateLike = None, index: int | None = None) -> Decomposition:
    """Decompose one molecule into a motif tree with a judge's help.

    Parameters
    ----------
    smiles : str
        The molecule.
    judge : MolecularJudge
        Describes motifs, chooses merges, the root and the interaction to delete on each cycle.
    merge : bool, default True
        Ask the judge for merges until it answers None (False: keep the chordal cliques).
    root : {"judge", "random"}, default "judge"
        Who chooses the root motif.
    tree : {"judge", "max-spanning"}, default "judge"
        Break clique-graph cycles by the judge's choice or take a maximum-weight spanning tree.
    random_state : None, int or Generator
        Used by ``root="random"`` only.
    index : int, optional
        The molecule's position in its list, quoted in errors.

    Returns
    -------
    Decomposition
        Motifs, descriptions, root, tree, bags and atom ownership.

    Raises
    ------
    ValueError
        For an invalid molecule (see ``parse_molecule``), an unknown option, or a judge answer naming a
        motif or interaction that does not exist.
    """
    if root not in ("judge", "random"):
        raise ValueError(f"root must be 'judge' or 'random', got {root!r}")
    if tree not in ("judge", "max-spanning"):
        raise ValueError(f"tree must be 'judge' or 'max-spanning', got {tree!r}")
    mol = parse_molecule(smiles, index=index)
    name = canonical_smiles(mol) or smiles
    rings = [tuple(r) for r in mol.GetRingInfo().BondRings()]
    g = chordal_completion(bond_graph(mol), rings)
    motifs = maximal_cliques(g)

    def view(descriptions: Sequence[str] | None) -> MotifView:
        return MotifView(name, mol, tuple(motifs), None if descriptions is None else tuple(descriptions))

    def describe() -> list[str]:
        out = list(judge.describe_motifs(view(None)))
        if len(out) != len(motifs):
            raise ValueError(f"molecule {name!r}: the judge gave {len(out)} descriptions for {len(motifs)} motifs")
        return out

    descriptions = describe()
    merges: list[tuple[int, int]] = []
    while merge and len(motifs) > 1:
        pair = judge.choose_merge(view(descriptions))
        if pair is None:
            break
        if not isinstance(pair, tuple | list) or len(pair) != 2:
            raise ValueError(f"molecule {name!r}: the judge's merge {pair!r} is not a pair of motif indices or None")
        i, j = (_check_index(p, len(motifs), "merge index", name) for p in pair)
        if i == j:
            raise ValueError(f"molecule {name!r}: the judge asked to merge motif {i} with itself")
        merges.append((i, j))
        union = sorted(motifs[i] | motifs[j])
        g.add_edges_from((a, b) for k, a in enumerate(union) for b in union[k + 1:])
        g = chordal_completion(g, rings)
        motifs = maximal_cliques(g)
        descriptions = describe()

    if root == "judge":
        root_index = _check_index(judge.choose_root(view(descriptions)), len(motifs), "root", name)
    else:
        root_index = int(check_random_state(random_state).integers(len(motifs)))

    cg = _clique_graph(motifs)
    deleted: list[tuple[int, int]] = []
    if tree == "max-spanning":
        t = nx.maximum_spanning_tree(cg, weight="weight")
        deleted = sorted(set(map(tuple, map(sorted, cg.edges()))) - set(map(tuple, map(sorted, t.edges()))))
    else:
        t = cg.copy()
        while not nx.is_tree(t):
            cycle = [(min(u, v), max(u, v)) for u, v in nx.find_cycle(t, source=root_index)]
            k = _check_index(judge.break_cycle(view(descriptions), cycle), len(cycle), "interaction", name,
                               "interaction of the cycle")
            t.remove_edge(*cycle[k])
            deleted.append(cycle[k])
    bags, n_repaired = _repair_running_intersection(t, motifs)
    owner = _owners(mol, t, bags, root_index)
    return Decomposition(name, mol, tuple(motifs), tuple(descriptions), root_index, t, bags, owner, tuple(merges),
                         tuple(deleted), n_repaired)


def _repair_running_intersection(t: nx.Graph, motifs: Sequence[frozenset[int]]) -> tuple[tuple[frozenset[int], ...], int]:
    """Add each bond to the bags on the tree paths between the bags holding it."""
    bags = [set(m) for m in motifs]
    holders: dict[int, list[int]] = {}
    for k, m in enumerate(motifs):
        for b in m:
            holders.setdefault(b, []).append(k)
    added = 0
    for b, nodes in sorted(holders.items()):
        if len(nodes) < 2:
            continue
        first = nodes[0]
        for other in nodes[1:]:
            for k in nx.shortest_path(t, first, other):
                if b not in bags[k]:
                    bags[k].add(b)
                    added += 1
    return tuple(frozenset(b) for b in bags), added


def _owners(mol: Chem.Mol, t: nx.Graph, bags: Sequence[frozenset[int]], root: int) -> tuple[int, ...]:
    order = [root] + [v for _, v in nx.bfs_edges(t, root)]
    owner = []
    for atom in mol.GetAtoms():
        bonds = {b.GetIdx() for b in atom.GetBonds()}
        owner.append(next(k for k in order if bonds <= bags[k]))
    return tuple(owner)
