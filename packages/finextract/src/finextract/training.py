"""CPU-scale training for the digits experiment: pretrain a tiny class-conditional UNet, then personalise it.

Two experiment designs (both on scikit-learn's bundled 8x8 digits, ``size`` > 8 upsamples bilinearly, in [-1, 1]):

- ``"instance"`` (:func:`instance_data`, DreamBooth's "a sks dog" setting): N specific images of ONE digit the
  pretrained model knows (``INSTANCE_DIGIT`` = 3, fixed before any result). A fixed pool of ``INSTANCE_POOL`` 3s
  is held out of pretraining (pretraining = digits 0-7 minus the pool); each seed fine-tunes on a disjoint block of
  N pool images. The new token starts as the digit's trained class embedding (``token_init`` = 3), as "sks dog"
  starts out meaning "dog".
- ``"new-concept"`` (:func:`digits_data`): N images of 8s and 9s, digits pretraining never saw, under a new token
  with a random embedding (an out-of-distribution concept).

Class ids: 0-7 digits, ``NEW_TOKEN`` = 8 (never seen in pretraining, like DreamBooth's rare token), ``NULL_CLASS``
= 9 (the empty prompt, trained with 10 % condition dropout).

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
from icml25_shared.random import check_random_state, child_seeds, int_seed

from finextract.denoisers import PixelUNet
from finextract.lora import add_lora, load_lora, lora_parameters, save_lora

__all__ = [
    "NEW_TOKEN",
    "NULL_CLASS",
    "DigitsData",
    "digits_data",
    "finetune",
    "init_new_token",
    "instance_data",
    "instance_pool",
    "pretrain",
    "tiny_unet",
]

log = logging.getLogger(__name__)

NEW_TOKEN = 8
NULL_CLASS = 9
#: seed of the new token's fixed random embedding direction (independent of the experiment seeds)
NEW_TOKEN_SEED = 20250713
#: the "instance" design: the known digit whose specific images are personalised (fixed before any result)
INSTANCE_DIGIT = 3
#: size of the fixed pool of INSTANCE_DIGIT images held out of pretraining (6 disjoint blocks of N = 8)
INSTANCE_POOL = 48
#: seed of the pool's draw (independent of the experiment seeds)
INSTANCE_POOL_SEED = 20250714


@dataclass
class DigitsData:
    """A pretraining set and a personalisation set of digits.

    ``pretrain_images`` (n, 1, s, s) in [-1, 1] with ``pretrain_labels`` (digits 0-7); ``finetune_images``
    (N, 1, s, s): the personalisation set whose extraction is audited.
    """

    pretrain_images: torch.Tensor
    pretrain_labels: torch.Tensor
    finetune_images: torch.Tensor
    finetune_digits: np.ndarray
    #: indices into ``sklearn.datasets.load_digits()`` of the pretraining and fine-tuning images
    pretrain_indices: np.ndarray | None = None
    finetune_indices: np.ndarray | None = None
    #: "new-concept" or "instance"
    design: str = "new-concept"
    #: class whose trained embedding ``NEW_TOKEN`` starts from (None: a fixed random direction)
    token_init: int | None = None


def _load_digits(size: int) -> tuple[torch.Tensor, torch.Tensor]:
    from sklearn.datasets import load_digits

    d = load_digits()
    x = torch.tensor(d.images, dtype=torch.float32)[:, None] / 8.0 - 1.0
    if size != 8:
        x = torch.nn.functional.interpolate(x, size=(size, size), mode="bilinear", align_corners=False)
    return x, torch.tensor(d.target)


def digits_data(n_train: int = 8, *, size: int = 8, random_state: Any = 0) -> DigitsData:
    """Split the digits for the "new-concept" design.

    Pretraining gets digits 0-7; the personalisation set is ``n_train`` random 8s and 9s.

    Parameters
    ----------
    n_train : int, default 8
        Size N of the fine-tuning set.
    size : int, default 8
        Image side; above 8 the images are upsampled bilinearly.
    random_state : None, int or numpy Generator, default 0
        Draws the fine-tuning images (scikit-learn semantics).

    Returns
    -------
    DigitsData
        Images in [-1, 1], shape (n, 1, size, size).

    Examples
    --------
    >>> d = digits_data(4, random_state=0)
    >>> tuple(d.finetune_images.shape), sorted(set(d.finetune_digits.tolist())) <= [8, 9]
    ((4, 1, 8, 8), True)
    """
    _check_steps(n_train=n_train)
    x, y = _load_digits(size)
    pre = y < 8
    held = np.flatnonzero(~pre.numpy())
    if n_train > held.size:
        raise ValueError(f"n_train={n_train} exceeds the {held.size} held-out digit images")
    pick = np.sort(check_random_state(random_state).choice(held, n_train, replace=False))
    return DigitsData(
        pretrain_images=x[pre],
        pretrain_labels=y[pre],
        finetune_images=x[pick],
        finetune_digits=y[pick].numpy(),
        pretrain_indices=np.flatnonzero(pre.numpy()),
        finetune_indices=pick,
    )


def instance_pool(*, digit: int = INSTANCE_DIGIT, pool_size: int = INSTANCE_POOL) -> np.ndarray:
    """Return the fixed pool of ``digit`` images held out of pretraining.

    Parameters
    ----------
    digit : int, default 3
        A pretrained digit (0-7).
    pool_size : int, default 48
        Number of held-out images.

    Returns
    -------
    numpy.ndarray
        Indices into ``load_digits()``, in the order that defines the per-seed blocks.
    """
    from sklearn.datasets import load_digits

    of_digit = np.flatnonzero(load_digits().target == digit)
    if not 1 <= pool_size < of_digit.size:
        raise ValueError(f"pool_size must be in [1, {of_digit.size}), got {pool_size}")
    return np.random.default_rng(INSTANCE_POOL_SEED).permutation(of_digit)[:pool_size]


def instance_data(
    n_train: int = 8,
    *,
    size: int = 8,
    random_state: int = 0,
    digit: int = INSTANCE_DIGIT,
    pool_size: int = INSTANCE_POOL,
) -> DigitsData:
    """Split the digits for the "instance" design (see the module docstring).

    Pretraining is digits 0-7 minus a fixed pool of ``pool_size`` images of ``digit``; fine-tuning is block
    ``random_state mod (pool_size // n_train)`` of that pool, so seeds 0-5 get disjoint sets for the defaults.
    The pretraining set is the same for every seed, so one pretrained model serves all of them, and no pool
    image is ever in it.

    Parameters
    ----------
    n_train : int, default 8
        Size N of the fine-tuning set.
    size : int, default 8
        Image side; above 8 the images are upsampled bilinearly.
    random_state : int, default 0
        The experiment seed: it selects the pool block (the pool itself is drawn once, with a fixed seed).
    digit : int, default 3
        The pretrained digit whose instances are personalised.
    pool_size : int, default 48
        Images of ``digit`` held out of pretraining.

    Returns
    -------
    DigitsData
        With ``design="instance"`` and ``token_init=digit``.
    """
    if isinstance(random_state, bool) or not isinstance(random_state, (int, np.integer)) or random_state < 0:
        raise ValueError(f"random_state selects a pool block and must be a non-negative int, got {random_state!r}")
    _check_steps(n_train=n_train)
    if not 0 <= digit < NEW_TOKEN:
        raise ValueError(f"digit must be one of the pretrained digits 0-{NEW_TOKEN - 1}, got {digit}")
    pool = instance_pool(digit=digit, pool_size=pool_size)
    n_blocks = pool.size // n_train
    if n_blocks < 1:
        raise ValueError(f"n_train={n_train} exceeds the {pool.size} held-out images of digit {digit}")
    block = int(random_state) % n_blocks
    pick = np.sort(pool[block * n_train : (block + 1) * n_train])
    x, y = _load_digits(size)
    keep = (y < NEW_TOKEN).numpy()
    keep[pool] = False
    return DigitsData(
        pretrain_images=x[keep],
        pretrain_labels=y[keep],
        finetune_images=x[pick],
        finetune_digits=y[pick].numpy(),
        pretrain_indices=np.flatnonzero(keep),
        finetune_indices=pick,
        design="instance",
        token_init=digit,
    )


def tiny_unet(
    *,
    size: int = 8,
    channels: tuple[int, ...] = (16, 32),
    num_classes: int = 10,
    random_state: Any = 0,
) -> Any:
    """Build a ~0.16 M-parameter class-conditional ``UNet2DModel`` (no attention) for 1-channel images.

    Parameters
    ----------
    size : int, default 8
        Image side.
    channels : tuple of int, default (16, 32)
        Block widths.
    num_classes : int, default 10
        Class embeddings (digits 0-7, ``NEW_TOKEN``, ``NULL_CLASS``).
    random_state : None, int or numpy Generator, default 0
        Seeds the weight initialisation (torch's global generator is left as it was).

    Returns
    -------
    diffusers.UNet2DModel
        The randomly initialised model.
    """
    from diffusers import UNet2DModel

    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(int_seed(random_state))
        return _build_unet(UNet2DModel, size, channels, num_classes)


def _build_unet(cls: Any, size: int, channels: tuple[int, ...], num_classes: int) -> Any:
    return cls(
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
        pred = model(sched.add_noise(x0, noise, t), t, class_labels=y).sample  # type: ignore[attr-defined]  # diffusers stub gap
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


def init_new_token(
    unet: torch.nn.Module, *, random_state: Any = NEW_TOKEN_SEED, from_class: int | None = None
) -> torch.Tensor:
    """Set ``NEW_TOKEN``'s class embedding and return it.

    Pretraining never sees ``NEW_TOKEN`` (its row gets no gradient), so this only replaces an untrained row and
    can be applied to a cached pretrained checkpoint without retraining.

    Parameters
    ----------
    unet : diffusers.UNet2DModel
        A class-conditional model with ``class_embedding``.
    random_state : None, int or numpy Generator, default NEW_TOKEN_SEED
        Seeds the random direction (``from_class=None``).
    from_class : int, optional
        None: a fixed random direction scaled to the mean norm of the trained digit embeddings (rows 0-7).
        ``c``: a copy of digit ``c``'s trained embedding (the "instance" design: the token starts out meaning
        "a c", as DreamBooth's "sks dog" starts out meaning "dog").

    Returns
    -------
    torch.Tensor
        A copy of the new row.
    """
    embedding: Any = unet.class_embedding  # an nn.Embedding (torch types submodule attributes as Tensor | Module)
    weight: torch.Tensor = embedding.weight
    if from_class is not None:
        if not 0 <= from_class < NEW_TOKEN:
            raise ValueError(f"from_class must be a pretrained digit 0-{NEW_TOKEN - 1}, got {from_class}")
        with torch.no_grad():
            weight[NEW_TOKEN] = weight[from_class]
        return weight[NEW_TOKEN].detach().clone()
    generator = torch.Generator().manual_seed(int_seed(random_state))
    direction = torch.randn(weight.shape[1], generator=generator, dtype=torch.float64)
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
    random_state: Any = 0,
    channels: tuple[int, ...] = (16, 32),
    cache: str | Path | None = None,
    progress: bool = False,
) -> PixelUNet:
    """Train the "pretrained" model on digits 0-7 with 10 % null-class dropout.

    The returned model's ``NEW_TOKEN`` row is set by :func:`init_new_token` (from ``data.token_init``), also when
    loaded from ``cache``.

    Parameters
    ----------
    data : DigitsData
        Its ``pretrain_images`` and ``pretrain_labels`` are trained on.
    steps, batch_size, lr : int, int, float
        AdamW optimisation of the epsilon-prediction loss on diffusers' DDPM schedule (1000 steps, linear).
    random_state : None, int or numpy Generator, default 0
        Root of two independent streams (weight initialisation, training batches), via
        :func:`icml25_shared.random.child_seeds`.
    channels : tuple of int, default (16, 32)
        Block widths of :func:`tiny_unet`.
    cache : path, optional
        Folder to reuse or write the trained model.
    progress : bool, default False
        A tqdm bar over the training steps.

    Returns
    -------
    PixelUNet
        The pretrained model, ``null_class=NULL_CLASS``.
    """
    from diffusers import UNet2DModel

    _check_steps(steps=steps, batch_size=batch_size)
    size = int(data.pretrain_images.shape[-1])
    if cache is not None and (Path(cache) / "config.json").is_file():
        model = UNet2DModel.from_pretrained(str(cache), local_files_only=True).eval()
        init_new_token(model, from_class=data.token_init)  # idempotent; also upgrades older cached checkpoints
        return PixelUNet(model, null_class=NULL_CLASS)
    init_seed, train_seed = child_seeds(random_state, 2)
    model = tiny_unet(size=size, channels=channels, random_state=init_seed)
    _train(
        model,
        list(model.parameters()),
        data.pretrain_images,
        data.pretrain_labels,
        steps=steps,
        batch_size=batch_size,
        lr=lr,
        p_uncond=0.1,
        seed=train_seed,
        progress=progress,
        desc="pretrain",
    )
    init_new_token(model, from_class=data.token_init)  # never trained in pretraining, distinct from the empty prompt
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
    random_state: Any = 0,
    cache: str | Path | None = None,
    progress: bool = False,
) -> PixelUNet:
    """Personalise a copy of ``pretrained`` on ``images`` bound to class ``NEW_TOKEN``.

    Parameters
    ----------
    pretrained : PixelUNet
        The model to start from (not modified).
    images : torch.Tensor
        (N, 1, H, W) fine-tuning images in [-1, 1].
    steps, lr : int, float
        AdamW steps and learning rate.
    lora_rank : int, optional
        None: full fine-tune of every weight (DreamBooth without prior preservation). ``r``: a rank-r peft LoRA
        adapter on convolutions and time projections with the base weights frozen (the returned UNet still
        holds them, so ``without_adapters`` gives the pretrained model back).
    batch_size : int, optional
        Default: all N images per step.
    p_uncond : float, default 0.0
        Probability of replacing the token with the null class.
    random_state : None, int or numpy Generator, default 0
        Root of two independent streams (LoRA initialisation, training batches).
    cache : path, optional
        Folder to reuse or write the fine-tuned weights (full) or adapter (LoRA).
    progress : bool, default False
        A tqdm bar over the training steps.

    Returns
    -------
    PixelUNet
        The fine-tuned model.
    """
    from diffusers import UNet2DModel

    lora_seed, train_seed = child_seeds(random_state, 2)

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
        if cached and cache is not None:
            return PixelUNet(load_lora(model, cache).eval(), null_class=NULL_CLASS)
        add_lora(model, rank=lora_rank, random_state=lora_seed)
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
        seed=train_seed,
        progress=progress,
        desc="fine-tune" if lora_rank is None else "lora",
    )
    if cache is not None:
        if lora_rank is None:
            model.save_pretrained(str(cache))  # type: ignore[operator]  # a diffusers UNet: ModelMixin.save_pretrained
        else:
            save_lora(model, cache)
    return PixelUNet(model, null_class=NULL_CLASS)
