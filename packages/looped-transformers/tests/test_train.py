"""Training loop: schedule, curriculum, loss falls on each task family, checkpoints, errors."""

import math

import numpy as np
import pytest
import torch

from looped_transformers import LoopedConfig, LoopedForCausalLM
from looped_transformers.tasks import CharLMTask, DPTask, RegressionTask
from looped_transformers.train import (
    Curriculum,
    LoopedRegressor,
    TrainConfig,
    answer_accuracy,
    lm_loss,
    regression_error,
    train,
)


def lm(vocab, **kwargs):
    torch.manual_seed(0)
    return LoopedForCausalLM(LoopedConfig(vocab_size=vocab, hidden_size=32, num_attention_heads=2,
                                          max_position_embeddings=64, **kwargs))


def test_schedule_warms_up_then_follows_the_cosine():
    cfg = TrainConfig(steps=101, warmup_steps=10, min_lr_ratio=0.1)
    assert cfg.lr_factor(0) == pytest.approx(0.1) and cfg.lr_factor(9) == pytest.approx(1.0)
    assert cfg.lr_factor(10) == pytest.approx(1.0)
    assert cfg.lr_factor(55) == pytest.approx(0.1 + 0.9 * 0.5 * (1 + math.cos(math.pi * 0.5)))
    assert cfg.lr_factor(100) == pytest.approx(0.1)
    cur = TrainConfig(loop_curriculum=(2, 5))
    assert [cur.loops_at(s, 4) for s in (0, 4, 5, 10, 100)] == [2, 2, 3, 4, 4]


def test_training_on_partial_sum_beats_the_majority_answer():
    task = DPTask("partial_sum", min_length=2, max_length=4, number_range=6)
    model = lm(task.vocab_size, n_loops=2, timestep="tmlt")
    before = answer_accuracy(model, task, n=300, random_state=1)
    result = train(model, task, TrainConfig(steps=120, batch_size=32, lr=3e-3, warmup_steps=10), random_state=0)
    after = answer_accuracy(model, task, n=300, random_state=1)
    answers = task.sample(300, random_state=1).answers
    majority = max(np.mean(answers), 1 - np.mean(answers))
    assert np.mean(result.losses[-20:]) < np.mean(result.losses[:5])
    assert before < 0.2 < majority <= after + 0.02, (before, after, majority)


def test_training_is_reproducible_for_a_seed():
    task = DPTask("lis", min_length=2, max_length=4, number_range=8)
    runs = []
    for _ in range(2):
        model = lm(task.vocab_size, n_loops=2)
        runs.append(train(model, task, TrainConfig(steps=5, batch_size=8), random_state=3).losses)
    assert runs[0] == runs[1]


def test_regressor_is_causal_and_its_training_loss_falls():
    task = RegressionTask(n_dims=3, n_points=6)
    torch.manual_seed(0)
    model = LoopedRegressor(LoopedConfig(vocab_size=1, hidden_size=32, num_attention_heads=2, n_loops=3,
                                         max_position_embeddings=12), 3)
    batch = task.sample(50, random_state=9)
    result = train(model, task, TrainConfig(steps=60, batch_size=32, lr=3e-3, warmup_steps=10, loss_loops=2,
                                            loop_curriculum=(1, 20)), random_state=0)
    assert result.n_loops == 3 and np.mean(result.losses[-10:]) < np.mean(result.losses[:5])
    with torch.no_grad():
        preds = model(batch.xs, batch.ys)
        changed = batch.ys.clone()
        changed[:, 3:] += 5.0  # later targets must not change earlier predictions
        again = model(batch.xs, changed)
    assert len(preds) == 3
    assert torch.allclose(preds[-1][:, :4], again[-1][:, :4], atol=1e-6)
    assert not torch.allclose(preds[-1][:, 4:], again[-1][:, 4:], atol=1e-3)
    assert regression_error(model, batch).shape == (6,)
    with pytest.raises(ValueError, match="xs has 4 dimensions"):
        model(torch.zeros(1, 2, 4), torch.zeros(1, 2))


