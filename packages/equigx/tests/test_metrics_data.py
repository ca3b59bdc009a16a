"""Metrics on cases with known answers; the generators' geometry; training."""

import numpy as np
import pytest
import torch

from equigx import TFN, Graphs
from equigx.data import MOTIFS, helix, make_shapes, make_spiral, random_rotation
from equigx.metrics import explanation_auroc, fidelity, sparsity, top_k_mask
from equigx.train import train


def test_auroc_known_answers():
    batch = np.array([0, 0, 0, 0, 1, 1, 1])
    mask = np.array([1, 1, 0, 0, 0, 1, 0], bool)
    assert explanation_auroc(mask.astype(float), mask, batch) == 1.0
    assert explanation_auroc(-mask.astype(float), mask, batch) == 0.0
    scores = np.array([0.9, 0.1, 0.5, 0.2, 0.3, 0.2, 0.1])
    # graph 0: pairs (pos, neg) = (0.9 > 0.5, 0.9 > 0.2, 0.1 < 0.5, 0.1 < 0.2) -> 0.5; graph 1: 0.2 vs (0.3, 0.1) -> 0.5
    per = explanation_auroc(scores, mask, batch, per_graph=True)
    np.testing.assert_allclose(per, [0.5, 0.5])
    allpos = np.ones(7, bool)
    assert np.isnan(explanation_auroc(scores, allpos, batch, per_graph=True)).all()
    with pytest.raises(ValueError, match="one entry per node"):
        explanation_auroc(scores[:3], mask, batch)


def test_top_k_mask_and_sparsity_against_brute_force():
    rng = np.random.default_rng(0)
    batch = np.repeat(np.arange(4), [5, 9, 12, 3])
    scores = rng.normal(size=len(batch))
    top = top_k_mask(scores, batch, 0.2)
    for g in range(4):
        s = scores[batch == g]
        k = int(np.ceil(0.2 * len(s)))
        assert set(np.nonzero(top[batch == g])[0]) == set(np.argsort(-s)[:k])
    one_hot = np.zeros(10)
    one_hot[3] = 5.0
    assert sparsity(one_hot, np.zeros(10, int), fraction=0.1) == 1.0
    assert sparsity(np.ones(10), np.zeros(10, int), fraction=0.1) == pytest.approx(0.1)
    with pytest.raises(ValueError, match="fraction"):
        top_k_mask(scores, batch, 0.0)


class _CountModel(torch.nn.Module):
    """Predicts class 1 when a graph holds a node with feature 2 (a known answer for fidelity)."""

    n_out = 2

    def geometry(self, pos, batch, n_graphs, require_edges=True):
        return (batch, n_graphs)

    def run(self, x, geo):
        batch, n = geo
        has = torch.zeros(n, dtype=x.dtype).index_add_(0, batch, (x[:, 0] == 2).to(x.dtype))
        return torch.stack([1 - (has > 0).to(x.dtype), (has > 0).to(x.dtype)], dim=1)


def test_fidelity_known_answer():
    pos = [np.arange(30).reshape(10, 3).astype(float)] * 2
    feats = [np.ones((10, 1)), np.ones((10, 1))]
    feats[0][4] = 2.0
    feats[1][7] = 2.0
    graphs = Graphs.from_list(pos, feats, y=[1, 1], dtype=torch.float64)
    key = (graphs.node_attr[:, 0] == 2).numpy().astype(float)
    fid = fidelity(_CountModel(), graphs, key, fraction=0.1)
    assert (fid.accuracy, fid.accuracy_without_top, fid.accuracy_without_bottom) == (1.0, 0.0, 1.0)
    assert fid.fid_plus == 1.0 and fid.fid_minus == 0.0
    assert fidelity(_CountModel(), graphs, -key, fraction=0.1).fid_plus == 0.0


def test_shapes_motifs_are_regular_and_labelled():
    for name, pts in MOTIFS.items():
        d = np.linalg.norm(pts[:, None] - pts[None], axis=-1)
        nearest = np.sort(d, axis=1)[:, 1]
        np.testing.assert_allclose(nearest, 1.0, atol=1e-12, err_msg=name)
    graphs = make_shapes(10, random_state=0)
    assert graphs.y.tolist() == [0, 1, 2, 3, 4] * 2
    sizes = [len(p) for p in MOTIFS.values()]
    for g in range(10):
        sel = graphs.batch == g
        assert int(graphs.node_mask[sel].sum()) == sizes[g % 5]
        pos = graphs.pos[sel].double()
        d = torch.cdist(pos, pos) + torch.eye(int(sel.sum())) * 10
        assert float(d.min()) > 0.85  # scaled motif edge >= 0.95, distractors >= 0.9 apart
    assert torch.equal(make_shapes(3, random_state=4).pos, make_shapes(3, random_state=4).pos)


def test_helix_handedness_is_the_sign_of_a_triple_product():
    def chirality(p):
        d = np.diff(p, axis=0)
        return np.sign(np.mean([np.dot(np.cross(d[i], d[i + 1]), d[i + 2]) for i in range(len(d) - 2)]))

    right, left = helix(8, handed=1), helix(8, handed=-1)
    assert chirality(right) == 1 and chirality(left) == -1
    rot = random_rotation(0)
    assert np.linalg.det(rot) == pytest.approx(1.0)
    assert chirality(right @ rot.T) == 1
    np.testing.assert_allclose(left, right * [1, -1, 1])
    spiral = make_spiral(4, random_state=0)
    assert spiral.y.tolist() == [0, 1, 0, 1]


def test_training_reduces_the_loss():
    torch.manual_seed(0)
    graphs = make_shapes(20, n_distractors=(3, 5), motifs=("tetrahedron", "cube"), random_state=0)
    model = TFN(n_out=2, mul=2, lmax=1, r_max=1.5, n_basis=4, radial_hidden=8, n_scalars=4, head_hidden=4)
    result = train(model, graphs, epochs=10, lr=3e-2, batch_size=10, random_state=0)
    assert result.losses[-1] < 0.8 * result.losses[0], result.losses
    with pytest.raises(ValueError, match="labels"):
        train(model, Graphs(graphs.pos, graphs.node_attr, graphs.batch, graphs.n_graphs), epochs=1)


def test_degree_alone_finds_shapes_motifs_but_not_decoy_shapes_motifs():
    from equigx import TFN
    from equigx.baselines import DegreeBaseline
    from equigx.data import make_decoy_shapes
    from equigx.metrics import explanation_auroc

    torch.manual_seed(0)
    model = TFN(n_out=5, mul=2, lmax=1, r_max=1.5)
    shapes, decoy = make_shapes(60, random_state=0), make_decoy_shapes(60, random_state=0)
    on = {name: explanation_auroc(DegreeBaseline(model).explain(g).node_relevance, g.node_mask, g.batch)
          for name, g in (("shapes", shapes), ("decoy", decoy))}
    assert on["shapes"] > 0.95 and 0.4 < on["decoy"] < 0.6, on
    # the degree is the number of other nodes within the cutoff, by brute force
    g = decoy.select([0])
    d = torch.cdist(g.pos, g.pos)
    brute = ((d < 1.5).sum(dim=1) - 1).numpy()
    np.testing.assert_array_equal(DegreeBaseline(model).explain(g).node_relevance, brute)
    # the mask holds exactly the class motif's points
    assert decoy.node_mask.sum() == sum(len(MOTIFS[n]) for n in np.array(list(MOTIFS))[decoy.y.numpy()])
