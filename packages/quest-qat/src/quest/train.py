"""Training entry point for causal LMs, single process or data parallel under ``torchrun``.

Models: the built-in :class:`~quest.lm.TinyLlama` or a Hugging Face ``LlamaForCausalLM``; data
parallelism uses gloo on CPU and nccl on GPU.

The recipe follows the QuEST training code: AdamW (0.9, 0.95), weight decay 0.1, gradient clipping at
1.0, linear warmup over 10% of the steps then cosine decay, cross-entropy on next-byte prediction.
Every rank draws the same global batch from a seeded generator and keeps its slice, so a run on N
processes computes the same updates as one process on the whole batch.

Command line (``torchrun --nproc_per_node 2 -m quest.train --steps 20 --out run/``)::

    python -m quest.train --method quest --weight-bits 4 --act-bits 4 --steps 200 --out run/
"""

from __future__ import annotations

import argparse
import json
import logging
import math
import os
from dataclasses import asdict, dataclass, field
from pathlib import Path

import torch
import torch.nn.functional as F
from icml25_shared.cli import progress
from icml25_shared.validation import Interval, check_params
from torch import nn

from quest.api import quantize_
from quest.layers import QuestConfig
from quest.lm import ByteTokenizer, TinyLlama, TinyLlamaConfig, hf_tiny_llama, seeded_init, stdlib_corpus
from quest.quantizers import METHODS

__all__ = ["TrainConfig", "TrainResult", "evaluate", "main", "make_splits", "train_lm"]

log = logging.getLogger(__name__)


@dataclass(frozen=True, kw_only=True)
class TrainConfig:
    """Optimisation settings. ``batch_size`` is the global batch (split across data-parallel ranks)."""

    steps: int = 200
    batch_size: int = 16
    seq_len: int = 128
    lr: float = 2e-3
    weight_decay: float = 0.1
    betas: tuple[float, float] = (0.9, 0.95)
    warmup_frac: float = 0.1
    min_lr_frac: float = 0.1
    grad_clip: float = 1.0
    eval_every: int = 50
    eval_batches: int = 8
    random_state: int = 0
    checkpoint_dir: str | None = None
    checkpoint_every: int = 0
    resume_from: str | None = None
    progress: bool = False

    def validate(self) -> TrainConfig:
        """Raise ``TypeError`` (wrong type) or ``ValueError`` (out of range) naming the field; return self."""
        positive = [Interval(int, 1, None)]
        check_params({name: getattr(self, name) for name in (
            "steps", "batch_size", "seq_len", "eval_every", "eval_batches", "lr", "weight_decay", "warmup_frac",
            "min_lr_frac", "grad_clip", "checkpoint_every", "random_state", "progress")}, {
            "steps": positive, "batch_size": positive, "seq_len": positive, "eval_every": positive,
            "eval_batches": positive, "lr": [Interval(float, 0, None, closed="neither")],
            "weight_decay": [Interval(float, 0, None)], "warmup_frac": [Interval(float, 0, 1, closed="left")],
            "min_lr_frac": [Interval(float, 0, 1)], "grad_clip": [Interval(float, 0, None, closed="neither")],
            "checkpoint_every": [Interval(int, 0, None)], "random_state": [Interval(int, 0, None)],
            "progress": ["boolean"]}, owner="TrainConfig")
        return self


@dataclass
class TrainResult:
    """Loss history of one run (nats per byte)."""

    train_loss: list[float] = field(default_factory=list)
    eval_steps: list[int] = field(default_factory=list)
    val_loss: list[float] = field(default_factory=list)
    final_val_loss: float = float("nan")
    diverged: bool = False
    tokens_seen: int = 0


def make_splits(data: bytes | torch.Tensor, val_frac: float = 0.1) -> tuple[torch.Tensor, torch.Tensor]:
    """Byte-tokenise ``data`` and split it into (train, validation) token tensors, validation last."""
    tokens = data if isinstance(data, torch.Tensor) else ByteTokenizer().encode(data)
    n_val = max(int(len(tokens) * val_frac), 1)
    return tokens[:-n_val], tokens[-n_val:]


def _world() -> tuple[int, int]:
    if torch.distributed.is_available() and torch.distributed.is_initialized():
        return torch.distributed.get_rank(), torch.distributed.get_world_size()
    return 0, 1


def _device_of(model: nn.Module) -> torch.device:
    param = next(model.parameters(), None)
    return param.device if param is not None else torch.device("cpu")


def _logits(model: nn.Module, idx: torch.Tensor) -> torch.Tensor:
    out = model(idx)
    return out.logits if hasattr(out, "logits") else out


