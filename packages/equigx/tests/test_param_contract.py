"""Every public entry point names the parameter in TypeError (wrong type) and ValueError (wrong value)."""

import pytest
import torch
from icml25_shared.testing import assert_rejects

from equigx import TFN, EquiGX
from equigx.baselines import GNNExplainer, IntegratedGradients, LRIBernoulli, PGExplainer, RandomExplainer
from equigx.data import make_shapes
from equigx.models import ProteinLigandTFN


@pytest.fixture(scope="module")
def explain_call():
    graphs = make_shapes(2, n_distractors=(3, 4), random_state=0, dtype=torch.float64)
    torch.manual_seed(0)
    model = TFN(n_out=5, mul=2, lmax=1, r_max=1.6, n_basis=4, radial_hidden=4, n_scalars=4, head_hidden=4).double()
    return model, (lambda explainer: explainer.explain(graphs))


@pytest.mark.parametrize(("name", "wrong_type", "wrong_value"), [
    ("variant", 1, "edges"), ("root", None, "mean"), ("eps", "1e-9", 0.0), ("norm_rule", 0, "clip"),
    ("head_rule", True, "alpha-beta"), ("gamma", "0.25", -0.5)])
def test_equigx_rejects_wrong_settings(explain_call, name, wrong_type, wrong_value):
    model, call = explain_call
    assert_rejects(EquiGX, name, wrong_type=wrong_type, wrong_value=wrong_value, call=call, model=model)


@pytest.mark.parametrize(("name", "wrong_type", "wrong_value"), [
    ("mul", 2.0, 0), ("lmax", "2", 5), ("r_max", "1.5", -1.0), ("output", 0, "vector"), ("nonlinearity", None, "relu"),
    ("n_out", True, 0), ("head_bias", "False", None)])
def test_tfn_rejects_wrong_settings(name, wrong_type, wrong_value):
    if name == "head_bias":  # a flag has no wrong value of the right type: both are type errors
        with pytest.raises(TypeError, match="head_bias"):
            TFN(head_bias=wrong_value)
        wrong_value = wrong_type
        with pytest.raises(TypeError, match="head_bias"):
            TFN(head_bias=wrong_type)
        return
    assert_rejects(TFN, name, wrong_type=wrong_type, wrong_value=wrong_value)


def test_protein_ligand_tfn_rejects_wrong_settings():
    assert_rejects(ProteinLigandTFN, "task", wrong_type=1, wrong_value="ranking")
    assert_rejects(ProteinLigandTFN, "r_max_ligand", wrong_type="5", wrong_value=0.0)


@pytest.mark.parametrize(("cls", "name", "wrong_type", "wrong_value"), [
    (IntegratedGradients, "n_steps", 8.0, 0), (IntegratedGradients, "method", None, "simpson"),
    (GNNExplainer, "epochs", "10", 0), (GNNExplainer, "lr", "0.01", 0.0),
    (RandomExplainer, "random_state", "0", -1),
    (PGExplainer, "epochs", 1.5, 0), (PGExplainer, "lr", None, float("inf")), (PGExplainer, "hidden", "8", 0),
    (PGExplainer, "batch_size", 2.0, 0), (PGExplainer, "edge_size", "0", float("nan")),
    (PGExplainer, "edge_ent", None, -1.0), (PGExplainer, "temperature", 5.0, (5.0, 0.0)),
    (PGExplainer, "random_state", 0.5, -3),
    (LRIBernoulli, "info_coef", "1", -1.0), (LRIBernoulli, "init_r", None, 1.0), (LRIBernoulli, "final_r", "0.7", 0.0),
    (LRIBernoulli, "decay_r", [0.1], -0.1), (LRIBernoulli, "decay_interval", 10.0, 0),
    (LRIBernoulli, "temperature", "1", 0.0)])
def test_baselines_reject_wrong_settings(explain_call, cls, name, wrong_type, wrong_value):
    model, call = explain_call
    assert_rejects(cls, name, wrong_type=wrong_type, wrong_value=wrong_value, call=call, model=model)


def test_lri_final_prior_above_the_initial_one_is_refused(explain_call):
    model, call = explain_call
    with pytest.raises(ValueError, match="LRIBernoulli: final_r must be <= init_r"):
        call(LRIBernoulli(model, init_r=0.6, final_r=0.8))
