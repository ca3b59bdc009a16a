"""The three-stage curriculum: position QA, then synthetic watermarks, then the real-style set.

Each stage fine-tunes the answer tokens' next-token loss (prompt and image positions are masked) with
AdamW, optionally through a peft LoRA adapter, and can save a checkpoint. Which parts train is the
``trainable`` argument: ``"all"``, ``"visual"`` (vision tower and abstractor), ``"abstractor"``,
``"decoder"`` (embeddings, decoder layers, head) or ``"none"`` (with ``lora`` only the adapter trains).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import torch
from icml25_shared.random import RandomStateLike, check_random_state
from icml25_shared.validation import Interval, Options, check_params

from wmarkgpt.data import Sample
from wmarkgpt.modeling import IGNORE_INDEX, IMAGE_TOKEN_INDEX
from wmarkgpt.processing import mplug_owl2_prompt, preprocess_images, tokenizer_image_token

__all__ = ["AUX_SCALE", "CurriculumResult", "StageResult", "TRAINABLE", "aux_targets", "encode_samples",
           "pretrain_vision", "train_curriculum", "train_stage"]

log = logging.getLogger(__name__)

TRAINABLE = ("all", "visual", "abstractor", "decoder", "none")
"""Accepted values of ``trainable``."""

AUX_SCALE = {"score_mean": 2.5, "score_std": 5.0 / 12**0.5, "box_mean": 0.5, "box_std": 1.0 / 12**0.5}
"""Standardisation of the auxiliary targets: ``gt_score`` in [0, 5] and box fractions in [0, 1], each
as if uniform (mean and standard deviation of the uniform law), so that every target has unit scale."""


def aux_targets(samples: Sequence[Sample]) -> tuple[torch.Tensor, torch.Tensor]:
    """Standardised auxiliary targets of samples and the mask of those that exist.

    Parameters
    ----------
    samples : sequence of Sample
        Items; ``gt_score`` and ``box`` may be None.

    Returns
    -------
    targets, mask : torch.Tensor, shape (n, 5)
        ``(gt_score - 2.5) / 1.443`` and the box ``(x1, y1, x2, y2)`` as image fractions, standardised by
        ``(f - 0.5) / 0.289``; the mask is 1 where the target exists.
    """
    t = torch.zeros(len(samples), 5)
    m = torch.zeros(len(samples), 5)
    for i, x in enumerate(samples):
        if x.gt_score is not None:
            t[i, 0] = (x.gt_score - AUX_SCALE["score_mean"]) / AUX_SCALE["score_std"]
            m[i, 0] = 1.0
        if x.box is not None:
            h, w = x.image.shape[:2]
            frac = torch.tensor([x.box[0] / w, x.box[1] / h, x.box[2] / w, x.box[3] / h])
            t[i, 1:] = (frac - AUX_SCALE["box_mean"]) / AUX_SCALE["box_std"]
            m[i, 1:] = 1.0
    return t, m


def _aux_loss(pred: torch.Tensor, target: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """Mean squared error over the existing targets (0 when none exists)."""
    return ((pred.float() - target) ** 2 * mask).sum() / mask.sum().clamp(min=1.0)


@dataclass(frozen=True)
class StageResult:
    """What one stage did.

    Attributes
    ----------
    stage : int
        1, 2 or 3.
    n_items : int
        Training items.
    steps : int
        Optimiser steps.
    losses : list of float
        Mean loss of each epoch.
    seconds : float
        Wall time.
    trainable : str
        Which parameters trained.
    n_trainable : int
        Trainable parameter count.
    checkpoint : str or None
        Folder of the saved checkpoint.
    """

    stage: int
    n_items: int
    steps: int
    losses: list[float]
    seconds: float
    trainable: str
    n_trainable: int
    checkpoint: str | None


@dataclass(frozen=True)
class CurriculumResult:
    """The stages of a curriculum run, in order.

    Attributes
    ----------
    stages : list of StageResult
        One per stage run.
    model : torch.nn.Module
        The trained model (a peft model when LoRA was used).
    """

    stages: list[StageResult]
    model: Any = field(repr=False)


@dataclass
class _Encoded:
    input_ids: list[list[int]]
    labels: list[list[int]]
    pixels: torch.Tensor


def encode_samples(samples: Sequence[Sample], tokenizer: Any, image_processor: Any) -> _Encoded:
    """Token ids, answer-only labels and pixels of training samples.

    Parameters
    ----------
    samples : sequence of Sample
        At least one.
    tokenizer : transformers tokenizer
        With ``eos_token_id``.
    image_processor : CLIPImageProcessor
        The image processor.

    Returns
    -------
    _Encoded
        ``input_ids`` and ``labels`` (lists of id lists) and ``pixels`` (n, 3, S, S).
    """
    if len(samples) == 0:
        raise ValueError("samples is empty")
    ids, labels = [], []
    eos = tokenizer.eos_token_id
    for s in samples:
        prompt = tokenizer_image_token(mplug_owl2_prompt(s.question), tokenizer, image_token_index=IMAGE_TOKEN_INDEX)
        answer = tokenizer(s.answer, add_special_tokens=False).input_ids + [eos]
        ids.append(prompt + answer)
        labels.append([IGNORE_INDEX] * len(prompt) + answer)
    return _Encoded(ids, labels, preprocess_images([s.image for s in samples], image_processor))


def _pad(rows: list[list[int]], value: int) -> torch.Tensor:
    width = max(len(r) for r in rows)
    return torch.tensor([r + [value] * (width - len(r)) for r in rows], dtype=torch.long)


def _set_trainable(model: torch.nn.Module, trainable: str) -> None:
    if trainable not in TRAINABLE:
        raise ValueError(f"trainable must be one of {TRAINABLE}, got {trainable!r}")
    is_lora = hasattr(model, "peft_config")
    for name, p in model.named_parameters():
        if is_lora and "lora_" in name:
            p.requires_grad_(True)
            continue
        if trainable == "all":
            p.requires_grad_(True)
        elif trainable == "none":
            p.requires_grad_(False)
        else:
            visual = ".vision_model." in f".{name}" or ".visual_abstractor." in f".{name}"
            abstr = ".visual_abstractor." in f".{name}"
            on = {"visual": visual, "abstractor": abstr, "decoder": not visual}[trainable]
            p.requires_grad_(on)


def train_stage(model: torch.nn.Module, samples: Sequence[Sample], *, tokenizer: Any, image_processor: Any,
                stage: int, trainable: str | None = None, lora: Any = None, epochs: int = 1, batch_size: int = 16,
                lr: float = 1e-3, weight_decay: float = 0.0, random_state: RandomStateLike = None,
                checkpoint_dir: str | Path | None = None, aux_weight: float = 0.0,
                on_epoch_end: Callable[[int, torch.nn.Module], None] | None = None) -> StageResult:
    """Fine-tune ``model`` on one stage's samples.

    Parameters
    ----------
    model : WMarkGPTForCausalLM or peft model
        Trained in place.
    samples : sequence of Sample
        The stage's items.
    tokenizer, image_processor
        Text and image preprocessing.
    stage : {1, 2, 3}
        The stage number (recorded and used in the checkpoint name).
    trainable : str, optional
        One of ``TRAINABLE``. Default: ``"none"`` (only the adapter trains) for a peft model or when
        ``lora`` is given, else ``"all"``.
    lora : peft.LoraConfig, optional
        When given and ``model`` is not a peft model yet, wrap it with ``peft.get_peft_model`` first
        (the adapter always trains); the wrapped model is ``model`` afterwards only through the
        returned checkpoint or :func:`train_curriculum`.
    epochs : int, default 1
        Passes over the samples.
    batch_size : int, default 16
        Items per step.
    lr, weight_decay : float
        AdamW settings.
    random_state : None, int or Generator
        Shuffling order.
    checkpoint_dir : str or path, optional
        When given, the model and tokenizer are saved to ``checkpoint_dir / f"stage{stage}"``.
    aux_weight : float, default 0
        Weight of the auxiliary visual loss (squared error of the standardised visibility and box, see
        :func:`aux_targets`) added to the next-token loss; needs a model with an auxiliary head when > 0.
    on_epoch_end : callable, optional
        ``on_epoch_end(epoch, model)`` after each epoch (``epoch`` from 1), e.g. to evaluate the model
        along the stage; the model is put back in training mode afterwards, and the shuffling stream is not
        touched, so an evaluation that draws nothing leaves the training unchanged.

    Returns
    -------
    StageResult
        Losses, steps, time and the checkpoint folder.

    Raises
    ------
    ValueError
        On an unknown stage or ``trainable``, no trainable parameter, or non-positive sizes.
    """
    check_params({"stage": stage, "epochs": epochs, "batch_size": batch_size, "lr": lr,
                  "weight_decay": weight_decay, "aux_weight": aux_weight, "random_state": random_state,
                  "on_epoch_end": on_epoch_end},
                 {"stage": [Options(int, {1, 2, 3})], "epochs": [Interval(int, 1, None)],
                  "batch_size": [Interval(int, 1, None)], "lr": [Interval(float, 0, None, closed="neither")],
                  "weight_decay": [Interval(float, 0, None)], "aux_weight": [Interval(float, 0, None)],
                  "random_state": ["random_state"], "on_epoch_end": [None, "callable"]}, owner="train_stage")
    net: Any = model  # a WMarkGPTForCausalLM or a peft wrapper of one
    base = net.get_base_model() if hasattr(net, "get_base_model") else net
    if aux_weight > 0 and getattr(base, "visual_aux_head", None) is None:
        raise ValueError("train_stage: aux_weight > 0 needs a model with an auxiliary visual head "
                         "(tiny_config(..., aux_head=True))")
    if lora is not None and not hasattr(model, "peft_config"):
        from peft import get_peft_model

        model = get_peft_model(model, lora)
    if trainable is None:
        trainable = "none" if hasattr(model, "peft_config") else "all"
    _set_trainable(model, trainable)
    params = [p for p in model.parameters() if p.requires_grad]
    if not params:
        raise ValueError(f"trainable={trainable!r} leaves no parameter to train")
    rng = check_random_state(random_state)
    enc = encode_samples(samples, tokenizer, image_processor)
    opt = torch.optim.AdamW(params, lr=lr, weight_decay=weight_decay)
    n = len(samples)
    total = epochs * ((n + batch_size - 1) // batch_size)
    sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda step: min(1.0, (step + 1) / max(1, total // 20))
                                              * max(0.05, 1.0 - step / total))
    # batches follow the model: the device of its input embeddings (where a prompt enters), its float dtype
    embed = net.get_input_embeddings()
    device = embed.weight.device
    pixels = enc.pixels.to(device=device, dtype=embed.weight.dtype)
    aux_t, aux_m = (x.to(device) for x in aux_targets(samples))
    model.train()
    losses, steps, t0 = [], 0, time.perf_counter()
    for _ in range(epochs):
        order = rng.permutation(n)
        epoch_loss = []
        for start in range(0, n, batch_size):
            idx = order[start:start + batch_size]
            ids = _pad([enc.input_ids[i] for i in idx], 0).to(device)
            labels = _pad([enc.labels[i] for i in idx], IGNORE_INDEX).to(device)
            mask = _pad([[1] * len(enc.input_ids[i]) for i in idx], 0).to(device)
            rows = torch.as_tensor(idx, device=device)
            out = model(input_ids=ids, attention_mask=mask, labels=labels, images=pixels[rows])
            loss = out.loss
            if aux_weight > 0:
                loss = loss + aux_weight * _aux_loss(base.visual_aux(), aux_t[rows], aux_m[rows])
            opt.zero_grad(set_to_none=True)
            loss.backward()
            torch.nn.utils.clip_grad_norm_(params, 1.0)
            opt.step()
            sched.step()
            steps += 1
            epoch_loss.append(float(loss.detach()))
        losses.append(float(np.mean(epoch_loss)))
        log.info("stage %d epoch %d loss %.4f", stage, len(losses), losses[-1])
        if on_epoch_end is not None:
            on_epoch_end(len(losses), model)
            model.train()
    if hasattr(base, "_last_vision_tokens"):
        base._last_vision_tokens = None  # drop the last batch's graph
    model.eval()
    checkpoint = None
    if checkpoint_dir is not None:
        folder = Path(checkpoint_dir) / f"stage{stage}"
        net.save_pretrained(folder)
        tokenizer.save_pretrained(folder)
        image_processor.save_pretrained(folder)
        checkpoint = str(folder)
    return StageResult(stage, n, steps, losses, time.perf_counter() - t0, trainable,
                       int(sum(p.numel() for p in params)), checkpoint)


def pretrain_vision(model: torch.nn.Module, samples: Sequence[Sample], *, image_processor: Any, epochs: int = 6,
                    batch_size: int = 32, lr: float = 1e-3, random_state: RandomStateLike = None) -> StageResult:
    """Stage 0: supervised pre-training of the vision tower and the auxiliary head on watermark labels.

    The tower learns to regress the standardised ``gt_score`` and the watermark box (squared error,
    :func:`aux_targets`) before any text is seen, the role a pretrained CLIP tower plays for the
    7B model. Only the vision tower and the auxiliary head train.

    Parameters
    ----------
    model : WMarkGPTForCausalLM
        A model whose configuration has ``aux_head`` (best with a ``conv_stem``); trained in place.
    samples : sequence of Sample
        Items with ``gt_score`` (e.g. :func:`wmarkgpt.data.make_synthetic_dataset`).
    image_processor : CLIPImageProcessor
        The image processor.
    epochs : int, default 6
        Passes over the samples.
    batch_size : int, default 32
        Items per step.
    lr : float, default 1e-3
        AdamW learning rate (cosine decay).
    random_state : None, int or Generator
        Shuffling order.

    Returns
    -------
    StageResult
        ``stage=0``, the per-epoch mean losses (standardised squared error), steps and time.

    Raises
    ------
    ValueError
        When the model has no auxiliary head, a sample has no ``gt_score``, or sizes are not positive.
    """
    check_params({"epochs": epochs, "batch_size": batch_size, "lr": lr, "random_state": random_state},
                 {"epochs": [Interval(int, 1, None)], "batch_size": [Interval(int, 1, None)],
                  "lr": [Interval(float, 0, None, closed="neither")], "random_state": ["random_state"]},
                 owner="pretrain_vision")
    net: Any = model
    if getattr(net, "visual_aux_head", None) is None:
        raise ValueError("pretrain_vision: the model has no auxiliary visual head (tiny_config(..., aux_head=True))")
    if len(samples) == 0 or any(x.gt_score is None for x in samples):
        raise ValueError("pretrain_vision: samples must be non-empty and every one needs a gt_score")
    rng = check_random_state(random_state)
    embed = net.get_input_embeddings()
    device = embed.weight.device
    pixels = preprocess_images([x.image for x in samples], image_processor).to(device=device,
                                                                               dtype=embed.weight.dtype)
    target, mask = (x.to(device) for x in aux_targets(samples))
    params = [*net.model.vision_model.parameters(), *net.visual_aux_head.parameters()]
    for p in model.parameters():
        p.requires_grad_(False)
    for p in params:
        p.requires_grad_(True)
    opt = torch.optim.AdamW(params, lr=lr)
    n = len(samples)
    total = epochs * ((n + batch_size - 1) // batch_size)
    sched = torch.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=total)
    model.train()
    losses, steps, t0 = [], 0, time.perf_counter()
    for _ in range(epochs):
        order = torch.as_tensor(rng.permutation(n), device=device)
        epoch_loss = []
        for start in range(0, n, batch_size):
            rows = order[start:start + batch_size]
            loss = _aux_loss(net.visual_aux(pixels[rows]), target[rows], mask[rows])
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
            sched.step()
            steps += 1
            epoch_loss.append(float(loss.detach()))
        losses.append(float(np.mean(epoch_loss)))
        log.info("stage 0 epoch %d loss %.4f", len(losses), losses[-1])
    model.eval()
    for p in model.parameters():
        p.requires_grad_(True)
    return StageResult(0, n, steps, losses, time.perf_counter() - t0, "visual",
                       int(sum(p.numel() for p in params)), None)


def train_curriculum(model: torch.nn.Module, stages: Sequence[Sequence[Sample]], *, tokenizer: Any,
                     image_processor: Any, stage_numbers: Sequence[int] | None = None,
                     trainable: Sequence[str | None] | str | None = None, lora: Any = None,
                     epochs: Sequence[int] | int = 1, batch_size: int = 16, lr: float = 1e-3,
                     random_state: RandomStateLike = None,
                     checkpoint_dir: str | Path | None = None) -> CurriculumResult:
    """Run the stages in order on one model (a checkpoint per stage when ``checkpoint_dir`` is given).

    Parameters
    ----------
    model : WMarkGPTForCausalLM
        Trained in place.
    stages : sequence of sequences of Sample
        The items of each stage (1 to 3 stages).
    tokenizer, image_processor
        Text and image preprocessing.
    stage_numbers : sequence of int, optional
        Stage number of each entry (default 1, 2, 3); e.g. ``[3]`` for a stage-3-only run.
    trainable : str or sequence of str, optional
        Per stage, or one value for all. Default: ``"none"`` (adapter only) with ``lora``, else ``"all"``.
    lora : peft.LoraConfig, optional
        Wrap the model once, before the first stage.
    epochs : int or sequence of int, default 1
        Per stage, or one value for all.
    batch_size : int, default 16
        Items per step.
    lr : float, default 1e-3
        AdamW learning rate.
    random_state : None, int or Generator
        Root of independent per-stage shuffling streams.
    checkpoint_dir : str or path, optional
        Where the per-stage checkpoints go.

    Returns
    -------
    CurriculumResult
        The stage results and the trained model.
    """
    k = len(stages)
    if not 1 <= k <= 3:
        raise ValueError(f"stages must hold 1 to 3 stages, got {k}")
    numbers = list(stage_numbers) if stage_numbers is not None else list(range(1, k + 1))
    if len(numbers) != k:
        raise ValueError(f"stage_numbers has {len(numbers)} entries for {k} stages")
    per_trainable = [trainable] * k if trainable is None or isinstance(trainable, str) else list(trainable)
    per_epochs = [epochs] * k if isinstance(epochs, int) else list(epochs)
    if len(per_trainable) != k or len(per_epochs) != k:
        raise ValueError("trainable and epochs must be one value or one per stage")
    if lora is not None:
        from peft import get_peft_model

        model = get_peft_model(model, lora)
    seeds = np.random.SeedSequence(int(check_random_state(random_state).integers(2**63))).spawn(k)
    results = []
    for items, number, tr, ep, seed in zip(stages, numbers, per_trainable, per_epochs, seeds, strict=True):
        results.append(train_stage(model, items, tokenizer=tokenizer, image_processor=image_processor, stage=number,
                                   trainable=tr, epochs=ep, batch_size=batch_size, lr=lr,
                                   random_state=np.random.default_rng(seed), checkpoint_dir=checkpoint_dir))
    return CurriculumResult(results, model)