def _lr_factor(step: int, cfg: TrainConfig) -> float:
    warmup = int(cfg.warmup_frac * cfg.steps)
    if step < warmup:
        return (step + 1) / warmup
    progress_ = (step - warmup) / max(cfg.steps - warmup, 1)
    return cfg.min_lr_frac + (1 - cfg.min_lr_frac) * 0.5 * (1 + math.cos(math.pi * progress_))


@torch.no_grad()
def evaluate(model: nn.Module, tokens: torch.Tensor, *, seq_len: int, batches: int, batch_size: int) -> float:
    """Mean next-token cross-entropy over ``batches * batch_size`` evenly spaced windows of ``tokens``."""
    n = batches * batch_size
    span = len(tokens) - seq_len - 1
    if span < 1:
        raise ValueError(f"validation set of {len(tokens)} tokens is shorter than seq_len + 1 = {seq_len + 1}")
    starts = torch.linspace(0, span, n).long()
    was_training = model.training
    model.eval()
    total = 0.0
    for chunk in starts.split(batch_size):
        windows = torch.stack([tokens[s:s + seq_len + 1] for s in chunk.tolist()]).to(_device_of(model))
        logits = _logits(model, windows[:, :-1])
        total += F.cross_entropy(logits.reshape(-1, logits.shape[-1]).float(), windows[:, 1:].reshape(-1),
                                 reduction="sum").item()
    model.train(was_training)
    return total / (n * seq_len)


def train_lm(model: nn.Module, train_tokens: torch.Tensor, val_tokens: torch.Tensor,
             config: TrainConfig = TrainConfig()) -> TrainResult:
    """Train ``model`` (``idx -> logits`` or an HF model with ``.logits``) on next-token prediction.

    Under ``torch.distributed`` (e.g. ``torchrun``) the model is wrapped in DDP and each rank trains on
    its slice of the global batch. Stops early and sets ``diverged`` when the loss becomes non-finite.
    Checkpoints (model, optimizer, step) go to ``checkpoint_dir/step_<n>.pt`` on rank 0.
    """
    cfg = config.validate()
    rank, world = _world()
    if cfg.batch_size % world:
        raise ValueError(f"batch_size={cfg.batch_size} must be divisible by the world size {world}")
    if len(train_tokens) <= cfg.seq_len + 1:
        raise ValueError(f"training set of {len(train_tokens)} tokens is shorter than seq_len + 1")
    local = cfg.batch_size // world
    device = _device_of(model)
    decay = [p for n, p in model.named_parameters() if p.requires_grad and p.ndim >= 2]
    other = [p for n, p in model.named_parameters() if p.requires_grad and p.ndim < 2]
    opt = torch.optim.AdamW([{"params": decay, "weight_decay": cfg.weight_decay},
                             {"params": other, "weight_decay": 0.0}], lr=cfg.lr, betas=cfg.betas)
    sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda s: _lr_factor(s, cfg))
    start = 0
    if cfg.resume_from is not None:
        state = torch.load(cfg.resume_from, map_location="cpu", weights_only=False)
        model.load_state_dict(state["model"])
        opt.load_state_dict(state["optimizer"])
        sched.load_state_dict(state["scheduler"])
        start = int(state["step"])
    net = model
    if world > 1:
        net = nn.parallel.DistributedDataParallel(model)
    gen = torch.Generator().manual_seed(cfg.random_state)
    for _ in range(start):  # replay the sampler so a resumed run sees the same batches
        torch.randint(0, len(train_tokens) - cfg.seq_len - 1, (cfg.batch_size,), generator=gen)
    result = TrainResult()
    model.train()
    for step in progress(range(start, cfg.steps), enabled=cfg.progress and rank == 0, desc="train",
                         total=cfg.steps - start):
        starts = torch.randint(0, len(train_tokens) - cfg.seq_len - 1, (cfg.batch_size,), generator=gen)
        mine = starts[rank * local:(rank + 1) * local].tolist()
        batch = torch.stack([train_tokens[s:s + cfg.seq_len + 1] for s in mine]).to(device)
        logits = _logits(net, batch[:, :-1])
        loss = F.cross_entropy(logits.reshape(-1, logits.shape[-1]).float(), batch[:, 1:].reshape(-1))
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), cfg.grad_clip)
        opt.step()
        sched.step()
        value = loss.detach()
        if world > 1:
            torch.distributed.all_reduce(value)
            value /= world
        result.train_loss.append(float(value))
        result.tokens_seen += cfg.batch_size * cfg.seq_len
        if not math.isfinite(result.train_loss[-1]):
            result.diverged = True
            log.warning("loss became %s at step %d; stopping", result.train_loss[-1], step)
            break
        done = step + 1
        if done % cfg.eval_every == 0 or done == cfg.steps:
            result.eval_steps.append(done)
            result.val_loss.append(evaluate(model, val_tokens, seq_len=cfg.seq_len, batches=cfg.eval_batches,
                                            batch_size=cfg.batch_size))
        if cfg.checkpoint_dir and rank == 0 and cfg.checkpoint_every and done % cfg.checkpoint_every == 0:
            path = Path(cfg.checkpoint_dir)
            path.mkdir(parents=True, exist_ok=True)
            torch.save({"model": model.state_dict(), "optimizer": opt.state_dict(),
                        "scheduler": sched.state_dict(), "step": done}, path / f"step_{done}.pt")
    result.final_val_loss = result.val_loss[-1] if result.val_loss else float("nan")
    return result


