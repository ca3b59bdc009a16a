"""Every public entry point names the parameter in TypeError (wrong type) and ValueError (wrong value)."""

import pytest
import torch
from icml25_shared.testing import assert_rejects

from equigx import TFN, EquiGX
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
