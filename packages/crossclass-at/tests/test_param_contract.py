"""Every public entry point names the parameter in TypeError (wrong type) and ValueError (wrong value)."""

import pytest
import torch
from icml25_shared.testing import assert_rejects

from crossclass_at import FGSM, PGD, AdversarialTrainer, DigitsMLP, TradesKL


@pytest.fixture(scope="module")
def fit_call():
    x, y = torch.rand(8, 1, 8, 8), torch.arange(8) % 2
    return lambda trainer: trainer.fit(x, y, x, y)


@pytest.mark.parametrize(("name", "wrong_type", "wrong_value"), [
    ("method", 1, "fgsm-at"), ("eps", "8/255", -0.1), ("alpha", "0.01", 0.0), ("steps", 2.5, 0), ("epochs", "10", 0),
    ("batch_size", 64.0, 0), ("lr", "0.1", 0.0), ("beta", None, -1.0), ("momentum", "0.9", -0.1),
    ("norm", 2, "l1"), ("attack_bn_mode", 0, "frozen"), ("random_state", "0", -1)])
def test_adversarial_trainer_rejects_wrong_settings(fit_call, name, wrong_type, wrong_value):
    valid = {"model": DigitsMLP(2, hidden=4)} if name == "epochs" else {"model": DigitsMLP(2, hidden=4), "epochs": 1}
    assert_rejects(AdversarialTrainer, name, wrong_type=wrong_type, wrong_value=wrong_value, call=fit_call, **valid)


@pytest.mark.parametrize("attack", [PGD, TradesKL])
def test_attacks_reject_wrong_settings(attack):
    assert_rejects(attack, "eps", wrong_type="8/255", wrong_value=-0.1)
    assert_rejects(attack, "steps", wrong_type=2.5, wrong_value=0)
    assert_rejects(attack, "bn_mode", wrong_type=None, wrong_value="frozen")
    assert_rejects(FGSM, "eps", wrong_type=None, wrong_value=float("inf"))
