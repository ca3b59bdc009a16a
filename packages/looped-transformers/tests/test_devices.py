"""Batches follow the model's device (checked on the ``meta`` device, so it runs on CPU); mixed precision."""

import pytest
import torch

from looped_transformers import LoopedConfig, LoopedForCausalLM
from looped_transformers.tasks import CharLMTask, DPTask, RegressionTask
from looped_transformers.train import LoopedRegressor, TrainConfig, answer_accuracy, lm_loss, regression_error, train


class Reached(Exception):
    """Raised by the spy forward once it has recorded where its inputs live."""


def _spy(model, seen):
    def forward(*args, **kwargs):
        first = args[0] if args else kwargs.get("input_ids")
        seen.append(first.device)
        raise Reached
    model.forward = forward
    return model


def _lm(vocab):
    return LoopedForCausalLM(LoopedConfig(vocab_size=vocab, hidden_size=16, num_attention_heads=2,
                                          max_position_embeddings=32))


@pytest.mark.parametrize("step", ["train", "answer_accuracy", "lm_loss", "regression_train", "regression_error"])
def test_every_batch_reaches_the_model_on_the_models_device(step):
    seen = []
    ed, lm, icl = DPTask("ed", min_length=2, max_length=3, alphabet=3), CharLMTask(seq_len=8, n_chars=5000), \
        RegressionTask(n_dims=2, n_points=3)
    if step == "regression_train" or step == "regression_error":
        model = LoopedRegressor(LoopedConfig(vocab_size=1, hidden_size=16, num_attention_heads=2,
                                             max_position_embeddings=6), n_dims=2)
    else:
        model = _lm(128 if step == "lm_loss" else ed.vocab_size)
    model = _spy(model.to("meta"), seen)
    calls = {"train": lambda: train(model, ed, TrainConfig(steps=1, batch_size=2), random_state=0),
             "answer_accuracy": lambda: answer_accuracy(model, ed, n=2, random_state=0),
             "lm_loss": lambda: lm_loss(model, lm, n=2, random_state=0),
             "regression_train": lambda: train(model, icl, TrainConfig(steps=1, batch_size=2), random_state=0),
             "regression_error": lambda: regression_error(model, icl.sample(2, 0))}
    with pytest.raises(Reached):
        calls[step]()
    assert seen == [torch.device("meta")]


def test_bfloat16_autocast_trains_and_runs_the_forward_in_bfloat16():
    task = DPTask("ed", min_length=2, max_length=3, alphabet=3)
    torch.manual_seed(0)
    model = _lm(task.vocab_size)
    dtypes = []
    model.lm_head.register_forward_hook(lambda mod, inp, out: dtypes.append(out.dtype))
    result = train(model, task, TrainConfig(steps=3, batch_size=4, autocast="bfloat16"), random_state=0)
    assert dtypes and set(dtypes) == {torch.bfloat16}
    assert all(torch.isfinite(torch.tensor(result.losses)))
    assert model.lm_head.weight.dtype == torch.float32  # weights stay float32


def test_autocast_option_is_validated():
    with pytest.raises(ValueError, match="autocast"):
        TrainConfig(autocast="float8")


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")
@pytest.mark.parametrize("autocast", [None, "bfloat16"])
def test_training_metrics_and_generation_run_on_cuda(autocast):
    task = DPTask("ed", min_length=2, max_length=4, alphabet=3)
    torch.manual_seed(0)
    model = _lm(task.vocab_size).to("cuda")
    result = train(model, task, TrainConfig(steps=20, batch_size=16, lr=3e-3, autocast=autocast), random_state=0)
    assert result.losses[-1] < result.losses[0]
    assert 0.0 <= answer_accuracy(model, task, n=32, random_state=1) <= 1.0
    ids = task.sample(2, random_state=2).input_ids[:, :5].to("cuda")
    out = model.generate(ids, max_new_tokens=3, do_sample=False)
    assert out.device.type == "cuda" and out.shape == (2, 8)
