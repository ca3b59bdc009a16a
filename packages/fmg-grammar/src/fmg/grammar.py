"""Hyperedge-replacement grammar over molecules (atoms are hyperedges, bonds are nodes).

Extraction follows Aguinaga et al. (2018) on the motif tree: every tree node gives one production whose
left-hand side is a nonterminal over the bonds it shares with its parent, and whose right-hand side holds
the bag's bond nodes, the atoms the node owns and one nonterminal per child. A nonterminal's label is
the sorted tuple of ``(bond order, atoms still to attach)`` of its nodes, so every complete derivation
gives each bond exactly two atoms and every atom the valence it had in training.

Sampling is context-aware, as the official generator's index is (a Weisfeiler-Lehman hash of the
nonterminal with its surroundings): besides its label, a nonterminal is looked up by the atoms already
placed on its bond nodes (the anchor atoms) and, one level further, by the atoms bonded to them. A rule is
applied only in a context it was seen in during training, so every bond a sample forms joins two atoms
the way some training molecule joins them. A size and ring budget (the training maxima of heavy atoms,
ring size and ring count) bounds what a derivation may build.
"""

from __future__ import annotations

import json
import math
from collections import deque
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import networkx as nx
import numpy as np
from icml25_shared.random import RandomStateLike, check_random_state, spawn
from icml25_shared.validation import Interval, Options, check_params
from rdkit import Chem

from fmg.chem import atom_label, bond_order, build_molecule
from fmg.decomposition import Decomposition

__all__ = ["REJECTIONS", "WEIGHTS", "Derivation", "Grammar", "Rule", "SampleResult"]

WEIGHTS = ("counts", "uniform")
"""Accepted ``weights`` of ``Grammar.probabilities`` and ``Grammar.sample``."""
REJECTIONS = ("derivation", "step")
"""Accepted ``rejection`` modes of ``Grammar.sample``."""

Pair = tuple[int, int]
AtomLabel = tuple[str, int, int, int]
# A nonterminal node in context: (bond order, atoms to attach, the anchor atoms already placed on it).
Slot = tuple[int, int, tuple[Any, ...]]
CONTEXT_DEPTHS = (0, 1)
"""Context levels of the index: 0 = the anchor atoms, 1 = the anchor atoms with the atoms bonded to them."""
BUDGETS = ("training", None)
"""Accepted ``budget`` of ``Grammar.sample``."""


@dataclass(frozen=True)
class Rule:
    """One production ``lhs -> rhs``.

    Attributes
    ----------
    lhs : tuple of (int, int)
        Sorted ``(bond order, atoms to attach)`` of the external nodes; ``()`` for the start symbol.
    node_order : tuple of int
        Bond order of each right-hand-side node ``0..n-1``.
    external : tuple of int
        The external nodes, in the order of ``lhs``.
    atoms : tuple of (label, nodes)
        Terminal atom hyperedges: ``(symbol, charge, hydrogens, isotope)`` and the nodes (bonds) they touch.
    nonterminals : tuple of (nodes, supplies)
        Nonterminal hyperedges: their nodes, sorted by ``(order, supply)``, and how many atoms each
        node still needs from the nonterminal's expansion.
    """

    lhs: tuple[Pair, ...]
    node_order: tuple[int, ...]
    external: tuple[int, ...]
    atoms: tuple[tuple[AtomLabel, tuple[int, ...]], ...]
    nonterminals: tuple[tuple[tuple[int, ...], tuple[int, ...]], ...]

    def nonterminal_label(self, k: int) -> tuple[Pair, ...]:
        """Label of right-hand-side nonterminal ``k``."""
        nodes, supplies = self.nonterminals[k]
        return tuple((self.node_order[u], s) for u, s in zip(nodes, supplies, strict=True))

    def graph(self) -> nx.Graph:
        """Labelled bipartite graph of the right-hand side (for isomorphism tests and hashing)."""
        g = nx.Graph()
        ext = {u: s for u, (_, s) in zip(self.external, self.lhs, strict=True)}
        for u, order in enumerate(self.node_order):
            g.add_node(("n", u), label=f"n{order}|{ext.get(u, -1)}")
        for k, (label, nodes) in enumerate(self.atoms):
            g.add_node(("a", k), label="a" + ",".join(map(str, label)))
            g.add_edges_from(((("a", k), ("n", u)) for u in nodes), label="-")
        for k, (nodes, supplies) in enumerate(self.nonterminals):
            g.add_node(("t", k), label="t" + str(self.nonterminal_label(k)))
            for u, s in zip(nodes, supplies, strict=True):
                g.add_edge(("t", k), ("n", u), label=str(s))
        return g

    def to_json(self) -> dict[str, Any]:
        """Plain-JSON form."""
        return {"lhs": [list(p) for p in self.lhs], "node_order": list(self.node_order),
                "external": list(self.external), "atoms": [[list(lab), list(n)] for lab, n in self.atoms],
                "nonterminals": [[list(n), list(s)] for n, s in self.nonterminals]}

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> Rule:
        """Inverse of ``to_json``."""
        return cls(tuple(tuple(p) for p in d["lhs"]), tuple(d["node_order"]), tuple(d["external"]),
                   tuple((tuple(lab), tuple(n)) for lab, n in d["atoms"]),
                   tuple((tuple(n), tuple(s)) for n, s in d["nonterminals"]))

    def smiles(self) -> str:
        """SMILES-like text of the terminal atoms of the right-hand side (for grammar cards)."""
        return ".".join(f"{lab[0]}H{lab[2]}" if lab[2] else lab[0] for lab, _ in self.atoms) or "(no atoms)"


