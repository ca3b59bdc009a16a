"""DEG metrics against brute force and the training-set anchors; Bradley-Terry against choix."""

import numpy as np
import pytest
from rdkit import Chem, DataStructs
from rdkit.Chem import AllChem

from fmg import bradley_terry, diversity, evaluate, load_dataset, membership

ANCHORS = {"isocyanates": 0.727, "acrylates": 0.750, "chain_extenders": 0.906}


def deg_diversity_loop(smiles):
    """DEG's InternalDiversity loop (BulkTanimotoSimilarity over Morgan radius 3, 2048 bits)."""
    fps = [AllChem.GetMorganFingerprintAsBitVect(Chem.MolFromSmiles(s), 3, 2048) for s in smiles]
    similarity = sum(sum(DataStructs.BulkTanimotoSimilarity(fps[i], fps[:i])) for i in range(len(fps)))
    n = len(fps)
    return 1 - similarity / (n * (n - 1) / 2)


@pytest.mark.parametrize("name", list(ANCHORS))
def test_training_set_diversity_matches_the_anchor_and_the_deg_loop(name):
    smiles = load_dataset(name)
    div = diversity(smiles)
    assert abs(div - ANCHORS[name]) < 1e-3
    assert abs(div - deg_diversity_loop(smiles)) < 1e-12
    assert membership(smiles, name).all()


def test_membership_rejects_other_classes():
    assert not membership(load_dataset("acrylates"), "isocyanates").any()
    assert membership(["O=C=NCCN=C=O", "O=C=NCC", "OCCO", "NCCO", "NC(=O)CO"], "chain_extenders").tolist() == [
        False, False, True, True, False]


def test_evaluate_on_a_known_case():
    m = evaluate(["CCO", "OCC", "C1CC", "CCN", "c1ccccc1"], ["CCO"], "chain_extenders")
    assert m.n == 5 and m.valid == 0.8 and m.unique == 0.75 and m.novelty == pytest.approx(2 / 3)
    assert m.diversity == pytest.approx(deg_diversity_loop(["CCO", "CCO", "CCN", "c1ccccc1"]), abs=1e-12)
    assert m.membership == 0.0
    assert 1 <= m.sa_mean <= 10 and m.rs_proxy == 1.0


def test_bradley_terry_equals_choix_mle():
    choix = pytest.importorskip("choix")
    rng = np.random.default_rng(0)
    for n in (3, 5, 8):
        strengths = rng.normal(size=n)
        data = []
        for _ in range(40 * n):
            i, j = rng.choice(n, 2, replace=False)
            win = rng.random() < 1 / (1 + np.exp(strengths[j] - strengths[i]))
            data.append((int(i), int(j)) if win else (int(j), int(i)))
        ours = bradley_terry(n, data)
        np.testing.assert_allclose(ours, choix.ilsr_pairwise(n, data, tol=1e-13), atol=1e-6)
        np.testing.assert_allclose(ours, choix.mm_pairwise(n, data, tol=1e-13), atol=1e-6)
        assert abs(ours.mean()) < 1e-12


def test_bradley_terry_errors():
    with pytest.raises(ValueError, match="never wins"):
        bradley_terry(3, [(0, 1), (1, 0)])
    with pytest.raises(ValueError, match="comparison 0"):
        bradley_terry(2, [(0, 2)])


def chamfer_loop(a, b):
    """Brute force: BulkTanimotoSimilarity of every molecule of one set against the other, both ways."""
    fa = [AllChem.GetMorganFingerprintAsBitVect(Chem.MolFromSmiles(s), 3, 2048) for s in a]
    fb = [AllChem.GetMorganFingerprintAsBitVect(Chem.MolFromSmiles(s), 3, 2048) for s in b]
    ab = sum(min(1 - t for t in DataStructs.BulkTanimotoSimilarity(x, fb)) for x in fa) / len(fa)
    ba = sum(min(1 - t for t in DataStructs.BulkTanimotoSimilarity(y, fa)) for y in fb) / len(fb)
    return ab + ba


def test_chamfer_distance_equals_a_brute_force_loop():
    from fmg import chamfer_distance

    iso, acr, ext = (load_dataset(n) for n in ANCHORS)
    for a, b in ((iso, acr), (acr, ext), (iso[:3], iso), (ext, ["CCO"])):
        assert abs(chamfer_distance(a, b) - chamfer_loop(a, b)) < 1e-12
        assert abs(chamfer_distance(a, b) - chamfer_distance(b, a)) < 1e-12  # symmetric
    assert chamfer_distance(iso, list(reversed(iso))) == 0.0
    assert 0 < chamfer_distance(iso[:3], iso) < chamfer_distance(acr, iso) <= 2
    m = evaluate(["O=C=NCCN=C=O", "CCO"], iso, "isocyanates")
    assert m.chamfer == pytest.approx(chamfer_loop(["O=C=NCCN=C=O", "CCO"], iso), abs=1e-12)
    with pytest.raises(ValueError, match="two sequences of SMILES, not a single string"):
        chamfer_distance("CCO", iso)  # would otherwise compare the atoms C, C and O
    with pytest.raises(ValueError, match="sequence of SMILES, not a single string"):
        diversity("CCO")
    with pytest.raises(ValueError, match="two non-empty sets, got 0 and 11"):
        chamfer_distance([], iso)
    with pytest.raises(ValueError, match="molecule 1 'C1CC': RDKit cannot parse"):
        chamfer_distance(["CCO", "C1CC"], iso)


def test_empty_smiles_is_not_a_molecule_in_the_metrics():
    # RDKit reads "" as a molecule with no atoms (an all-zero fingerprint): it must not count as a sample
    from fmg import chamfer_distance, diversity
    from fmg.metrics import membership, sa_scores

    with pytest.raises(ValueError, match="molecule 0 '': RDKit reads no atom"):
        chamfer_distance(["", "CCO"], ["CCO"])
    with pytest.raises(ValueError, match="molecule 1 '': RDKit reads no atom"):
        diversity(["CCO", ""])
    with pytest.raises(ValueError, match="molecule 0 '  ': RDKit"):
        membership(["  "], "isocyanates")
    with pytest.raises(ValueError, match="molecule 0 None: expected a SMILES string"):
        sa_scores([None])
    for kw, match in (({"n_bits": 0}, "n_bits must be a positive int"), ({"radius": -1}, "radius must be")):
        with pytest.raises(ValueError, match=match):
            chamfer_distance(["CCO"], ["CCN"], **kw)
        with pytest.raises(ValueError, match=match):
            diversity(["CCO", "CCN"], **kw)


def test_evaluate_names_an_invalid_training_molecule():
    m = evaluate(["CCO", ".", " ", "CCN"], ["CCO"])  # "." parses to a molecule without atoms
    assert m.valid == 0.5 and m.novelty == 0.5
    with pytest.raises(ValueError, match="train molecule 1 'C1CC': RDKit cannot parse"):
        evaluate(["CCO", "CCN"], ["CCO", "C1CC"])


def test_a_single_string_is_not_a_set_of_molecules():
    # "CCO" iterated gives the molecules C, C and O: every metric would be computed on atoms
    from fmg.metrics import sa_scores

    for call in (lambda: evaluate("CCO", ["CCO"]), lambda: evaluate(["CCO"], "CCO"),
                 lambda: membership("O=C=NCN=C=O", "isocyanates"), lambda: sa_scores("CCO")):
        with pytest.raises(ValueError, match="single string"):
            call()
