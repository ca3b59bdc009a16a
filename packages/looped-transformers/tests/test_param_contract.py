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


def test_ngram_tables_refuses_silent_garbage():
    import numpy as np

    from looped_transformers.tasks import ngram_tables

    ids = np.arange(40) % 4
    with pytest.raises(TypeError, match="ids must be a 1-D array of integer token ids"):
        ngram_tables(ids + 0.7, order=1, vocab_size=4)  # float ids were truncated
    with pytest.raises(TypeError, match="ids must be a 1-D array"):
        ngram_tables(ids.reshape(4, 10), order=1, vocab_size=4)  # 2-D ids were flattened
    for bad in ((0.0,), (-1.0,), (float("nan"),)):
        with pytest.raises(ValueError, match="concentrations must be a float > 0"):
            ngram_tables(ids, order=1, vocab_size=4, concentrations=bad)  # NaN or negative probabilities
    with pytest.raises(ValueError, match="concentrations must be a non-empty sequence"):
        ngram_tables(ids, order=1, vocab_size=4, concentrations=())
    with pytest.raises(ValueError, match="got 0 values \\(empty\\)"):
        ngram_tables(np.array([], dtype=np.int64), order=1, vocab_size=4)


@pytest.mark.parametrize(("name", "wrong_type", "wrong_value"), [("n", 2.0, -5), ("batch_size", "4", 0)])
def test_val_batches(name, wrong_type, wrong_value):
    from looped_transformers.tasks import CharLMTask

    task = CharLMTask(seq_len=8, n_chars=20_000)
    valid = {"n": 4}
    valid.pop(name, None)
    assert_rejects(lambda **kw: task.val_batches(**kw), name, wrong_type=wrong_type, wrong_value=wrong_value, **valid)


def test_verdicts_refuse_a_folder_without_cells_and_bad_counts(tmp_path):
    from looped_transformers.experiments import charlm_verdicts, icl_verdicts

    with pytest.raises(ValueError, match="folder must be a folder of stored cells .*no such folder"):
        charlm_verdicts(tmp_path / "typo", n_seeds=3)  # read as 'not run' before
    with pytest.raises(ValueError, match="no JSON in it"):
        icl_verdicts(tmp_path, n_seeds=3, steps=4000)
    (tmp_path / "baselines-seed0.json").write_text("{}")
    assert_rejects(lambda n_seeds: charlm_verdicts(tmp_path, n_seeds=n_seeds), "n_seeds", wrong_type="3",
                   wrong_value=0)
    assert_rejects(lambda compute: icl_verdicts(tmp_path, n_seeds=3, steps=0, compute=compute), "compute",
                   wrong_type=8.0, wrong_value=-5)
