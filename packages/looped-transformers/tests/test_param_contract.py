"""Each public entry point rejects a wrong type with TypeError and a wrong value with ValueError, naming the parameter."""

import pytest
from icml25_shared.testing import assert_rejects

from looped_transformers import LoopedConfig, LoopedForCausalLM
from looped_transformers.train import Curriculum, TrainConfig

TINY = {"vocab_size": 16, "hidden_size": 16, "num_attention_heads": 2}


@pytest.mark.parametrize(("name", "wrong_type", "wrong_value"), [
    ("n_loops", 2.5, 0),
    ("hidden_size", "16", -16),
    ("num_key_value_heads", 1.0, 0),
    ("head_dim", "8", 0),
    ("block", 1, "bert"),
    ("timestep", None, "sinusoid"),
    ("rms_norm_eps", "1e-6", 0.0),
])
def test_looped_config(name, wrong_type, wrong_value):
    valid = {key: value for key, value in TINY.items() if key != name}
    assert_rejects(LoopedConfig, name, wrong_type=wrong_type, wrong_value=wrong_value, **valid)


def test_attention_bias_must_be_a_flag():
    with pytest.raises(TypeError, match="attention_bias"):
        LoopedConfig(**TINY, attention_bias="yes")


@pytest.mark.parametrize(("name", "wrong_type", "wrong_value"), [
    ("steps", "100", 0),
    ("lr", "1e-3", 0.0),
    ("min_lr_ratio", None, 1.5),
    ("autocast", True, "float8"),
])
def test_train_config(name, wrong_type, wrong_value):
    assert_rejects(TrainConfig, name, wrong_type=wrong_type, wrong_value=wrong_value)


def test_curriculum():
    assert_rejects(Curriculum, "start", wrong_type=1.5, wrong_value=0, end=4)


def test_forward_n_loops():
    model = LoopedForCausalLM(LoopedConfig(**TINY)).eval()
    import torch

    ids = torch.zeros(1, 3, dtype=torch.long)
    assert_rejects(lambda n_loops: model(ids, n_loops=n_loops), "n_loops", wrong_type="2", wrong_value=0)


@pytest.mark.parametrize(("name", "wrong_type", "wrong_value"), [("order", 1.0, 3), ("vocab_size", "8", 0)])
def test_ngram_tables(name, wrong_type, wrong_value):
    import numpy as np

    from looped_transformers.tasks import ngram_tables

    valid = {"order": 1, "vocab_size": 8}
    valid.pop(name)
    assert_rejects(lambda **kw: ngram_tables(np.arange(40) % 4, **kw), name, wrong_type=wrong_type,
                   wrong_value=wrong_value, **valid)


@pytest.mark.parametrize(("name", "wrong_type", "wrong_value"), [("n", 2.0, 0), ("batch_size", "4", 0)])
def test_ngram_baselines(name, wrong_type, wrong_value):
    from looped_transformers.tasks import CharLMTask, ngram_baselines

    task = CharLMTask(seq_len=8, n_chars=20_000)
    assert_rejects(lambda **kw: ngram_baselines(task, **kw), name, wrong_type=wrong_type, wrong_value=wrong_value)
