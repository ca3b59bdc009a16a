"""Each public entry point rejects a wrong type with TypeError and a wrong value with ValueError, naming the parameter."""

import math

import pytest
import torch
from icml25_shared.testing import assert_rejects

from quest import QuestConfig, quantize_
from quest.train import TrainConfig


@pytest.mark.parametrize(("name", "wrong_type", "wrong_value"), [
    ("weight_bits", 4.0, 9),
    ("act_bits", 4.5, 0),
    ("hadamard", 1, "quarter"),
    ("trust", "big", -1.0),
    ("block", 64.0, 1),
    ("method", 3, "gptq"),
    ("clip_scale", "1", 0.0),
    ("weight_grid", None, "nf4"),
    ("weight_sparsity", 24, "1:4"),
])
def test_quest_config(name, wrong_type, wrong_value):
    assert_rejects(QuestConfig, name, wrong_type=wrong_type, wrong_value=wrong_value)


def test_quantize_validates_its_config():
    with pytest.raises(TypeError, match="QuestConfig"):
        quantize_(torch.nn.Sequential(torch.nn.Linear(128, 128)), {"weight_bits": 4})


@pytest.mark.parametrize(("name", "wrong_type", "wrong_value"), [
    ("steps", "10", 0),
    ("lr", "1e-3", 0.0),
    ("warmup_frac", None, 1.0),
    ("random_state", 1.5, -1),
])
def test_train_config(name, wrong_type, wrong_value):
    assert_rejects(TrainConfig, name, wrong_type=wrong_type, wrong_value=wrong_value, call=lambda cfg: cfg.validate())


def test_trust_accepts_infinity_for_plain_ste():
    assert QuestConfig(trust=math.inf).trust == math.inf
