"""CPU-scale training for the digits experiment: pretrain a tiny class-conditional UNet, then personalise it.

Pretraining data: scikit-learn's bundled 8x8 digits 0-7 (``size`` > 8 upsamples bilinearly), in [-1, 1].
Fine-tuning data: N specific images of the held-out digits 8 and 9, bound to a new class token. Class ids:
0-7 digits, ``NEW_TOKEN`` = 8 (never seen in pretraining, like DreamBooth's rare token), ``NULL_CLASS`` = 9 (the
empty prompt, trained with 10 % condition dropout).

The new token's embedding is a fixed random vector with the mean norm of the trained digit embeddings
(:func:`init_new_token`), distinct from the empty prompt's. This mirrors a DreamBooth rare token such as "sks",
which has its own pretrained text embedding: the fine-tuned model's conditional and unconditional predictions
then differ, so classifier-free guidance is a real baseline (for LoRA, which leaves the embedding table frozen,
an embedding equal to the null class would make CFG a no-op).
"""

from __future__ import annotations

import copy
import logging
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch

from finextract.denoisers import PixelUNet
from finextract.lora import add_lora, load_lora, lora_parameters, save_lora

__all__ = [
    "NEW_TOKEN",
    "NULL_CLASS",
    "DigitsData",
    "digits_data",
    "finetune",
    "init_new_token",
    "pretrain",
    "tiny_unet",
]

log = logging.getLogger(__name__)

NEW_TOKEN = 8
NULL_CLASS = 9
#: seed of the new token's fixed random embedding direction (independent of the experiment seeds)
NEW_TOKEN_SEED = 20250713


@dataclass
class DigitsData:
    """``pretrain_images`` (n, 1, s, s) in [-1, 1] with ``pretrain_labels`` (digits 0-7); ``finetune_images``
    (N, 1, s, s): the personalisation set (digits 8/9) whose extraction is audited."""

    pretrain_images: torch.Tensor
    pretrain_labels: torch.Tensor
    finetune_images: torch.Tensor
    finetune_digits: np.ndarray


def digits_data(n_train: int = 8, *, size: int = 8, seed: int = 0) -> DigitsData:
    """Load sklearn's digits and split them as described in the module docstring."""
    from sklearn.datasets import load_digits

    if isinstance(n_train, bool) or not isinstance(n_train, int) or n_train < 1:
        raise ValueError(f"n_train must be a positive int, got {n_train!r}")
    d = load_digits()
    x = torch.tensor(d.images, dtype=torch.float32)[:, None] / 8.0 - 1.0
    if size != 8:
        x = torch.nn.functional.interpolate(x, size=(size, size), mode="bilinear", align_corners=False)
    y = torch.tensor(d.target)
    pre = y < 8
    held = np.flatnonzero(~pre.numpy())
    if n_train > held.size:
        raise ValueError(f"n_train={n_train} exceeds the {held.size} held-out digit images")
    pick = np.sort(np.random.default_rng(seed).choice(held, n_train, replace=False))
    return DigitsData(
        pretrain_images=x[pre], pretrain_labels=y[pre], finetune_images=x[pick], finetune_digits=d.target[pick]
    )


def tiny_unet(*, size: int = 8, channels: tuple[int, ...] = (16, 32), num_classes: int = 10, seed: int = 0) -> Any:
    """A ~0.16 M-parameter class-conditional ``UNet2DModel`` (no attention) for 1-channel ``size``² images."""
    from diffusers import UNet2DModel

    torch.manual_seed(seed)
    return UNet2DModel(
        sample_size=size,
        in_channels=1,
        out_channels=1,
        layers_per_block=1,
        block_out_channels=tuple(channels),
        down_block_types=("DownBlock2D",) * len(channels),
        up_block_types=("UpBlock2D",) * len(channels),
        norm_num_groups=8,
        num_class_embeds=num_classes,
    )


def _train(
    model: torch.nn.Module,
    params: list[torch.nn.Parameter],
    images: torch.Tensor,
    labels: torch.Tensor,
    *,
    steps: int,
    batch_size: int,
    lr: float,
    p_uncond: float,
    seed: int,
    progress: bool,
    desc: str,
) -> list[float]:
    from diffusers import DDPMScheduler
    from icml25_shared.cli import progress as bar

    sched = DDPMScheduler(num_train_timesteps=1000)
    gen = torch.Generator().manual_seed(seed)
    opt = torch.optim.AdamW(params, lr=lr, weight_decay=0.0)
    model.train()
    losses = []
    for _ in bar(range(steps), enabled=progress, desc=desc):
        idx = torch.randint(0, images.shape[0], (batch_size,), generator=gen)
        x0, y = images[idx], labels[idx].clone()
        y[torch.rand(batch_size, generator=gen) < p_uncond] = NULL_CLASS
        noise = torch.randn(x0.shape, generator=gen)
        t = torch.randint(0, 1000, (batch_size,), generator=gen)
        pred = model(sched.add_noise(x0, noise, t), t, class_labels=y).sample
        loss = torch.nn.functional.mse_loss(pred, noise)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        losses.append(float(loss.detach()))
    model.eval()
    return losses