@dataclass(frozen=True)
class Derivation:
    """A derivation: rule indices and external-node assignments, in breadth-first expansion order.

    Attributes
    ----------
    steps : tuple of (int, tuple of int)
        ``(rule index, perm)``; ``perm[i]`` is the position, among the expanded nonterminal's nodes, that
        the rule's external node ``i`` is glued to.
    """

    steps: tuple[tuple[int, tuple[int, ...]], ...]


@dataclass(frozen=True)
class SampleResult:
    """Samples drawn from a grammar.

    Attributes
    ----------
    smiles : list of str
        Canonical SMILES of each sample, in draw order (duplicates kept).
    n_rejected : int
        Derivations rejected (not a molecule, several fragments, too many steps) and redrawn.
    """

    smiles: list[str]
    n_rejected: int


@dataclass
class _Host:
    node_order: dict[int, int] = field(default_factory=dict)
    atoms: list[tuple[AtomLabel, tuple[int, ...]]] = field(default_factory=list)
    queue: deque = field(default_factory=deque)  # (label, host nodes)
    next_node: int = 0
    ends: dict[int, list[int]] = field(default_factory=dict)  # bond node -> atoms placed on it so far
    pairs: set[tuple[int, int]] = field(default_factory=set)  # atom pairs already joined by a bond node


def _atom_context(host: _Host, k: int, depth: int) -> Any:
    """An anchor atom's label, with (depth 1) the sorted (bond order, label) of the atoms already bonded to it."""
    label, nodes = host.atoms[k]
    if depth == 0:
        return label
    neighbours = sorted((host.node_order[u], host.atoms[j][0]) for u in nodes for j in host.ends.get(u, ())
                        if j != k and len(host.ends[u]) == 2)
    return (label, tuple(neighbours))


def _slots(host: _Host, label: Sequence[Pair], nodes: Sequence[int], depth: int) -> list[Slot]:
    """The nonterminal's nodes in context, aligned with ``label``."""
    return [(order, supply, tuple(sorted(_atom_context(host, k, depth) for k in host.ends.get(u, ()))))
            for (order, supply), u in zip(label, nodes, strict=True)]


def _fits(host: _Host, nodes: Sequence[int], rule: Rule, perm: Sequence[int]) -> bool:
    """Whether applying ``rule`` keeps every bond node at most two distinct atoms and every atom pair one bond.

    The official generator's per-step check: a step that would join an atom to itself, put a third atom
    on a bond or a second bond between two atoms is refused before it is applied.
    """
    ext = {u: nodes[p] for u, p in zip(rule.external, perm, strict=True)}
    base = len(host.atoms)
    added: dict[Any, list[int]] = {}
    for k, (_, anodes) in enumerate(rule.atoms):
        for u in anodes:
            added.setdefault(ext.get(u, ("new", u)), []).append(base + k)
    new_pairs: set[tuple[int, int]] = set()
    for node, atoms in added.items():
        both = host.ends.get(node, []) + atoms if not isinstance(node, tuple) else atoms
        if len(both) > 2 or (len(both) == 2 and both[0] == both[1]):
            return False
        if len(both) == 2:
            pair = (min(both), max(both))
            if pair in host.pairs or pair in new_pairs:
                return False
            new_pairs.add(pair)
    return True


def _expand(host: _Host, nodes: Sequence[int], rule: Rule, perm: Sequence[int]) -> None:
    local: dict[int, int] = {u: nodes[p] for u, p in zip(rule.external, perm, strict=True)}
    for u, order in enumerate(rule.node_order):
        if u not in local:
            local[u] = host.next_node
            host.node_order[host.next_node] = order
            host.next_node += 1
    for label, anodes in rule.atoms:
        k = len(host.atoms)
        host.atoms.append((label, tuple(local[u] for u in anodes)))
        for u in anodes:
            placed = host.ends.setdefault(local[u], [])
            placed.append(k)
            if len(placed) == 2:
                host.pairs.add((min(placed), max(placed)))
    for k, (tnodes, _) in enumerate(rule.nonterminals):
        host.queue.append((rule.nonterminal_label(k), tuple(local[u] for u in tnodes)))


