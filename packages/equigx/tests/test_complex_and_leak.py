"""Per-layer conservation report, the gamma head rule, the two-tower protein-ligand model, PGExplainer and LRI."""

import dataclasses

import numpy as np
import pytest
import torch

from equigx import EquiGX, Graphs
from equigx.baselines import CoordinateGradient, GNNExplainer, GradCAM, LRIBernoulli, PGExplainer
from equigx.data import random_rotation
from equigx.models import TFN, ProteinLigandTFN
from equigx.rules import epsilon_rule, gamma_rule
from equigx.structures import make_complexes
from equigx.train import train


@pytest.fixture(scope="module")
def complexes() -> Graphs:
    return make_complexes(3, n_residues=(8, 11), n_ligand=(3, 5), random_state=0, dtype=torch.float64)


@pytest.fixture(scope="module")
def pl_model() -> ProteinLigandTFN:
    torch.manual_seed(3)
    return ProteinLigandTFN(mul=2, lmax=2, n_basis=4, radial_hidden=8, n_scalars=4, head_hidden=5).double()


def test_layer_leak_adds_up_to_the_leak_and_the_last_bias_keeps_exactly_its_value(tfn64, shapes64):
    exp = EquiGX(tfn64, variant="split", eps=1e-14).explain(shapes64, target=3)
    np.testing.assert_allclose(exp.layer_leak.sum(axis=0), exp.leak, rtol=1e-10, atol=1e-12)
    assert exp.layer_names[-1] == "10:Linear" and exp.layer_leak.shape == (11, shapes64.n_graphs)
    # the last layer's bias takes b_t * R_t / z_t = b_t of the explained logit, nothing else leaks there
    np.testing.assert_allclose(exp.layer_bias[-1], tfn64.layers[-1].bias[3].item(), rtol=1e-9)
    np.testing.assert_allclose(exp.layer_leak[-1], exp.layer_bias[-1], rtol=1e-9)
    # parts without biases lose only their stabiliser's share (eps = 1e-14: rounding)
    no_bias = [k for k, m in enumerate(tfn64.layers) if not isinstance(m, torch.nn.Linear)]
    assert np.abs(exp.layer_bias[no_bias]).max() == 0
    assert np.abs(exp.layer_leak[no_bias]).max() < 1e-8 * np.abs(exp.output).max()


def test_a_model_without_head_biases_conserves():
    torch.manual_seed(4)
    model = TFN(n_out=3, mul=2, lmax=1, r_max=1.6, n_basis=4, radial_hidden=6, n_scalars=4, head_hidden=5,
                head_bias=False).double()
    assert all(m.bias is None for m in model.layers if isinstance(m, torch.nn.Linear))
    from equigx.data import make_shapes

    graphs = make_shapes(3, n_distractors=(3, 5), random_state=2, dtype=torch.float64)
    exp = EquiGX(model, variant="split", eps=1e-14).explain(graphs)
    assert exp.relative_leak.max() < 1e-6
    assert np.abs(exp.layer_bias).max() == 0


def test_gamma_rule_is_epsilon_at_zero_and_the_brute_force_formula():
    torch.manual_seed(0)
    lin = torch.nn.Linear(5, 4).double()
    x, rel = torch.randn(6, 5, dtype=torch.float64), torch.randn(6, 4, dtype=torch.float64)
    torch.testing.assert_close(gamma_rule(lin, x, rel, gamma=0.0), epsilon_rule(lin, x, rel))
    g = 0.7
    w, b = lin.weight.detach(), lin.bias.detach()
    wg, bg = w + g * w.clamp(min=0), b + g * b.clamp(min=0)
    expected = torch.zeros(6, 5, dtype=torch.float64)
    for n in range(6):
        for j in range(4):
            z = float(x[n] @ wg[j] + bg[j])
            for i in range(5):
                expected[n, i] += x[n, i] * wg[j, i] / z * rel[n, j]
    torch.testing.assert_close(gamma_rule(lin, x, rel, gamma=g, eps=1e-300), expected, rtol=1e-9, atol=1e-12)


