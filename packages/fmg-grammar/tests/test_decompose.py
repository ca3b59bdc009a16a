"""Bond graphs, chordal completion and motif trees of the 54 DEG molecules under every ablation."""

import itertools

import networkx as nx
import pytest
from rdkit import Chem

from fmg import HeuristicChemJudge, decompose, load_dataset
from fmg.chem import parse_molecule
from fmg.decomposition import bond_graph, chordal_completion, maximal_cliques
from fmg.experiments import CONFIGS as ABLATIONS
from fmg.experiments import SETS


def brute_force_cliques(g):
    """Maximal cliques by testing every node subset (small graphs only)."""
    nodes = sorted(g)
    cliques = [set(c) for r in range(1, len(nodes) + 1) for c in itertools.combinations(nodes, r)
               if all(g.has_edge(u, v) for u, v in itertools.combinations(c, 2))]
    return sorted((frozenset(c) for c in cliques if not any(c < d for d in cliques)), key=sorted)


@pytest.mark.parametrize("name", SETS)
def test_completed_bond_graph_is_chordal_supergraph(name):
    for smiles in load_dataset(name):
        mol = parse_molecule(smiles)
        g = bond_graph(mol)
        assert g.number_of_nodes() == mol.GetNumBonds()
        h = chordal_completion(g, mol.GetRingInfo().BondRings())
        assert nx.is_chordal(h) and set(g.edges()) <= set(h.edges())
        for ring in mol.GetRingInfo().BondRings():  # every ring ends up inside one motif
            assert any(set(ring) <= c for c in maximal_cliques(h))


def test_maximal_cliques_match_brute_force_on_small_molecules():
    for smiles in ["O=C=NCCCCCCN=C=O", "CC1=C(C=C(C=C1)CN=C=O)N=C=O", "OCC(O)CO", "C=CC(=O)OCC"]:
        mol = parse_molecule(smiles)
        h = chordal_completion(bond_graph(mol), mol.GetRingInfo().BondRings())
        assert maximal_cliques(h) == brute_force_cliques(h)


def test_unmerged_motif_counts_match_the_prototype_in_the_notes():
    # research notes: 17.5 / 10.1 / 7.6 motifs per molecule (max 32 / 29 / 16) before merging
    for name, (mean, top) in {"isocyanates": (17.5, 32), "acrylates": (10.0, 29),
                              "chain_extenders": (7.6, 16)}.items():
        counts = [len(decompose(s, HeuristicChemJudge(), merge=False).motifs) for s in load_dataset(name)]
        assert abs(sum(counts) / len(counts) - mean) < 0.15 and max(counts) == top


@pytest.mark.parametrize("ablation", list(ABLATIONS))
def test_every_molecule_gives_a_tree_decomposition_with_unique_atom_owners(fitted, ablation):
    for name in SETS:
        for dec in fitted[(name, ablation)].decompositions_:
            mol, t = dec.mol, dec.tree
            assert nx.is_tree(t) and set(t) == set(range(len(dec.motifs)))
            assert set().union(*dec.bags) == set(range(mol.GetNumBonds()))
            for b in range(mol.GetNumBonds()):  # running intersection: bags holding a bond are connected
                assert nx.is_connected(t.subgraph([k for k, bag in enumerate(dec.bags) if b in bag]))
            assert len(dec.owner) == mol.GetNumAtoms()
            for atom in mol.GetAtoms():  # exactly one owner, and it holds every bond of the atom
                assert {x.GetIdx() for x in atom.GetBonds()} <= dec.bags[dec.owner[atom.GetIdx()]]
            assert 0 <= dec.root < len(dec.motifs)


def test_heuristic_merges_complete_functional_groups():
    dec = decompose("O=C=NCCCCCCN=C=O", HeuristicChemJudge())
    mol = dec.mol
    iso = Chem.MolFromSmarts("[#6]N=C=O")
    for match in Chem.Mol(mol).GetSubstructMatches(iso):
        bonds = {mol.GetBondBetweenAtoms(a, b).GetIdx() for a, b in itertools.pairwise(match)}
        assert any(bonds <= m for m in dec.motifs)
    assert len(dec.merges) == 2 and "isocyanate" in dec.descriptions[dec.root]
    assert len(decompose("O=C=NCCCCCCN=C=O", HeuristicChemJudge(), merge=False).motifs) == len(dec.motifs) + 2


def test_random_root_depends_on_the_seed_only():
    s = load_dataset("isocyanates")[2]
    roots = {decompose(s, HeuristicChemJudge(), root="random", random_state=k).root for k in range(4)}
    assert len(roots) > 1
    assert decompose(s, HeuristicChemJudge(), root="random", random_state=3).root == \
        decompose(s, HeuristicChemJudge(), root="random", random_state=3).root