def _rule_from_tree_node(dec: Decomposition, t: int, parent: int | None, children: Sequence[int],
                         supply: dict[tuple[int, int], int]) -> tuple[Rule, list[int], list[int]]:
    """Rule of tree node ``t``; also its local->bond map and its children in nonterminal order."""
    mol = dec.mol
    bag = dec.bags[t]
    ext = sorted(bag & dec.bags[parent], key=lambda b: (bond_order(mol.GetBondWithIdx(b)), supply[(t, b)], b)) \
        if parent is not None else []
    rest = sorted(bag - set(ext))
    bonds = ext + rest
    local = {b: u for u, b in enumerate(bonds)}
    node_order = tuple(bond_order(mol.GetBondWithIdx(b)) for b in bonds)
    atoms = []
    for a in mol.GetAtoms():
        if dec.owner[a.GetIdx()] == t:
            atoms.append((atom_label(a), tuple(sorted(local[b.GetIdx()] for b in a.GetBonds()))))
    atoms.sort()
    nts = []
    for c in children:
        shared = sorted(bag & dec.bags[c], key=lambda b: (bond_order(mol.GetBondWithIdx(b)), supply[(c, b)], b))
        nts.append((tuple(local[b] for b in shared), tuple(supply[(c, b)] for b in shared), c))
    nts.sort(key=lambda x: (tuple(node_order[u] for u in x[0]), x[1], x[0]))
    lhs = tuple((node_order[local[b]], supply[(t, b)]) for b in ext)
    rule = Rule(lhs, node_order, tuple(range(len(ext))), tuple(atoms), tuple((n, s) for n, s, _ in nts))
    return rule, bonds, [c for _, _, c in nts]


def extract_rules(dec: Decomposition) -> list[tuple[int, Rule, list[int], list[int]]]:
    """Rules of every tree node in breadth-first expansion order: (node, rule, local->bond, children).

    Parameters
    ----------
    dec : Decomposition
        A motif tree.

    Returns
    -------
    list of tuple
        ``(tree node, rule, bonds of the rule's local nodes, children in nonterminal order)``, in the order a
        breadth-first derivation expands them.
    """
    t = dec.tree
    parent: dict[int, int | None] = {dec.root: None}
    order = [dec.root]
    for u, v in nx.bfs_edges(t, dec.root):
        parent[v] = u
        order.append(v)
    # supply[(node, bond)] = atoms touching `bond` owned inside the subtree of `node`
    subtree_atoms: dict[int, set[int]] = {k: set() for k in order}
    for a, k in enumerate(dec.owner):
        subtree_atoms[k].add(a)
    for k in reversed(order[1:]):
        up = parent[k]
        assert up is not None  # only the root has no parent
        subtree_atoms[up] |= subtree_atoms[k]
    supply: dict[tuple[int, int], int] = {}
    for k in order:
        for b in dec.bags[k]:
            bond = dec.mol.GetBondWithIdx(b)
            supply[(k, b)] = (bond.GetBeginAtomIdx() in subtree_atoms[k]) + (bond.GetEndAtomIdx() in subtree_atoms[k])
    children = {k: [v for v in t.neighbors(k) if v != parent[k]] for k in order}
    made = {}
    for k in order:
        made[k] = _rule_from_tree_node(dec, k, parent[k], children[k], supply)
    out = []
    queue = deque([dec.root])
    while queue:
        k = queue.popleft()
        rule, bonds, kids = made[k]
        out.append((k, rule, bonds, kids))
        queue.extend(kids)
    return out


def _matcher(a: nx.Graph, b: nx.Graph) -> nx.algorithms.isomorphism.GraphMatcher:
    return nx.algorithms.isomorphism.GraphMatcher(
        a, b, node_match=lambda x, y: x["label"] == y["label"], edge_match=lambda x, y: x["label"] == y["label"])