def test_head_rule_and_gamma_are_validated(tfn64, shapes64):
    with pytest.raises(ValueError, match="head_rule"):
        EquiGX(tfn64, head_rule="z+").explain(shapes64)
    with pytest.raises(ValueError, match="gamma"):
        EquiGX(tfn64, head_rule="gamma", gamma=-1.0).explain(shapes64)


def test_complex_towers_have_no_cross_edges_and_explanations_conserve_and_are_invariant(pl_model, complexes):
    geo = pl_model.graph_geometry(complexes)
    part = complexes.node_part
    assert (part[geo.edge_src] == part[geo.edge_dst]).all()
    assert len(geo.towers) == 2 and sum(t.edge_src.numel() for t in geo.towers) == geo.edge_src.numel()
    with torch.no_grad():
        pred = pl_model(complexes)[:, 0].numpy()
    exp = EquiGX(pl_model, variant="split").explain(complexes)
    np.testing.assert_allclose(exp.output, pred)
    total = np.bincount(exp.batch, exp.node_scores(), minlength=complexes.n_graphs)
    np.testing.assert_allclose(total + exp.leak, exp.output, rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(exp.layer_leak.sum(axis=0), exp.leak, rtol=1e-9, atol=1e-12)
    assert np.abs(exp.node_relevance[part.numpy() == 1]).sum() > 0  # the ligand tower is explained too
    torch.manual_seed(3)
    unbiased = ProteinLigandTFN(mul=2, lmax=2, n_basis=4, radial_hidden=8, n_scalars=4, head_hidden=5,
                                head_bias=False).double()
    assert EquiGX(unbiased, variant="split", eps=1e-14).explain(complexes).relative_leak.max() < 1e-6
    moved = complexes.rotate(torch.from_numpy(random_rotation(5)), torch.tensor([2.0, -7.0, 1.0], dtype=torch.float64))
    exp2 = EquiGX(pl_model, variant="split").explain(moved)
    scale = np.abs(exp.output).max()
    for a, b in ((exp.node_relevance, exp2.node_relevance), (exp.edge_direction, exp2.edge_direction),
                 (exp.edge_distance, exp2.edge_distance)):
        np.testing.assert_allclose(b, a, atol=1e-8 * scale)


def test_complex_model_errors(pl_model, complexes):
    with pytest.raises(ValueError, match="regression"):
        EquiGX(pl_model).explain(complexes, target=0)
    with pytest.raises(ValueError, match="node_part"):
        pl_model(dataclasses.replace(complexes, node_part=None))
    ligand_free = complexes.subset_nodes(complexes.node_part == 0)
    with pytest.raises(ValueError, match="no ligand node"):
        pl_model(ligand_free)
    with pytest.raises(ValueError, match="one output"):
        ProteinLigandTFN(n_out=2)
    with pytest.raises(ValueError, match="0 \\(protein\\) or 1"):
        pl_model(dataclasses.replace(complexes, node_part=complexes.node_part * 2))
    with pytest.raises(ValueError, match="one value per graph"):
        Graphs.from_list([np.zeros((2, 3))], [np.ones((2, 1))], y=[1.0, 2.0])


def test_complex_regressor_trains_and_gradient_baselines_run(complexes):
    torch.manual_seed(0)
    model = ProteinLigandTFN(mul=2, lmax=1, n_basis=4, radial_hidden=6, n_scalars=4, head_hidden=4).double()
    result = train(model, complexes, epochs=4, lr=2e-2, random_state=0)
    assert result.losses[-1] < result.losses[0] and np.isnan(result.train_accuracy)
    for explainer in (CoordinateGradient(model), GradCAM(model), GNNExplainer(model, epochs=1),
                      PGExplainer(model, epochs=1, batch_size=3)):
        att = explainer.explain(complexes)
        assert att.node_relevance.shape == (complexes.n_nodes,) and np.isfinite(att.node_relevance).all()
        assert np.abs(att.node_relevance).sum() > 0


def test_unit_edge_weights_leave_the_model_unchanged_and_zero_weights_cut_messages(tfn64, shapes64):
    geo = tfn64.geometry(shapes64.pos, shapes64.batch, shapes64.n_graphs)
    with torch.no_grad():
        base = tfn64.run(shapes64.node_attr, geo)
        ones = tfn64.run(shapes64.node_attr, dataclasses.replace(geo, edge_weight=torch.ones(geo.edge_src.shape[0])))
        zero = tfn64.run(shapes64.node_attr, dataclasses.replace(geo, edge_weight=torch.zeros(geo.edge_src.shape[0])))
    torch.testing.assert_close(ones, base)
    # with every message cut the graphs are indistinguishable: one output row for all
    torch.testing.assert_close(zero, zero[:1].expand_as(zero))


def test_lri_prior_schedule_and_info_loss():
    lri = LRIBernoulli(torch.nn.Linear(1, 1))
    assert [lri.prior(e) for e in (0, 9, 10, 25, 99)] == pytest.approx([0.9, 0.9, 0.8, 0.7, 0.7])
    assert float(LRIBernoulli.info_loss(torch.full((5,), 0.7), 0.7)) == pytest.approx(0.0, abs=1e-5)
    p = torch.tensor([0.2, 0.9])
    kl = (p * (p / 0.5).log() + (1 - p) * ((1 - p) / 0.5).log()).mean()
    assert float(LRIBernoulli.info_loss(p, 0.5)) == pytest.approx(float(kl), abs=1e-5)


@pytest.mark.parametrize("cls", [PGExplainer, LRIBernoulli])
def test_learned_mask_explainers_are_reproducible_bounded_and_leave_the_model_trainable(cls, tfn64, shapes64):
    a = cls(tfn64, epochs=2, batch_size=2, random_state=1).explain(shapes64)
    b = cls(tfn64, epochs=2, batch_size=2, random_state=1).explain(shapes64)
    np.testing.assert_array_equal(a.node_relevance, b.node_relevance)
    assert ((a.node_relevance >= 0) & (a.node_relevance <= 1)).all() and a.node_relevance.std() > 0
    assert all(p.requires_grad for p in tfn64.parameters())
    with pytest.raises(ValueError, match="epochs"):
        cls(tfn64, epochs=0).explain(shapes64)


@pytest.mark.parametrize(("cls", "kwargs"), [
    (PGExplainer, {"temperature": (0.0, 2.0)}), (PGExplainer, {"temperature": (5.0, -1.0)}),
    (PGExplainer, {"edge_size": float("nan")}), (PGExplainer, {"lr": float("inf")}),
    (LRIBernoulli, {"temperature": 0.0}), (LRIBernoulli, {"temperature": -1.0}),
    (LRIBernoulli, {"info_coef": float("nan")}), (LRIBernoulli, {"decay_interval": 0})])
def test_learned_mask_settings_that_give_nan_or_inverted_scores_are_refused(cls, kwargs, tfn64, shapes64):
    # these returned NaN scores, or (negative temperature) an inverted mask, without an error
    with pytest.raises(ValueError, match=next(iter(kwargs))):
        cls(tfn64, epochs=1, **kwargs).explain(shapes64)


@pytest.mark.parametrize("flag", ["False", 0, None])
def test_head_bias_must_be_a_bool(flag):
    # head_bias="False" is truthy and silently kept the biases (and the leak)
    with pytest.raises(TypeError, match="head_bias must be a bool"):
        TFN(head_bias=flag)
    with pytest.raises(TypeError, match="head_bias must be a bool"):
        ProteinLigandTFN(head_bias=flag)
    with pytest.raises(TypeError, match="self_loops must be a bool"):
        TFN(self_loops=flag)