def test_char_lm_loss_falls_and_checkpoints_load(tmp_path):
    task = CharLMTask(seq_len=32, n_chars=50_000)
    model = lm(128, n_loops=2)
    start = lm_loss(model, task, n=64, random_state=0)
    train(model, task, TrainConfig(steps=40, batch_size=16, lr=3e-3, warmup_steps=5, checkpoint_every=40,
                                   checkpoint_dir=tmp_path), random_state=0)
    end = lm_loss(model, task, n=64, random_state=0)
    assert start == pytest.approx(math.log(128), abs=0.1) and end < start - 0.7
    loaded = LoopedForCausalLM.from_pretrained(tmp_path / "step-40", local_files_only=True)
    assert lm_loss(loaded, task, n=64, random_state=0) == pytest.approx(end, rel=1e-6)


@pytest.mark.parametrize(("kwargs", "match"), [
    ({"steps": 0}, "steps must be an int >= 1"),
    ({"n_loops": 2, "loss_loops": 3}, "loss_loops=3 exceeds n_loops=2"),
    ({"loop_curriculum": (0, 5)}, "loop_curriculum"),
    ({"loop_curriculum": (1.5, 5)}, "loop_curriculum"),  # would ask the model for 1.5 loops
    ({"n_loops": 0}, "n_loops must be None or an int >= 1"),
    ({"checkpoint_every": 5}, "checkpoint_dir"),
    ({"lr": 0.0}, "lr must be a float > 0"),
])
def test_bad_train_configs_raise(kwargs, match):
    with pytest.raises(ValueError, match=match):
        TrainConfig(**kwargs)


def test_wrongly_typed_train_configs_raise_type_errors():
    with pytest.raises(TypeError, match="n_loops must be None or an int"):
        TrainConfig(n_loops=True)  # True is not a loop count


def test_mismatched_model_and_task_raise():
    task = DPTask("ed", max_length=12)
    with pytest.raises(ValueError, match="vocab_size is 40"):
        train(lm(40), task, TrainConfig(steps=1))
    with pytest.raises(ValueError, match="LoopedRegressor"):
        train(lm(task.vocab_size), RegressionTask(), TrainConfig(steps=1))
    with pytest.raises(ValueError, match="loss_loops=3 exceeds n_loops=2"):
        train(lm(task.vocab_size, n_loops=2), task, TrainConfig(steps=1, loss_loops=3))
    short = LoopedForCausalLM(LoopedConfig(vocab_size=task.vocab_size, hidden_size=32, num_attention_heads=2,
                                           max_position_embeddings=16))
    with pytest.raises(ValueError, match="needs 31 positions"):
        train(short, task, TrainConfig(steps=1))


@pytest.mark.parametrize("shape", [(4, 1), (6,), (4, 6, 1), (3, 6)])
def test_regressor_targets_of_another_shape_raise_instead_of_broadcasting(shape):
    model = LoopedRegressor(LoopedConfig(vocab_size=1, hidden_size=16, num_attention_heads=2, n_loops=1,
                                         max_position_embeddings=12), 3)
    with pytest.raises(ValueError, match=r"ys must have shape \(n, points\) = \(4, 6\)"):
        model(torch.zeros(4, 6, 3), torch.zeros(shape))


@pytest.mark.parametrize("curriculum", [(5, 2), Curriculum(start=5, end=8)])
def test_a_loop_curriculum_starting_above_the_training_loops_raises(curriculum):
    task = DPTask("lis", min_length=2, max_length=3, number_range=4)
    with pytest.raises(ValueError, match="loop_curriculum starts at 5 loops, above n_loops=4"):
        train(lm(task.vocab_size, n_loops=4), task, TrainConfig(steps=1, loop_curriculum=curriculum))