class Grammar:
    """Probabilistic hyperedge-replacement grammar with isomorphism-deduplicated rules.

    Attributes
    ----------
    rules : list of Rule
        The productions; ``rules[i]`` was used ``counts[i]`` times in the training derivations.
    counts : list of float
        Use counts (the probabilities are counts normalised per left-hand side).
    descriptions : list of str
        The judge's description of the motif each rule was first extracted from ("" when unknown).
    sources : list of str
        SMILES fragment of that motif ("" when unknown).
    """

    def __init__(self) -> None:
        self.rules: list[Rule] = []
        self.counts: list[float] = []
        self.descriptions: list[str] = []
        self.sources: list[str] = []
        self._buckets: dict[tuple[Any, ...], list[int]] = {}
        self._graphs: dict[int, nx.Graph] = {}
        self._by_lhs: dict[tuple[Pair, ...], list[int]] = {}
        # depth -> sorted slots of a nonterminal -> {(rule, slot of each external node): training uses}
        self.contexts: dict[int, dict[tuple[Slot, ...], dict[tuple[int, tuple[Slot, ...]], float]]] = {
            d: {} for d in CONTEXT_DEPTHS}
        self.budget: dict[str, int] = {}

    # -- building ---------------------------------------------------------------------------------------
    def _key(self, rule: Rule) -> tuple[Any, ...]:
        g = self._graph(rule)
        return (rule.lhs, len(rule.node_order), len(rule.atoms), len(rule.nonterminals),
                nx.weisfeiler_lehman_graph_hash(g, node_attr="label", edge_attr="label", iterations=3))

    def _graph(self, rule: Rule, index: int | None = None) -> nx.Graph:
        if index is not None and index in self._graphs:
            return self._graphs[index]
        g = rule.graph()
        if index is not None:
            self._graphs[index] = g
        return g

    def find(self, rule: Rule) -> tuple[int, dict[Any, Any]] | None:
        """Index of the stored rule isomorphic to ``rule`` and the map of its graph nodes onto ``rule``'s.

        Parameters
        ----------
        rule : Rule
            A rule.

        Returns
        -------
        (int, dict) or None
            The index and the isomorphism (stored rule's graph nodes -> ``rule``'s), or None when absent.
        """
        g = rule.graph()
        for i in self._buckets.get(self._key(rule), []):
            m = _matcher(self._graph(self.rules[i], i), g)
            if m.is_isomorphic():
                return i, dict(m.mapping)
        return None

    def add(self, rule: Rule, count: float = 1.0, *, description: str = "", source: str = "") -> int:
        """Add ``count`` uses of ``rule`` (merged with an isomorphic stored rule); returns its index.

        ``description`` and ``source`` (the motif's text and SMILES fragment) are kept for a new rule.
        """
        if isinstance(count, bool) or not isinstance(count, int | float) or not math.isfinite(count) or count <= 0:
            raise ValueError(f"count must be a finite number > 0, got {count!r}")
        found = self.find(rule)
        if found is not None:
            self.counts[found[0]] += count
            return found[0]
        i = len(self.rules)
        self.rules.append(rule)
        self.counts.append(float(count))
        self.descriptions.append(description)
        self.sources.append(source)
        self._buckets.setdefault(self._key(rule), []).append(i)
        self._by_lhs.setdefault(rule.lhs, []).append(i)
        return i

    def add_decomposition(self, dec: Decomposition) -> Derivation:
        """Add the rules of a motif tree (counting each use) and return the molecule's derivation."""
        self._add_rules(dec)
        return self.derivation(dec)

    def _add_rules(self, dec: Decomposition) -> None:
        for k, rule, _, _ in extract_rules(dec):
            self.add(rule, description=dec.descriptions[k], source=_fragment(dec, k))
        self.add_contexts(self.derivation(dec))
        rings = [len(r) for r in dec.mol.GetRingInfo().AtomRings()]
        for key, value in (("max_atoms", dec.mol.GetNumHeavyAtoms()), ("max_ring_size", max(rings, default=0)),
                           ("max_rings", len(rings))):
            self.budget[key] = max(self.budget.get(key, 0), int(value))

    def add_contexts(self, derivation: Derivation, count: float = 1.0) -> None:
        """Count the context every step of a (training) derivation was applied in.

        Parameters
        ----------
        derivation : Derivation
            A derivation with this grammar's rules (``derivation(dec)``).
        count : float, default 1.0
            Uses to add.
        """
        host = _Host()
        host.queue.append(((), ()))
        for i, perm in derivation.steps:
            label, nodes = host.queue.popleft()
            rule = self.rules[i]
            for depth in CONTEXT_DEPTHS:
                slots = _slots(host, label, nodes, depth)
                signature = tuple(slots[p] for p in perm)
                table = self.contexts[depth].setdefault(tuple(sorted(slots)), {})
                table[(i, signature)] = table.get((i, signature), 0.0) + count
            _expand(host, nodes, rule, perm)

    def combine(self, other: Grammar) -> Grammar:
        """A new grammar with the rules of both and summed counts (isomorphic rules merged)."""
        out = Grammar()
        for g in (self, other):
            # where each of g's rules landed in `out`, and the order of its external nodes there
            moved: dict[int, tuple[int, tuple[int, ...]]] = {}
            for k, (rule, count, d, src) in enumerate(zip(g.rules, g.counts, g.descriptions, g.sources, strict=True)):
                i = out.add(rule, count, description=d, source=src)
                _, iso = out.find(rule) or (i, {})
                moved[k] = (i, tuple(iso[("n", u)][1] for u in out.rules[i].external))
            for depth, tables in g.contexts.items():
                for key, table in tables.items():
                    target = out.contexts[depth].setdefault(key, {})
                    for (k, signature), count in table.items():
                        i, order = moved[k]
                        entry = (i, tuple(signature[u] for u in order))
                        target[entry] = target.get(entry, 0.0) + count
            for name, value in g.budget.items():
                out.budget[name] = max(out.budget.get(name, 0), value)
        return out

    # -- probabilities ----------------------------------------------------------------------------------
    @property
    def n_rules(self) -> int:
        """Number of distinct rules."""
        return len(self.rules)

    def probabilities(self, weights: str = "counts") -> np.ndarray:
        """Probability of each rule among the rules sharing its left-hand side, shape (n_rules,).

        Parameters
        ----------
        weights : {"counts", "uniform"}, default "counts"
            ``"counts"``: proportional to the rule's use in the training derivations (the probabilistic
            grammar); ``"uniform"``: every rule of a left-hand side equally likely (DEG's choice among the
            applicable rules, without its schedule favouring rules that end a derivation).
        """
        _check_choice("weights", weights, WEIGHTS)
        p = np.zeros(len(self.rules))
        for idx in self._by_lhs.values():
            c = np.asarray([self.counts[i] for i in idx]) if weights == "counts" else np.ones(len(idx))
            p[idx] = c / c.sum()
        return p

    def candidates(self, label: tuple[Pair, ...]) -> list[int]:
        """Rules applicable to a nonterminal with this label (index lookup), ascending."""
        return self._by_lhs.get(tuple(sorted(label)), [])

    def candidates_scan(self, label: tuple[Pair, ...]) -> list[int]:
        """The same candidates found by testing every rule's left-hand side with a GraphMatcher."""
        def star(pairs: Iterable[Pair]) -> nx.Graph:
            g = nx.Graph()
            g.add_node("t", label="t")
            for k, (order, s) in enumerate(pairs):
                g.add_node(k, label=f"n{order}")
                g.add_edge("t", k, label=str(s))
            return g

        host = star(label)
        return [i for i, r in enumerate(self.rules) if len(r.lhs) == len(label) and _matcher(star(r.lhs), host).is_isomorphic()]

    # -- derivations ------------------------------------------------------------------------------------
    def derivation(self, dec: Decomposition) -> Derivation:
        """The derivation of a decomposed molecule with this grammar's rules.

        Raises
        ------
        ValueError
            When a rule of the molecule is not in the grammar.
        """
        steps = []
        attach: dict[int, tuple[int, ...]] = {dec.root: ()}  # tree node -> bonds of its nonterminal, host order
        queue: deque[int] = deque([dec.root])
        extracted = {k: (rule, bonds, kids) for k, rule, bonds, kids in extract_rules(dec)}
        while queue:
            k = queue.popleft()
            rule, bonds, kids = extracted[k]
            found = self.find(rule)
            if found is None:
                raise ValueError(f"molecule {dec.smiles!r}: the rule of motif {k} is not in the grammar")
            i, iso = found
            stored = self.rules[i]
            perm = tuple(attach[k].index(bonds[iso[("n", u)][1]]) for u in stored.external)
            steps.append((i, perm))
            for j, (tnodes, _) in enumerate(stored.nonterminals):
                child = kids[iso[("t", j)][1]]
                attach[child] = tuple(bonds[iso[("n", u)][1]] for u in tnodes)
                queue.append(child)
        return Derivation(tuple(steps))

    def replay(self, derivation: Derivation) -> str | None:
        """Canonical SMILES of the molecule a derivation builds (None when it is not a molecule)."""
        host = _Host()
        host.queue.append(((), ()))
        for i, perm in derivation.steps:
            label, nodes = host.queue.popleft()
            if self.rules[i].lhs != tuple(sorted(label)):
                raise ValueError(f"rule {i} has left-hand side {self.rules[i].lhs}, not {label}")
            _expand(host, nodes, self.rules[i], perm)
        if host.queue:
            raise ValueError(f"derivation leaves {len(host.queue)} nonterminals unexpanded")
        return _to_smiles(host)

    # -- sampling ---------------------------------------------------------------------------------------
    def _in_context(self, host: _Host, label: Sequence[Pair], nodes: Sequence[int], weights: str,
                    max_depth: int) -> tuple[list[tuple[int, tuple[Slot, ...]]], np.ndarray, list[Slot]]:
        """Rules seen in training in this nonterminal's context, at the most specific level (<= depth) that has any.

        Returns the (rule, external slots) entries, their weights and the nonterminal's slots at that level.
        """
        for depth in range(max_depth, -1, -1):
            slots = _slots(host, label, nodes, depth)
            table = self.contexts[depth].get(tuple(sorted(slots)))
            if table:
                entries = list(table)
                w = np.fromiter(table.values(), float, len(entries)) if weights == "counts" else np.ones(len(entries))
                return entries, w, slots
        return [], np.zeros(0), []

    def _sample_one(self, rng: np.random.Generator, probs: np.ndarray, max_steps: int, scan: bool,
                    rejection: str = "derivation", context: int | None = None, weights: str = "counts",
                    budget: dict[str, int] | None = None) -> str | None:
        host = _Host()
        host.queue.append(((), ()))
        steps = 0
        max_atoms = budget.get("max_atoms") if budget else None
        while host.queue:
            steps += 1
            if steps > max_steps:
                return None
            label, nodes = host.queue.popleft()
            if context is not None:
                entries, w, slots = self._in_context(host, label, nodes, weights, context)
                options: list[Any] = entries
            else:
                options = list(self.candidates_scan(label) if scan else self.candidates(label))
                w = probs[options] if options else np.zeros(0)
            while options:
                j = _choose(rng, w)
                if context is not None:
                    i, signature = options[j]
                    rule = self.rules[i]
                    perm = _random_perm(signature, slots, rng)
                else:
                    rule = self.rules[options[j]]
                    perm = _random_perm(rule.lhs, label, rng)
                if rejection == "derivation" or _fits(host, nodes, rule, perm):
                    break
                # "step": refuse a step that cannot be part of a molecule, draw among the other rules
                options.pop(j)
                w = np.delete(w, j)
            else:
                return None
            _expand(host, nodes, rule, perm)
            if max_atoms is not None and len(host.atoms) > max_atoms:
                return None
        return _to_smiles(host, budget)

    def sample(self, n: int, *, random_state: RandomStateLike = None, max_steps: int = 500, max_tries: int = 100,
               n_jobs: int = 1, scan: bool = False, unique: bool = False, weights: str = "counts",
               rejection: str = "derivation", context: int | None = 0,
               budget: str | None = "training") -> SampleResult:
        """Draw ``n`` valid molecules; invalid or fragmented derivations are redrawn.

        Parameters
        ----------
        n : int
            Number of molecules.
        random_state : None, int or Generator
            Root of the per-sample streams (sample ``i`` uses stream ``i``: results do not depend on
            ``n_jobs``).
        max_steps : int, default 500
            Derivations longer than this are rejected.
        max_tries : int, default 100
            Draws per sample before giving up with a RuntimeError.
        n_jobs : int, default 1
            Worker processes.
        scan : bool, default False
            Find candidate rules by scanning every rule with a GraphMatcher instead of the index
            (slower; the same draws). Applies to the context-free lookup (``context=False``).
        unique : bool, default False
            Keep drawing until ``n`` distinct molecules are collected (the official generation loop);
            draw ``i`` still uses stream ``i``, so the result does not depend on ``n_jobs``.
        weights : {"counts", "uniform"}, default "counts"
            Rule probabilities (see ``probabilities``).
        rejection : {"derivation", "step"}, default "derivation"
            ``"derivation"``: a derivation that is not a molecule is discarded whole and redrawn, so the
            samples follow the grammar's distribution conditioned on being a molecule; long derivations fail
            more often, which shifts samples toward small molecules. ``"step"``: as the official generator,
            a step that would put a second bond between two atoms (or bond an atom to itself) is refused
            and another rule of the same nonterminal is drawn from the remaining ones; only a nonterminal
            with no acceptable rule, ``max_steps`` or a final sanitisation failure discards the derivation.
        context : {0, 1, None}, default 0
            Apply a rule only in a context it was seen in during training. 0: the anchor atoms (those
            already placed on the nonterminal's bonds) must match a training use of the rule; 1: the anchor
            atoms and the atoms bonded to them must, falling back to the anchor atoms alone where that
            neighbourhood never occurred (narrower: fewer distinct molecules). A nonterminal whose anchors
            never occurred in training ends the derivation. None draws among every rule of the label,
            whatever atoms surround it: that lookup forms bonds no training molecule has (21.6% O-O
            peroxides from the acrylates) and is kept for comparison.
        budget : {"training", None}, default "training"
            ``"training"`` rejects derivations with more heavy atoms, a larger ring or more rings than any
            training molecule (``Grammar.budget``); None sets no bound.

        Returns
        -------
        SampleResult
            The samples' canonical SMILES and the number of rejected derivations.
        """
        check_params(
            {"n": n, "max_steps": max_steps, "max_tries": max_tries, "n_jobs": n_jobs, "scan": scan,
             "unique": unique, "weights": weights, "rejection": rejection, "context": context, "budget": budget,
             "random_state": random_state},
            {"n": [Interval(int, 0, None)], "max_steps": [Interval(int, 1, None)],
             "max_tries": [Interval(int, 1, None)], "n_jobs": [Interval(int, 1, None)], "scan": ["boolean"],
             "unique": ["boolean"], "weights": [Options(str, set(WEIGHTS))],
             "rejection": [Options(str, set(REJECTIONS))], "context": [Options(int, set(CONTEXT_DEPTHS)), None],
             "budget": [Options(str, {"training"}), None], "random_state": ["random_state"]},
            owner="Grammar.sample",
        )
        if () not in self._by_lhs:
            raise ValueError("the grammar has no start rule: fit it on at least one molecule")
        if context is not None and scan:
            raise ValueError("Grammar.sample: scan checks the context-free lookup; pass context=None with scan=True")
        if context is not None and not self.contexts[0]:
            raise ValueError("Grammar.sample: this grammar has no context index (saved in format fmg-grammar/1); "
                             "refit it, or pass context=None")
        limits = dict(self.budget) if budget == "training" else None
        rng = check_random_state(random_state)
        opts = (max_steps, max_tries, scan, weights, rejection, context, limits)
        if not unique:
            out = self._run([(s, *opts) for s in spawn(rng, int(n))], n_jobs)
            if any(s is None for s, _ in out):
                raise RuntimeError(_NO_MOLECULE.format(max_tries))
            return SampleResult([s for s, _ in out if s is not None], int(sum(r for _, r in out)))
        root = np.random.SeedSequence(int(rng.integers(2**63)))
        seen: dict[str, None] = {}
        rejected = draws = 0
        while len(seen) < n:
            batch = max(n - len(seen), 8 * n_jobs)
            args = [(np.random.default_rng(c), *opts) for c in root.spawn(batch)]
            # draws are consumed in stream order and only until the n-th distinct molecule, so the result,
            # the rejection count and the errors do not depend on n_jobs (whose batches draw further ahead)
            for smi, r in self._run(args, n_jobs):
                if len(seen) >= n:
                    break
                if draws >= max_tries * max(n, 1):
                    raise RuntimeError(f"only {len(seen)} distinct molecules in {draws} draws; the grammar may "
                                       f"not generate {n} distinct molecules")
                if smi is None:
                    raise RuntimeError(_NO_MOLECULE.format(max_tries))
                draws += 1
                rejected += r
                seen.setdefault(smi, None)
        return SampleResult(list(seen), rejected)

    def _run(self, args: list[tuple[Any, ...]], n_jobs: int) -> list[tuple[str | None, int]]:
        if n_jobs == 1 or len(args) < 2:
            return [self._draw(*a) for a in args]
        from concurrent.futures import ProcessPoolExecutor

        with ProcessPoolExecutor(max_workers=n_jobs) as pool:
            return list(pool.map(self._draw_packed, args, chunksize=max(1, len(args) // (4 * n_jobs))))

    def _draw_packed(self, a: tuple[Any, ...]) -> tuple[str | None, int]:
        return self._draw(*a)

    def _draw(self, rng: np.random.Generator, max_steps: int, max_tries: int, scan: bool, weights: str = "counts",
              rejection: str = "derivation", context: int | None = None,
              budget: dict[str, int] | None = None) -> tuple[str | None, int]:
        """One sample and its rejected derivations; ``(None, max_tries)`` when every try failed."""
        probs = self.probabilities(weights)
        for tries in range(max_tries):
            smi = self._sample_one(rng, probs, max_steps, scan, rejection, context, weights, budget)
            if smi is not None:
                return smi, tries
        return None, max_tries

    # -- persistence ------------------------------------------------------------------------------------
    def to_json(self) -> dict[str, Any]:
        """Plain-JSON form (rules and counts)."""
        contexts = [[depth, _listify(key), [[i, _listify(sig), c] for (i, sig), c in table.items()]]
                    for depth, tables in self.contexts.items() for key, table in tables.items()]
        return {"format": "fmg-grammar/2", "rules": [r.to_json() for r in self.rules], "counts": self.counts,
                "descriptions": self.descriptions, "sources": self.sources, "contexts": contexts,
                "budget": self.budget}

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> Grammar:
        """Inverse of ``to_json``."""
        if d.get("format") not in ("fmg-grammar/1", "fmg-grammar/2"):
            raise ValueError(f"not a saved fmg grammar (format {d.get('format')!r}; accepted: 'fmg-grammar/2', "
                             "'fmg-grammar/1' without a context index)")
        g = cls()
        n = len(d["rules"])
        for key in ("counts", "descriptions", "sources"):
            if key in d and len(d[key]) != n:
                raise ValueError(f"not a consistent fmg grammar: {len(d[key])} {key} for {n} rules")
        for k, c in enumerate(d["counts"]):
            if isinstance(c, bool) or not isinstance(c, int | float) or not math.isfinite(c) or c <= 0:
                raise ValueError(f"not a consistent fmg grammar: count of rule {k} is {c!r}; accepted: a "
                                 "finite number > 0")
        for r, c, desc, src in zip(d["rules"], d["counts"], d.get("descriptions", [""] * n),
                                   d.get("sources", [""] * n), strict=True):
            i = len(g.rules)
            try:
                rule = Rule.from_json(r)
            except (KeyError, TypeError, ValueError) as exc:
                raise ValueError(f"not a consistent fmg grammar: rule {i} is malformed ({type(exc).__name__}: "
                                 f"{exc}); accepted: the output of Grammar.save") from exc
            g.rules.append(rule)
            g.counts.append(float(c))
            g.descriptions.append(str(desc))
            g.sources.append(str(src))
            g._buckets.setdefault(g._key(rule), []).append(i)
            g._by_lhs.setdefault(rule.lhs, []).append(i)
        for depth, key, entries in d.get("contexts", []):
            table = g.contexts.setdefault(int(depth), {}).setdefault(_tuplify(key), {})
            for i, sig, c in entries:
                if not 0 <= int(i) < n:
                    raise ValueError(f"not a consistent fmg grammar: a context names rule {i} of {n}")
                table[(int(i), _tuplify(sig))] = float(c)
        g.budget = {str(k): int(v) for k, v in d.get("budget", {}).items()}
        return g

    def save(self, path: str | Path) -> Path:
        """Write the grammar as JSON; returns the path."""
        path = Path(path)
        path.write_text(json.dumps(self.to_json()))
        return path

    @classmethod
    def load(cls, path: str | Path) -> Grammar:
        """Read a grammar written by ``save``."""
        return cls.from_json(json.loads(Path(path).read_text()))

    def __getstate__(self) -> dict[str, Any]:
        return self.to_json()

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(Grammar.from_json(state).__dict__)

    def __repr__(self) -> str:
        return f"Grammar(n_rules={self.n_rules}, n_nonterminal_labels={len(self._by_lhs)})"


_NO_MOLECULE = "no valid molecule in {} derivations; raise max_tries or max_steps"


def _check_choice(name: str, value: Any, accepted: Sequence[str]) -> None:
    if not isinstance(value, str) or value not in accepted:
        raise ValueError(f"{name} must be one of {', '.join(map(repr, accepted))}; got {value!r}")


def _fragment(dec: Decomposition, k: int) -> str:
    atoms = sorted({a for b in dec.motifs[k] for a in (dec.mol.GetBondWithIdx(b).GetBeginAtomIdx(),
                                                       dec.mol.GetBondWithIdx(b).GetEndAtomIdx())})
    return Chem.MolFragmentToSmiles(dec.mol, atomsToUse=atoms, bondsToUse=sorted(dec.motifs[k]), kekuleSmiles=True,
                                allHsExplicit=True)


def _listify(value: Any) -> Any:
    return [_listify(v) for v in value] if isinstance(value, tuple) else value


def _tuplify(value: Any) -> Any:
    return tuple(_tuplify(v) for v in value) if isinstance(value, list) else value


def _choose(rng: np.random.Generator, p: np.ndarray) -> int:
    """``rng.choice(len(p), p=p / p.sum())`` without its argument checks: the same draw, about 2x faster."""
    cdf = np.cumsum(p / p.sum())
    cdf /= cdf[-1]
    return int(cdf.searchsorted(rng.random(), side="right"))


def _random_perm(lhs: Sequence[Any], label: Sequence[Any], rng: np.random.Generator) -> tuple[int, ...]:
    """Random label-preserving assignment of the rule's external nodes to the nonterminal's nodes.

    ``lhs[i]`` is external node ``i``'s label (a pair, or a slot in context), ``label`` the nonterminal's.
    """
    slots: dict[Any, list[int]] = {}
    for pos, pair in enumerate(label):
        slots.setdefault(tuple(pair), []).append(pos)
    shuffled = {pair: [pos[i] for i in rng.permutation(len(pos))] if len(pos) > 1 else pos
                for pair, pos in slots.items()}
    return tuple(shuffled[tuple(pair)].pop() for pair in lhs)


def _to_smiles(host: _Host, budget: dict[str, int] | None = None) -> str | None:
    mol = build_molecule(host.atoms, host.node_order)
    if mol is None or len(Chem.GetMolFrags(mol)) != 1:
        return None
    if budget:
        rings = [len(r) for r in mol.GetRingInfo().AtomRings()]
        if (mol.GetNumHeavyAtoms() > budget.get("max_atoms", math.inf)
                or max(rings, default=0) > budget.get("max_ring_size", math.inf)
                or len(rings) > budget.get("max_rings", math.inf)):
            return None
    return Chem.MolToSmiles(mol)
