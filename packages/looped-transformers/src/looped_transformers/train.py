"""Training and evaluation: loss over the last T loops, AdamW with warmup and cosine decay, a loop curriculum.

``train(model, task, TrainConfig(...))`` trains a :class:`~looped_transformers.LoopedForCausalLM` on a
token task (dynamic programming, char LM) or a :class:`LoopedRegressor` on an in-context regression task,
drawing a fresh batch every step from ``random_state``.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import torch
from icml25_shared.cli import progress
from icml25_shared.random import RandomStateLike, check_random_state
from torch import nn

from looped_transformers.modeling import LoopedConfig, LoopedForCausalLM, LoopedModel
from looped_transformers.tasks import CharLMTask, DPTask, RegressionBatch, RegressionTask

__all__ = ["LoopedRegressor", "TrainConfig", "TrainResult", "answer_accuracy", "lm_loss", "regression_error",
           "train"]


class LoopedRegressor(nn.Module):
    """A looped transformer over ``x_1, y_1, ..., x_k, y_k`` prompts (Garg et al.'s linear read-in and read-out).

    Parameters
    ----------
    config : LoopedConfig
        The trunk (``vocab_size`` is unused; ``max_position_embeddings >= 2 * points``).
    n_dims : int
        Input dimension of the regression task.
    """

    def __init__(self, config: LoopedConfig, n_dims: int) -> None:
        super().__init__()
        self.n_dims = n_dims
        self.read_in = nn.Linear(n_dims, config.hidden_size)
        self.backbone = LoopedModel(config)
        self.read_out = nn.Linear(config.hidden_size, 1)

    @property
    def config(self) -> LoopedConfig:
        """The trunk's configuration."""
        return self.backbone.config

    def forward(self, xs: torch.Tensor, ys: torch.Tensor, *, n_loops: int | None = None) -> tuple[torch.Tensor, ...]:
        """Predictions of ``y_i`` from the prompt before it, after every loop.

        Parameters
        ----------
        xs : Tensor, shape (n, points, n_dims)
            Inputs.
        ys : Tensor, shape (n, points)
            Targets (the model sees ``y_j`` for ``j < i`` only, by causality).
        n_loops : int, optional
            Loops (default ``config.n_loops``).

        Returns
        -------
        tuple of Tensor, shape (n, points)
            One prediction per loop, last loop last.
        """
        n, p, d = xs.shape
        if d != self.n_dims:
            raise ValueError(f"xs has {d} dimensions but the model reads {self.n_dims}")
        z = torch.zeros(n, 2 * p, d, dtype=xs.dtype, device=xs.device)
        z[:, 0::2] = xs
        z[:, 1::2, 0] = ys
        out = self.backbone(inputs_embeds=self.read_in(z), n_loops=n_loops, output_loop_states=True, use_cache=False)
        return tuple(self.read_out(self.backbone.norm(h[:, 0::2]))[..., 0] for h in out.loop_states)


@dataclass(frozen=True, kw_only=True)
class TrainConfig:
    """How to train (keyword-only, validated).

    Parameters
    ----------
    steps : int, default 500
        Optimiser steps.
    batch_size : int, default 32
        Problems per step.
    lr : float, default 1e-3
        Peak learning rate of AdamW.
    weight_decay : float, default 0.01
        AdamW weight decay.
    warmup_steps : int, default 50
        Linear warmup from ``lr / warmup_steps``.
    min_lr_ratio : float, default 0.1
        The cosine decays to ``min_lr_ratio * lr`` at the last step.
    grad_clip : float, default 1.0
        Global gradient-norm clip (0: off).
    n_loops : int, optional
        Loops of every training forward (default: the model config's).
    loss_loops : int, default 1
        Average the loss of the last ``T`` loops (Yang et al.); capped by the loops of the step.
    loop_curriculum : tuple of int, optional
        ``(start, every)``: train with ``start`` loops, one more every ``every`` steps, up to ``n_loops``.
    checkpoint_every : int, default 0
        Save the model every this many steps into ``checkpoint_dir`` (0: never).
    checkpoint_dir : str or Path, optional
        Folder of the checkpoints (``step-<n>``).
    progress : bool, default False
        Show a tqdm bar.
    """

    steps: int = 500
    batch_size: int = 32
    lr: float = 1e-3
    weight_decay: float = 0.01
    warmup_steps: int = 50
    min_lr_ratio: float = 0.1
    grad_clip: float = 1.0
    n_loops: int | None = None
    loss_loops: int = 1
    loop_curriculum: tuple[int, int] | None = None
    checkpoint_every: int = 0
    checkpoint_dir: str | Path | None = None
    progress: bool = False

    def __post_init__(self) -> None:
        for name in ("steps", "batch_size", "loss_loops"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ValueError(f"{name} must be an int >= 1, got {value!r}")
        if self.n_loops is not None and (not isinstance(self.n_loops, int) or self.n_loops < 1):
            raise ValueError(f"n_loops must be None or an int >= 1, got {self.n_loops!r}")
        if self.n_loops is not None and self.loss_loops > self.n_loops:
            raise ValueError(f"loss_loops={self.loss_loops} exceeds n_loops={self.n_loops}")
        if not (self.lr > 0 and self.weight_decay >= 0 and self.warmup_steps >= 0 and 0 <= self.min_lr_ratio <= 1
                and self.grad_clip >= 0):
            raise ValueError("lr must be > 0, weight_decay, warmup_steps and grad_clip >= 0, min_lr_ratio in [0, 1]; "
                             f"got {self.lr}, {self.weight_decay}, {self.warmup_steps}, {self.grad_clip}, "
                             f"{self.min_lr_ratio}")
        if self.loop_curriculum is not None:
            start, every = self.loop_curriculum
            if start < 1 or every < 1:
                raise ValueError(f"loop_curriculum must be (start >= 1, every >= 1), got {self.loop_curriculum}")
        if self.checkpoint_every and self.checkpoint_dir is None:
            raise ValueError("checkpoint_every needs a checkpoint_dir")

    def lr_factor(self, step: int) -> float:
        """Learning-rate multiplier at ``step`` (0-based): linear warmup, then cosine to ``min_lr_ratio``.

        Parameters
        ----------
        step : int
            The step.

        Returns
        -------
        float
            The multiplier of ``lr``.
        """
        if step < self.warmup_steps:
            return (step + 1) / self.warmup_steps
        span = max(1, self.steps - self.warmup_steps - 1)
        frac = min(1.0, (step - self.warmup_steps) / span)
        return self.min_lr_ratio + (1 - self.min_lr_ratio) * 0.5 * (1 + math.cos(math.pi * frac))

    def loops_at(self, step: int, final: int) -> int:
        """Training loops at ``step`` under the loop curriculum.

        Parameters
        ----------
        step : int
            The step.
        final : int
            The loops at the end of the curriculum.

        Returns
        -------
        int
            ``min(final, start + step // every)`` with a curriculum, else ``final``.
        """
        if self.loop_curriculum is None:
            return final
        start, every = self.loop_curriculum
        return min(final, start + step // every)


@dataclass
class TrainResult:
    """What a training run did.

    Attributes
    ----------
    losses : list of float
        The training loss of every step.
    n_loops : int
        Loops at the last step.
    seconds : float
        Wall time.
    """

    losses: list[float] = field(default_factory=list)
    n_loops: int = 0
    seconds: float = 0.0


def _step_loss(model: nn.Module, task: object, batch: object, r: int, t: int) -> torch.Tensor:
    if isinstance(task, RegressionTask):
        preds = model(batch.xs, batch.ys, n_loops=r)
        return sum(((p - batch.ys) ** 2).mean() for p in preds[r - t:]) / t
    return model(batch.input_ids, labels=batch.labels, n_loops=r, loss_loops=t, use_cache=False).loss


def train(model: nn.Module, task: DPTask | CharLMTask | RegressionTask, config: TrainConfig, *,
          random_state: RandomStateLike = None) -> TrainResult:
    """Train ``model`` on fresh batches of ``task``.

    Parameters
    ----------
    model : LoopedForCausalLM or LoopedRegressor
        The model (a regressor for regression tasks); trained in place.
    task : DPTask, CharLMTask or RegressionTask
        The data source.
    config : TrainConfig
        Steps, optimiser and loop settings.
    random_state : None, int or numpy Generator
        Source of the batches.

    Returns
    -------
    TrainResult
        Per-step losses and the wall time.

    Raises
    ------
    ValueError
        When the model and the task do not fit together.
    """
    if isinstance(task, RegressionTask) != isinstance(model, LoopedRegressor):
        raise ValueError("regression tasks train a LoopedRegressor and token tasks a LoopedForCausalLM; got "
                         f"{type(model).__name__} for {task.name!r}")
    if not isinstance(task, RegressionTask):
        if not isinstance(model, LoopedForCausalLM):
            raise ValueError(f"token tasks train a LoopedForCausalLM, got {type(model).__name__}")
        task.check_vocab(model.config.vocab_size)
        if task.max_sequence_length > model.config.max_position_embeddings:
            raise ValueError(f"task {task.name!r} needs {task.max_sequence_length} positions but the model has "
                             f"max_position_embeddings={model.config.max_position_embeddings}")
    final = config.n_loops or model.config.n_loops
    if config.loss_loops > final:
        raise ValueError(f"loss_loops={config.loss_loops} exceeds n_loops={final}")
    rng = check_random_state(random_state)
    decay = [p for n, p in model.named_parameters() if p.dim() >= 2 and "embed" not in n]
    other = [p for n, p in model.named_parameters() if not (p.dim() >= 2 and "embed" not in n)]
    opt = torch.optim.AdamW([{"params": decay, "weight_decay": config.weight_decay},
                             {"params": other, "weight_decay": 0.0}], lr=config.lr, betas=(0.9, 0.95))
    sched = torch.optim.lr_scheduler.LambdaLR(opt, config.lr_factor)
    result = TrainResult()
    start = time.perf_counter()
    model.train()
    r = final
    for step in progress(range(config.steps), enabled=config.progress, desc="train"):
        r = config.loops_at(step, final)
        batch = task.sample(config.batch_size, rng)
        loss = _step_loss(model, task, batch, r, min(config.loss_loops, r))
        opt.zero_grad(set_to_none=True)
        loss.backward()
        if config.grad_clip:
            torch.nn.utils.clip_grad_norm_(model.parameters(), config.grad_clip)
        opt.step()
        sched.step()
        result.losses.append(float(loss.detach()))
        if config.checkpoint_every and (step + 1) % config.checkpoint_every == 0:
            folder = Path(config.checkpoint_dir) / f"step-{step + 1}"
            if isinstance(model, LoopedForCausalLM):
                model.save_pretrained(folder)
            else:
                folder.mkdir(parents=True, exist_ok=True)
                torch.save(model.state_dict(), folder / "model.pt")
    model.eval()
    result.n_loops, result.seconds = r, time.perf_counter() - start
    return result


@torch.no_grad()
def answer_accuracy(model: LoopedForCausalLM, task: DPTask, *, n: int = 1000, n_loops: int | None = None,
                    random_state: RandomStateLike = None, batch_size: int = 250) -> float:
    """Share of problems whose answer token is the model's greedy prediction after ``<sep>``.

    Parameters
    ----------
    model : LoopedForCausalLM
        The model.
    task : DPTask
        The task.
    n : int, default 1000
        Test problems.
    n_loops : int, optional
        Loops at test time (default: the model config's).
    random_state : None, int or numpy Generator
        Source of the test problems.
    batch_size : int, default 250
        Problems per forward.

    Returns
    -------
    float
        Answer accuracy in [0, 1].
    """
    rng = check_random_state(random_state)
    model.eval()
    correct = 0
    for start in range(0, n, batch_size):
        batch = task.sample(min(batch_size, n - start), rng)
        logits = model(batch.input_ids, n_loops=n_loops, use_cache=False).logits
        target = batch.labels[:, 1:]
        hit = (logits[:, :-1].argmax(-1) == target) | (target == -100)
        correct += int(hit.all(dim=1).sum())
    return correct / n


@torch.no_grad()
def lm_loss(model: LoopedForCausalLM, task: CharLMTask, *, n: int = 256, n_loops: int | None = None,
            random_state: RandomStateLike = None, batch_size: int = 64) -> float:
    """Mean next-character cross-entropy (nats) on validation windows.

    Parameters
    ----------
    model : LoopedForCausalLM
        The model.
    task : CharLMTask
        The task.
    n : int, default 256
        Validation windows.
    n_loops : int, optional
        Loops at test time.
    random_state : None, int or numpy Generator
        Source of the window starts.
    batch_size : int, default 64
        Windows per forward.

    Returns
    -------
    float
        Loss in nats per character.
    """
    rng = check_random_state(random_state)
    model.eval()
    total = 0.0
    for start in range(0, n, batch_size):
        m = min(batch_size, n - start)
        batch = task.sample(m, rng, split="val")
        total += float(model(batch.input_ids, labels=batch.labels, n_loops=n_loops, use_cache=False).loss) * m
    return total / n


@torch.no_grad()
def regression_error(model: LoopedRegressor, batch: RegressionBatch, *, n_loops: int | None = None) -> np.ndarray:
    """Normalised squared error (divided by the dimension) at every prompt length.

    Parameters
    ----------
    model : LoopedRegressor
        The model.
    batch : RegressionBatch
        Test prompts.
    n_loops : int, optional
        Loops at test time.

    Returns
    -------
    ndarray, shape (points,)
        Mean over prompts of ``(pred_i - y_i)^2 / n_dims``.
    """
    model.eval()
    pred = model(batch.xs, batch.ys, n_loops=n_loops)[-1]
    return (((pred - batch.ys) ** 2).mean(0) / batch.xs.shape[-1]).double().numpy()