def _parse(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="python -m quest.train", description=__doc__.split("\n\n")[0])
    p.add_argument("--model", choices=("tiny", "hf-llama"), default="tiny")
    p.add_argument("--method", default="quest", choices=(*METHODS, "none"), help="'none' = full precision")
    p.add_argument("--weight-bits", default="4")
    p.add_argument("--act-bits", default="4", help="bits or 'none'")
    p.add_argument("--hadamard", default="half", help="half | full | none")
    p.add_argument("--d-model", type=int, default=128)
    p.add_argument("--n-layers", type=int, default=2)
    p.add_argument("--n-heads", type=int, default=2)
    p.add_argument("--steps", type=int, default=200)
    p.add_argument("--batch-size", type=int, default=16, help="global batch")
    p.add_argument("--seq-len", type=int, default=128)
    p.add_argument("--lr", type=float, default=2e-3)
    p.add_argument("--eval-every", type=int, default=50)
    p.add_argument("--corpus-bytes", type=int, default=2_000_000)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--checkpoint-every", type=int, default=0)
    p.add_argument("--out", type=Path, required=True, help="folder for final.pt, result.json and checkpoints")
    p.add_argument("--progress", action="store_true")
    return p.parse_args(argv)


def _bits(value: str) -> int | str | None:
    if value.lower() == "none":
        return None
    return int(value) if value.isdigit() else value


def build_model(args: argparse.Namespace) -> nn.Module:
    """The model named by the command-line arguments, quantized unless ``--method none``."""
    model: nn.Module
    if args.model == "tiny":
        with seeded_init(args.seed):
            model = TinyLlama(TinyLlamaConfig(d_model=args.d_model, n_layers=args.n_layers, n_heads=args.n_heads,
                                              max_seq_len=max(args.seq_len, 256)))
    else:
        model = hf_tiny_llama(d_model=args.d_model, n_layers=args.n_layers, n_heads=args.n_heads,
                              hidden=TinyLlamaConfig(d_model=args.d_model).ffn_hidden,
                              max_seq_len=max(args.seq_len, 256), random_state=args.seed)
    if args.method != "none":
        hadamard = None if args.hadamard.lower() == "none" else args.hadamard
        weight_bits = _bits(args.weight_bits)
        if weight_bits is None:
            raise SystemExit("--weight-bits none: use --method none for a full-precision model")
        quantize_(model, QuestConfig(weight_bits=weight_bits, act_bits=_bits(args.act_bits),
                                     hadamard=hadamard, method=args.method))
    return model


def main(argv: list[str] | None = None) -> int:
    """Command-line training; initialises the process group itself when launched by ``torchrun``."""
    args = _parse(argv)
    distributed = int(os.environ.get("WORLD_SIZE", "1")) > 1
    if distributed and not torch.distributed.is_initialized():
        torch.distributed.init_process_group("nccl" if torch.cuda.is_available() else "gloo")
    try:
        model = build_model(args)
        train, val = make_splits(stdlib_corpus(args.corpus_bytes))
        cfg = TrainConfig(steps=args.steps, batch_size=args.batch_size, seq_len=args.seq_len, lr=args.lr,
                          eval_every=args.eval_every, random_state=args.seed, progress=args.progress,
                          checkpoint_dir=str(args.out / "checkpoints") if args.checkpoint_every else None,
                          checkpoint_every=args.checkpoint_every)
        result = train_lm(model, train, val, cfg)
        if _world()[0] == 0:
            args.out.mkdir(parents=True, exist_ok=True)
            torch.save(model.state_dict(), args.out / "final.pt")
            (args.out / "result.json").write_text(json.dumps(asdict(result), indent=2))
    finally:
        if distributed:
            torch.distributed.destroy_process_group()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