def _check_steps(**kw: Any) -> None:
    for name, value in kw.items():
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise ValueError(f"{name} must be a positive int, got {value!r}")


def init_new_token(unet: torch.nn.Module, *, seed: int = NEW_TOKEN_SEED) -> torch.Tensor:
    """Set ``NEW_TOKEN``'s class embedding to a fixed random direction scaled to the mean norm of the trained digit
    embeddings (rows 0-7); returns it. Pretraining never sees ``NEW_TOKEN`` (its row gets no gradient), so this
    only replaces an untrained row and can be applied to a cached pretrained checkpoint without retraining."""
    weight = unet.class_embedding.weight
    direction = torch.randn(weight.shape[1], generator=torch.Generator().manual_seed(seed), dtype=torch.float64)
    scale = weight[:NEW_TOKEN].detach().double().norm(dim=1).mean()
    with torch.no_grad():
        weight[NEW_TOKEN] = (direction / direction.norm() * scale).to(weight.dtype)
    return weight[NEW_TOKEN].detach().clone()


def pretrain(
    data: DigitsData,
    *,
    steps: int = 2000,
    batch_size: int = 128,
    lr: float = 2e-3,
    seed: int = 0,
    channels: tuple[int, ...] = (16, 32),
    cache: str | Path | None = None,
    progress: bool = False,
) -> PixelUNet:
    """Train the "pretrained" model on digits 0-7 (10 % null-class dropout). Cached under ``cache`` if given.

    The returned model's ``NEW_TOKEN`` row is set by :func:`init_new_token`, also when loaded from ``cache``.
    """
    from diffusers import UNet2DModel

    _check_steps(steps=steps, batch_size=batch_size)
    size = int(data.pretrain_images.shape[-1])
    if cache is not None and (Path(cache) / "config.json").is_file():
        model = UNet2DModel.from_pretrained(str(cache), local_files_only=True).eval()
        init_new_token(model)  # idempotent; also upgrades checkpoints cached before the token had its own row
        return PixelUNet(model, null_class=NULL_CLASS)
    model = tiny_unet(size=size, channels=channels, seed=seed)
    _train(
        model,
        list(model.parameters()),
        data.pretrain_images,
        data.pretrain_labels,
        steps=steps,
        batch_size=batch_size,
        lr=lr,
        p_uncond=0.1,
        seed=seed,
        progress=progress,
        desc="pretrain",
    )
    init_new_token(model)  # a rare token: its own embedding, never trained, distinct from the empty prompt
    if cache is not None:
        model.save_pretrained(str(cache))
    return PixelUNet(model, null_class=NULL_CLASS)


def finetune(
    pretrained: PixelUNet,
    images: torch.Tensor,
    *,
    steps: int = 200,
    lr: float = 1e-3,
    lora_rank: int | None = None,
    batch_size: int | None = None,
    p_uncond: float = 0.0,
    seed: int = 0,
    cache: str | Path | None = None,
    progress: bool = False,
) -> PixelUNet:
    """Personalise a copy of ``pretrained`` on ``images`` bound to class ``NEW_TOKEN``.

    ``lora_rank=None``: full fine-tune of every weight (DreamBooth without prior preservation).
    ``lora_rank=r``: a rank-r peft LoRA adapter on convolutions and time projections; base weights frozen (the
    returned UNet still holds them, so ``without_adapters`` gives the pretrained model back).
    ``cache``: folder to reuse / write the fine-tuned weights (full) or adapter (LoRA).
    """
    from diffusers import UNet2DModel

    batch_size = batch_size or int(images.shape[0])
    _check_steps(steps=steps, batch_size=batch_size)
    labels = torch.full((images.shape[0],), NEW_TOKEN, dtype=torch.long)
    cached = cache is not None and Path(cache).is_dir() and any(Path(cache).iterdir())
    if lora_rank is None:
        if cached:
            model = UNet2DModel.from_pretrained(str(cache), local_files_only=True).eval()
            return PixelUNet(model, null_class=NULL_CLASS)
        model = copy.deepcopy(pretrained.unet)
        params = list(model.parameters())
    else:
        model = copy.deepcopy(pretrained.unet)
        if cached:
            return PixelUNet(load_lora(model, cache).eval(), null_class=NULL_CLASS)
        add_lora(model, rank=lora_rank, seed=seed)
        params = lora_parameters(model)
    _train(
        model,
        params,
        images,
        labels,
        steps=steps,
        batch_size=batch_size,
        lr=lr,
        p_uncond=p_uncond,
        seed=seed,
        progress=progress,
        desc="fine-tune" if lora_rank is None else "lora",
    )
    if cache is not None:
        if lora_rank is None:
            model.save_pretrained(str(cache))
        else:
            save_lora(model, cache)
    return PixelUNet(model, null_class=NULL_CLASS)
