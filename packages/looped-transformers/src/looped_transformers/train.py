"""Training and evaluation: loss over the last T loops, AdamW schedule, curricula, data parallelism.

AdamW with warmup and cosine decay; curricula over loops, dimensions and points; ``torchrun``.
``train(model, task, TrainConfig(...))`` trains a :class:`~looped_transformers.LoopedForCausalLM` on a
token task (dynamic programming, char LM, a token corpus) or a :class:`LoopedRegressor` on an in-context
task, drawing a fresh batch every step from ``random_state``. Under ``torchrun`` (after
:func:`init_distributed`) every process draws the same global batch, trains on its share of the rows, and
``DistributedDataParallel`` averages the gradients: the step equals a one-process step on the whole batch.
"""

from __future__ import annotations

import contextlib
import math
import os
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, cast

import numpy as np
import torch
import torch.distributed as dist
from icml25_shared.cli import progress
from icml25_shared.random import RandomStateLike, check_random_state
from icml25_shared.validation import Interval, Options, check_params
from torch import nn
from torch.nn.parallel import DistributedDataParallel

from looped_transformers.modeling import LoopedConfig, LoopedForCausalLM, LoopedModel
from looped_transformers.tasks import CharLMTask, DPTask, InContextTask, RegressionBatch, TokenBatch

__all__ = ["Curriculum", "LoopedRegressor", "TrainConfig", "TrainResult", "answer_accuracy", "init_distributed",
           "lm_loss", "regression_error", "train"]


