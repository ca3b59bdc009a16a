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