@dataclass(frozen=True, kw_only=True)
class Curriculum:
    """A value that grows in steps during training (Garg et al.'s curriculum over dimensions, points, loops).

    Parameters
    ----------
    start : int
        Value at step 0.
    end : int
        Largest value (``>= start``).
    increment : int, default 1
        Added every ``interval`` steps.
    interval : int, default 1
        Steps between increments.

    Examples
    --------
    >>> c = Curriculum(start=5, end=20, increment=1, interval=2000)
    >>> [c.at(s) for s in (0, 1999, 2000, 10**6)]
    [5, 5, 6, 20]
    """

    start: int
    end: int
    increment: int = 1
    interval: int = 1

    def __post_init__(self) -> None:
        check_params({name: getattr(self, name) for name in ("start", "end", "increment", "interval")},
                     dict.fromkeys(("start", "end", "increment", "interval"), [Interval(int, 1, None)]),
                     owner="Curriculum")
        if self.end < self.start:
            raise ValueError(f"Curriculum: end={self.end} is below start={self.start}")

    def at(self, step: int) -> int:
        """The value at ``step`` (0-based).

        Parameters
        ----------
        step : int
            The step.

        Returns
        -------
        int
            ``min(end, start + increment * (step // interval))``.
        """
        return min(self.end, self.start + self.increment * (step // self.interval))


_TRAIN_FIELDS = ("steps", "batch_size", "lr", "weight_decay", "warmup_steps", "min_lr_ratio", "grad_clip", "n_loops",
                 "loss_loops", "loop_curriculum", "dims_curriculum", "points_curriculum", "checkpoint_every",
                 "checkpoint_dir", "progress", "autocast")

_BACKENDS = ("gloo", "nccl", "cpu:gloo,cuda:nccl")


def init_distributed(backend: str | None = None) -> tuple[int, int]:
    """Join the process group ``torchrun`` describes (``RANK``, ``WORLD_SIZE``, ``MASTER_ADDR``/``PORT``).

    Parameters
    ----------
    backend : str, optional
        ``"gloo"`` (CPU), ``"nccl"`` (CUDA tensors only) or ``"cpu:gloo,cuda:nccl"``; default
        ``"cpu:gloo,cuda:nccl"`` when CUDA is available (:func:`train` reduces CPU tensors), else ``"gloo"``.

    Returns
    -------
    tuple of int
        ``(rank, world_size)``; ``(0, 1)`` without ``torchrun``, or with ``WORLD_SIZE=1`` and no rendezvous
        address (no group is created).

    Raises
    ------
    ValueError
        When ``RANK`` is set without ``WORLD_SIZE``, a world of several processes lacks ``MASTER_ADDR`` or
        ``MASTER_PORT``, or the backend is unknown.
    """
    if backend is not None and backend not in _BACKENDS:
        raise ValueError(f"backend must be one of {', '.join(map(repr, _BACKENDS))}, got {backend!r}")
    if dist.is_initialized():
        return dist.get_rank(), dist.get_world_size()
    if "RANK" not in os.environ:
        return 0, 1
    if "WORLD_SIZE" not in os.environ:
        raise ValueError("RANK is set but WORLD_SIZE is not: start the processes with torchrun")
    missing = [key for key in ("MASTER_ADDR", "MASTER_PORT") if key not in os.environ]
    if missing and os.environ["WORLD_SIZE"].strip() == "1":  # a single process needs no group
        return 0, 1
    if missing:
        raise ValueError(f"RANK and WORLD_SIZE are set but {' and '.join(missing)} not: start the processes with "
                         "torchrun")
    backend = backend or ("cpu:gloo,cuda:nccl" if torch.cuda.is_available() else "gloo")
    dist.init_process_group(backend=backend)
    return dist.get_rank(), dist.get_world_size()


def _world() -> tuple[int, int]:
    if dist.is_available() and dist.is_initialized():
        return dist.get_rank(), dist.get_world_size()
    return 0, 1


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
        return cast(LoopedConfig, self.backbone.config)

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

        Raises
        ------
        ValueError
            When ``xs`` has another width than ``n_dims`` or ``ys`` another shape than ``xs.shape[:2]``.
        """
        if not isinstance(xs, torch.Tensor) or not xs.is_floating_point() or xs.dim() != 3:
            shown = f"{xs.dtype} of shape {tuple(xs.shape)}" if isinstance(xs, torch.Tensor) else type(xs).__name__
            raise TypeError(f"LoopedRegressor: xs must be a floating-point tensor (n, points, n_dims); got {shown}")
        if not isinstance(ys, torch.Tensor) or not ys.is_floating_point():
            shown = str(ys.dtype) if isinstance(ys, torch.Tensor) else type(ys).__name__
            raise TypeError(f"LoopedRegressor: ys must be a floating-point tensor; got {shown}")
        n, p, d = xs.shape
        if d != self.n_dims:
            raise ValueError(f"xs has {d} dimensions but the model reads {self.n_dims}")
        if tuple(ys.shape) != (n, p):  # a (n, 1) or (points,) tensor would broadcast into every prompt
            raise ValueError(f"ys must have shape (n, points) = {(n, p)} like xs, got {tuple(ys.shape)}")
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
    loop_curriculum : tuple of int or Curriculum, optional
        ``(start, every)``: train with ``start`` loops, one more every ``every`` steps, up to ``n_loops``; a
        :class:`Curriculum` sets the increment too (its ``end`` is capped by ``n_loops``).
    dims_curriculum : Curriculum, optional
        In-context tasks: active input dimensions per step (the others are 0), up to the task's ``n_dims``.
    points_curriculum : Curriculum, optional
        In-context tasks: examples per prompt per step, up to the task's ``n_points``.
    checkpoint_every : int, default 0
        Save the model every this many steps into ``checkpoint_dir`` (0: never).
    checkpoint_dir : str or Path, optional
        Folder of the checkpoints (``step-<n>``).
    progress : bool, default False
        Show a tqdm bar.
    autocast : {None, "bfloat16", "float16"}, default None
        Run forward and loss under ``torch.autocast`` on the model's device with this dtype (mixed precision;
        weights, gradients and optimiser state stay in their own dtype). ``"float16"`` scales the loss with
        ``torch.amp.GradScaler`` on CUDA.
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
    loop_curriculum: tuple[int, int] | Curriculum | None = None
    dims_curriculum: Curriculum | None = None
    points_curriculum: Curriculum | None = None
    checkpoint_every: int = 0
    checkpoint_dir: str | Path | None = None
    progress: bool = False
    autocast: str | None = None

    def __post_init__(self) -> None:
        positive = [Interval(int, 1, None)]
        check_params({name: getattr(self, name) for name in _TRAIN_FIELDS}, {
            "steps": positive, "batch_size": positive, "loss_loops": positive, "n_loops": [None, *positive],
            "lr": [Interval(float, 0, None, closed="neither")], "weight_decay": [Interval(float, 0, None)],
            "warmup_steps": [Interval(int, 0, None)], "min_lr_ratio": [Interval(float, 0, 1)],
            "grad_clip": [Interval(float, 0, None)], "checkpoint_every": [Interval(int, 0, None)],
            "loop_curriculum": [None, Curriculum, tuple, list], "dims_curriculum": [None, Curriculum],
            "points_curriculum": [None, Curriculum], "checkpoint_dir": [None, str, Path], "progress": ["boolean"],
            "autocast": [None, Options(str, {"bfloat16", "float16"})]}, owner="TrainConfig")
        if self.n_loops is not None and self.loss_loops > self.n_loops:
            raise ValueError(f"TrainConfig: loss_loops={self.loss_loops} exceeds n_loops={self.n_loops}")
        if self.loop_curriculum is not None and not isinstance(self.loop_curriculum, Curriculum):
            if len(self.loop_curriculum) != 2 or any(isinstance(v, bool) or not isinstance(v, int) or v < 1
                                                     for v in self.loop_curriculum):
                raise ValueError(f"TrainConfig: loop_curriculum must be (start >= 1, every >= 1) or a Curriculum; "
                                 f"got {self.loop_curriculum}")
        if self.checkpoint_every and self.checkpoint_dir is None:
            raise ValueError("TrainConfig: checkpoint_every needs a checkpoint_dir")

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
        if isinstance(self.loop_curriculum, Curriculum):
            return min(final, self.loop_curriculum.at(step))
        start, every = self.loop_curriculum
        return min(final, start + step // every)


@dataclass
class TrainResult:
    """What a training run did.

    Attributes
    ----------
    losses : list of float
        The training loss of every step.
    grad_norms : list of float
        The global gradient norm of every step, before clipping (after the all-reduce under ``torchrun``).
    n_loops : int
        Loops at the last step.
    n_dims, n_points : int or None
        Active dimensions and points at the last step (in-context tasks).
    seconds : float
        Wall time.
    """

    losses: list[float] = field(default_factory=list)
    grad_norms: list[float] = field(default_factory=list)
    n_loops: int = 0
    n_dims: int | None = None
    n_points: int | None = None
    seconds: float = 0.0


def _device_of(model: nn.Module) -> torch.device:
    param = next(model.parameters(), None)
    return param.device if param is not None else torch.device("cpu")


def _to(batch: Any, device: torch.device) -> Any:
    """The batch on ``device`` (the tasks draw on the CPU)."""
    if isinstance(batch, TokenBatch):
        return TokenBatch(batch.input_ids.to(device), batch.labels.to(device), batch.answers)
    return RegressionBatch(batch.xs.to(device), batch.ys.to(device), batch.scale)


def _shard(batch: TokenBatch | RegressionBatch, rank: int, world: int) -> TokenBatch | RegressionBatch:
    if world == 1:
        return batch
    n = (batch.input_ids if isinstance(batch, TokenBatch) else batch.xs).shape[0] // world
    rows = slice(rank * n, (rank + 1) * n)
    if isinstance(batch, TokenBatch):
        return TokenBatch(batch.input_ids[rows], batch.labels[rows], batch.answers[rows])
    return RegressionBatch(batch.xs[rows], batch.ys[rows], batch.scale)


def _check_same_batch(batch: TokenBatch | RegressionBatch) -> None:
    """Raise on every process when the processes drew different batches (different ``random_state``)."""
    data = batch.input_ids if isinstance(batch, TokenBatch) else batch.xs
    weights = torch.arange(1, data.numel() + 1, dtype=torch.float64) / data.numel()
    key = (data.double().flatten() * weights).sum()
    both = torch.stack([key, -key])
    dist.all_reduce(both, op=dist.ReduceOp.MAX)
    if float(both[0]) != -float(both[1]):
        raise ValueError("the processes drew different batches: pass every process the same random_state (each "
                         "draws the whole batch and trains on its share)")


def _step_loss(model: nn.Module, task: object, batch: Any, r: int, t: int, items: float | None) -> torch.Tensor:
    if isinstance(task, InContextTask):
        preds = model(batch.xs, batch.ys, n_loops=r)
        return sum(((p - batch.ys) ** 2).mean() for p in preds[r - t:]) / t
    extra = {} if items is None else {"num_items_in_batch": items}
    return model(batch.input_ids, labels=batch.labels, n_loops=r, loss_loops=t, use_cache=False, **extra).loss


def train(model: nn.Module, task: DPTask | CharLMTask | InContextTask, config: TrainConfig, *,
          random_state: RandomStateLike = None) -> TrainResult:
    """Train ``model`` on fresh batches of ``task``.

    Under ``torchrun`` (a process group is initialised, see :func:`init_distributed`) the model is wrapped in
    ``DistributedDataParallel``; every process must pass the same ``random_state`` and start from the same
    weights: each draws the whole batch of ``config.batch_size`` rows and trains on its ``1 / world`` share,
    with the token loss normalised by the labelled tokens of the whole batch, so a step equals a
    one-process step on the whole batch. Checkpoints are written by rank 0.

    Parameters
    ----------
    model : LoopedForCausalLM or LoopedRegressor
        The model (a regressor for in-context tasks); trained in place.
    task : DPTask, CharLMTask, TokenCorpusTask or InContextTask
        The data source.
    config : TrainConfig
        Steps, optimiser, loop, dimension and point settings.
    random_state : None, int or numpy Generator
        Source of the batches.

    Returns
    -------
    TrainResult
        Per-step losses (of the whole batch) and gradient norms, and the wall time.

    Raises
    ------
    ValueError
        When the model and the task do not fit together, a curriculum does not fit the task, the loop
        curriculum starts above the training loops, or the batch does not split evenly over the processes.
    """
    ic_task = task if isinstance(task, InContextTask) else None
    token_task = task if not isinstance(task, InContextTask) else None
    in_context = ic_task is not None
    if in_context != isinstance(model, LoopedRegressor):
        raise ValueError("in-context tasks train a LoopedRegressor and token tasks a LoopedForCausalLM; got "
                         f"{type(model).__name__} for {task.name!r}")
    if not isinstance(model, (LoopedRegressor, LoopedForCausalLM)):
        raise ValueError(f"token tasks train a LoopedForCausalLM, got {type(model).__name__}")
    model_config = cast(LoopedConfig, model.config)
    if token_task is not None:
        task = token_task
        task.check_vocab(model_config.vocab_size)
        if task.max_sequence_length > model_config.max_position_embeddings:
            raise ValueError(f"task {task.name!r} needs {task.max_sequence_length} positions but the model has "
                             f"max_position_embeddings={model_config.max_position_embeddings}")
        if config.dims_curriculum is not None or config.points_curriculum is not None:
            raise ValueError(f"dims_curriculum and points_curriculum apply to in-context tasks, not {task.name!r}")
    elif ic_task is not None and isinstance(model, LoopedRegressor):
        if ic_task.n_dims != model.n_dims:
            raise ValueError(f"task {task.name!r} has n_dims={ic_task.n_dims} but the model reads {model.n_dims}")
        if 2 * ic_task.n_points > model_config.max_position_embeddings:
            raise ValueError(f"task {task.name!r} needs {2 * ic_task.n_points} positions but the model has "
                             f"max_position_embeddings={model_config.max_position_embeddings}")
        for name, limit in (("dims_curriculum", ic_task.n_dims), ("points_curriculum", ic_task.n_points)):
            cur = getattr(config, name)
            if cur is not None and cur.end > limit:
                raise ValueError(f"{name} ends at {cur.end} but the task has {name.split('_')[0]}={limit}")
    final = int(config.n_loops or model_config.n_loops)
    if config.loss_loops > final:
        raise ValueError(f"loss_loops={config.loss_loops} exceeds n_loops={final}")
    if config.loop_curriculum is not None and config.loops_at(0, 10**9) > final:  # it would never take effect
        raise ValueError(f"loop_curriculum starts at {config.loops_at(0, 10**9)} loops, above n_loops={final}")
    rank, world = _world()
    if config.batch_size % world:
        raise ValueError(f"batch_size={config.batch_size} does not split evenly over {world} processes")
    rng = check_random_state(random_state)
    decay = [p for n, p in model.named_parameters() if p.dim() >= 2 and "embed" not in n]
    other = [p for n, p in model.named_parameters() if not (p.dim() >= 2 and "embed" not in n)]
    opt = torch.optim.AdamW([{"params": decay, "weight_decay": config.weight_decay},
                             {"params": other, "weight_decay": 0.0}], lr=config.lr, betas=(0.9, 0.95))
    sched = torch.optim.lr_scheduler.LambdaLR(opt, config.lr_factor)
    # the token embedding of a regressor's trunk is unused (inputs_embeds), so DDP must look for unused ones
    runner = model if world == 1 else DistributedDataParallel(model, find_unused_parameters=in_context)
    device = _device_of(model)
    scaler = torch.amp.GradScaler(device.type, enabled=config.autocast == "float16" and device.type == "cuda")
    amp_dtype = getattr(torch, config.autocast) if config.autocast else None
    result = TrainResult()
    start = time.perf_counter()
    model.train()
    r = final
    for step in progress(range(config.steps), enabled=config.progress and rank == 0, desc="train"):
        r = config.loops_at(step, final)
        items = None
        batch: TokenBatch | RegressionBatch
        if ic_task is not None:
            result.n_dims = None if config.dims_curriculum is None else config.dims_curriculum.at(step)
            result.n_points = None if config.points_curriculum is None else config.points_curriculum.at(step)
            batch = ic_task.sample(config.batch_size, rng, n_dims=result.n_dims, n_points=result.n_points)
        elif token_task is not None:
            batch = token_task.sample(config.batch_size, rng)
            if world > 1:  # sum over this share / (tokens of the whole batch / world): DDP's mean is then exact
                items = float((batch.labels[:, 1:] != -100).sum()) / world
        if world > 1 and step == 0:
            _check_same_batch(batch)
        with torch.autocast(device.type, dtype=amp_dtype) if amp_dtype is not None else contextlib.nullcontext():
            loss = _step_loss(runner, task, _to(_shard(batch, rank, world), device), r, min(config.loss_loops, r),
                              items)
        opt.zero_grad(set_to_none=True)
        scaler.scale(loss).backward()
        scaler.unscale_(opt)
        grads = [p.grad for p in model.parameters() if p.grad is not None]
        norm = float(torch.linalg.vector_norm(torch.stack([torch.linalg.vector_norm(g) for g in grads])))
        if config.grad_clip:
            torch.nn.utils.clip_grad_norm_(model.parameters(), config.grad_clip)
        scaler.step(opt)
        scaler.update()
        sched.step()
        value = loss.detach().float().clone()
        if world > 1:
            dist.all_reduce(value)
            value /= world
        result.losses.append(float(value))
        result.grad_norms.append(norm)
        if config.checkpoint_every and (step + 1) % config.checkpoint_every == 0 and rank == 0:
            folder = Path(str(config.checkpoint_dir)) / f"step-{step + 1}"
            if isinstance(model, LoopedForCausalLM):
                model.save_pretrained(folder)
            else:
                folder.mkdir(parents=True, exist_ok=True)
                torch.save(model.state_dict(), folder / "model.pt")
    model.eval()
    result.n_loops, result.seconds = r, time.perf_counter() - start
    if ic_task is not None:
        result.n_dims = result.n_dims or ic_task.n_dims
        result.n_points = result.n_points or ic_task.n_points
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
        batch = _to(task.sample(min(batch_size, n - start), rng), _device_of(model))
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
        batch = _to(task.sample(m, rng, split="val"), _device_of(model))
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
        Mean over prompts of ``(pred_i - y_i)^2`` divided by the batch's error scale (the dimension for
        linear regression, 1 for decision trees).
    """
    model.eval()
    device = _device_of(model)
    ys = batch.ys.to(device)
    pred = model(batch.xs.to(device), ys, n_loops=n_loops)[-1]
    return (((pred.float() - ys.float()) ** 2).mean(0) / batch.error_scale).double().cpu().numpy()
