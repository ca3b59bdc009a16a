"""Noise predictors the samplers can guide: diffusers pixel UNets, latent (Stable-Diffusion-style) UNets, functions.

Every wrapper is a callable ``eps = denoiser(x_t, t, cond)`` with ``x_t`` of shape ``(B, *sample_shape)``,
an integer timestep ``t`` on the training grid (0..T-1) and a conditioning whose form depends on the model:
class ids for a class-conditional :class:`~diffusers.UNet2DModel`, prompt embeddings ``(B or 1, L, D)`` for a
:class:`~diffusers.UNet2DConditionModel`. ``decode`` maps final samples to images in [-1, 1] (identity for pixel
models, the VAE for latent models).
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import torch

__all__ = ["Denoiser", "FunctionDenoiser", "LatentUNet", "PixelUNet", "as_denoiser", "without_adapters"]


class Denoiser:
    """Base class: a noise predictor with a known sample shape and conditioning size.

    Subclasses set ``sample_shape`` (C, H, W) and ``cond_size`` (number of class ids, embedding width, or
    ``None`` when unconditional/unknown) and implement ``__call__(x, t, cond)``.
    """

    sample_shape: tuple[int, ...]
    cond_size: int | None = None
    cond_kind: str = "none"
    scheduler: Any = None
    null_cond: Any = None

    def __call__(self, x: torch.Tensor, t: int, cond: Any) -> torch.Tensor:  # pragma: no cover - interface
        """Predict the noise in ``x`` (B, *sample_shape) at timestep ``t`` under conditioning ``cond``."""
        raise TypeError(f"{type(self).__name__} does not implement __call__")

    def decode(self, x: torch.Tensor) -> torch.Tensor:
        """Map final samples to images; identity for pixel-space models."""
        return x

    def pair(self, x: torch.Tensor, t: int, cond_a: Any, cond_b: Any) -> tuple[torch.Tensor, torch.Tensor]:
        """Predictions under two conditionings (one batched call where the model allows it)."""
        return self(x, t, cond_a), self(x, t, cond_b)

    @property
    def device(self) -> torch.device:
        """Device of the model's parameters."""
        return torch.device("cpu")

    @property
    def dtype(self) -> torch.dtype:
        """Floating dtype of the model's parameters."""
        return torch.float32


def _module_device_dtype(module: torch.nn.Module) -> tuple[torch.device, torch.dtype]:
    p = next(module.parameters())
    return p.device, p.dtype


@dataclass
class PixelUNet(Denoiser):
    """A class-conditional diffusers ``UNet2DModel`` (``num_class_embeds`` set); ``cond`` is a class id or ids.

    ``null_class`` is the id trained as "no condition" (the empty prompt), used for the unconditional base term
    and for classifier-free guidance. ``scheduler`` (optional) supplies the training noise schedule.
    """

    unet: torch.nn.Module
    null_class: int | None = None
    scheduler: Any = None

    def __post_init__(self) -> None:
        cfg: Any = self.unet.config  # a diffusers config (attributes not typed)
        self.sample_shape = (int(cfg.in_channels), *_hw(cfg.sample_size))
        self.cond_size = getattr(cfg, "num_class_embeds", None)
        self.cond_kind = "class id" if self.cond_size else "none"
        self.null_cond = self.null_class

    @property
    def device(self) -> torch.device:
        """Device of the model's parameters."""
        return _module_device_dtype(self.unet)[0]

    @property
    def dtype(self) -> torch.dtype:
        """Floating dtype of the model's parameters."""
        return _module_device_dtype(self.unet)[1]

    def _labels(self, cond: Any, x: torch.Tensor) -> torch.Tensor | None:
        if not self.cond_size:
            return None
        if cond is None:
            raise ValueError("this UNet2DModel is class-conditional: pass a class id (or set null_class)")
        labels = torch.as_tensor(cond, device=x.device, dtype=torch.long).reshape(-1)
        if labels.numel() == 1:
            labels = labels.expand(x.shape[0])
        if labels.min() < 0 or labels.max() >= self.cond_size:
            raise ValueError(f"class id {labels.tolist()} out of range [0, {self.cond_size - 1}]")
        return labels

    def __call__(self, x: torch.Tensor, t: int, cond: Any) -> torch.Tensor:
        """Predict the noise in ``x`` at timestep ``t`` under ``cond``."""
        tt = torch.full((x.shape[0],), int(t), device=x.device, dtype=torch.long)
        return self.unet(x, tt, class_labels=self._labels(cond, x)).sample

    def pair(self, x: torch.Tensor, t: int, cond_a: Any, cond_b: Any) -> tuple[torch.Tensor, torch.Tensor]:
        """Predictions under two conditionings, in one batched UNet call."""
        a, b = self._labels(cond_a, x), self._labels(cond_b, x)
        if a is None or b is None:
            return super().pair(x, t, cond_a, cond_b)
        tt = torch.full((2 * x.shape[0],), int(t), device=x.device, dtype=torch.long)
        out = self.unet(torch.cat([x, x]), tt, class_labels=torch.cat([a, b])).sample
        return out[: x.shape[0]], out[x.shape[0] :]


@dataclass
class LatentUNet(Denoiser):
    """A ``UNet2DConditionModel`` with optional VAE/text encoder: the Stable-Diffusion layout.

    ``cond`` is prompt embeddings of shape ``(B or 1, L, cross_attention_dim)``. ``null_embeds`` are the
    pretrained text encoder's embeddings of the empty prompt. ``decode`` runs the VAE (when given) and returns
    images in [-1, 1].
    """

    unet: torch.nn.Module
    vae: torch.nn.Module | None = None
    text_encoder: torch.nn.Module | None = None
    tokenizer: Any = None
    scheduler: Any = None
    null_embeds: torch.Tensor | None = None
    extra: dict = field(default_factory=dict)

    def __post_init__(self) -> None:
        cfg: Any = self.unet.config  # a diffusers config (attributes not typed)
        self.sample_shape = (int(cfg.in_channels), *_hw(cfg.sample_size))
        self.cond_size = int(cfg.cross_attention_dim)
        self.cond_kind = "prompt embeddings"
        self.null_cond = self.null_embeds

    @property
    def device(self) -> torch.device:
        """Device of the model's parameters."""
        return _module_device_dtype(self.unet)[0]

    @property
    def dtype(self) -> torch.dtype:
        """Floating dtype of the model's parameters."""
        return _module_device_dtype(self.unet)[1]

    def _embeds(self, cond: Any, x: torch.Tensor) -> torch.Tensor:
        if not isinstance(cond, torch.Tensor) or cond.ndim != 3:
            raise ValueError(
                "a UNet2DConditionModel needs prompt embeddings of shape (B or 1, L, D), "
                f"got {type(cond).__name__}{tuple(getattr(cond, 'shape', ()))}"
            )
        if cond.shape[-1] != self.cond_size:
            raise ValueError(
                f"prompt embeddings have width {cond.shape[-1]} but the UNet's cross_attention_dim is {self.cond_size}"
            )
        if cond.shape[0] == 1 and x.shape[0] != 1:
            cond = cond.expand(x.shape[0], -1, -1)
        return cond.to(device=x.device, dtype=x.dtype)

    def __call__(self, x: torch.Tensor, t: int, cond: Any) -> torch.Tensor:
        """Predict the noise in ``x`` at timestep ``t`` under ``cond``."""
        tt = torch.full((x.shape[0],), int(t), device=x.device, dtype=torch.long)
        return self.unet(x, tt, encoder_hidden_states=self._embeds(cond, x)).sample

    def pair(self, x: torch.Tensor, t: int, cond_a: Any, cond_b: Any) -> tuple[torch.Tensor, torch.Tensor]:
        """Predictions under two conditionings, in one batched UNet call."""
        a, b = self._embeds(cond_a, x), self._embeds(cond_b, x)
        if a.shape != b.shape:
            return self(x, t, cond_a), self(x, t, cond_b)
        tt = torch.full((2 * x.shape[0],), int(t), device=x.device, dtype=torch.long)
        out = self.unet(torch.cat([x, x]), tt, encoder_hidden_states=torch.cat([a, b])).sample
        return out[: x.shape[0]], out[x.shape[0] :]

    def encode_prompt(self, prompt: str | list[str]) -> torch.Tensor:
        """Embed ``prompt`` with this model's tokenizer and text encoder: (B, L, D)."""
        if self.tokenizer is None or self.text_encoder is None:
            raise ValueError("encode_prompt needs a tokenizer and a text encoder; pass prompt embeddings instead")
        ids = self.tokenizer(
            prompt,
            padding="max_length",
            max_length=self.tokenizer.model_max_length,
            truncation=True,
            return_tensors="pt",
        ).input_ids
        with torch.no_grad():
            return self.text_encoder(ids.to(self.device))[0]

    def decode(self, x: torch.Tensor) -> torch.Tensor:
        """Decode latents with the VAE (identity without one); images in [-1, 1]."""
        if self.vae is None:
            return x
        vae: Any = self.vae  # a diffusers AutoencoderKL
        scale = float(getattr(vae.config, "scaling_factor", 1.0))
        return vae.decode(x / scale).sample.clamp(-1, 1)


@dataclass
class FunctionDenoiser(Denoiser):
    """Wrap any ``fn(x, t, cond) -> eps`` (analytic scores, other frameworks) with its sample shape and dtype."""

    fn: Callable[[torch.Tensor, int, Any], torch.Tensor]
    sample_shape: tuple[int, ...]
    cond_size: int | None = None
    scheduler: Any = None
    null_cond: Any = None
    dtype: torch.dtype = torch.float32

    def __call__(self, x: torch.Tensor, t: int, cond: Any) -> torch.Tensor:
        """Return ``fn(x, t, cond)``."""
        return self.fn(x, t, cond)


def _hw(size: Any) -> tuple[int, int]:
    if isinstance(size, (tuple, list)):
        return int(size[0]), int(size[1])
    return int(size), int(size)


def as_denoiser(model: Any) -> Denoiser:
    """Wrap a diffusers UNet/pipeline as a :class:`Denoiser`; a Denoiser passes through unchanged."""
    if isinstance(model, Denoiser):
        return model
    name = type(model).__name__
    if hasattr(model, "unet") and hasattr(model, "vae"):  # a diffusers pipeline
        return LatentUNet(
            model.unet,
            vae=model.vae,
            text_encoder=getattr(model, "text_encoder", None),
            tokenizer=getattr(model, "tokenizer", None),
            scheduler=getattr(model, "scheduler", None),
        )
    cfg = getattr(model, "config", None)
    if cfg is not None and getattr(cfg, "cross_attention_dim", None) is not None:
        return LatentUNet(model)
    if cfg is not None and hasattr(cfg, "in_channels") and hasattr(cfg, "sample_size"):
        return PixelUNet(model)
    raise TypeError(
        f"cannot use a {name} as a noise predictor: pass a diffusers UNet2DModel, UNet2DConditionModel, "
        "a Stable-Diffusion pipeline, or a finextract Denoiser (FunctionDenoiser wraps any callable)"
    )


def _tuner_layers(module: torch.nn.Module) -> list[Any]:
    from peft.tuners.tuners_utils import BaseTunerLayer

    return [m for m in module.modules() if isinstance(m, BaseTunerLayer)]


@contextlib.contextmanager
def _adapters_disabled(module: torch.nn.Module) -> Iterator[None]:
    layers = _tuner_layers(module)
    before = [not m.disable_adapters for m in layers]
    try:
        for m in layers:
            m.enable_adapters(False)
        yield
    finally:
        for m, on in zip(layers, before, strict=True):
            m.enable_adapters(on)


@dataclass
class _AdaptersOff(Denoiser):
    inner: Denoiser

    def __post_init__(self) -> None:
        self.sample_shape = self.inner.sample_shape
        self.cond_size = self.inner.cond_size
        self.cond_kind = self.inner.cond_kind
        self.scheduler = self.inner.scheduler
        self.null_cond = self.inner.null_cond

    @property
    def device(self) -> torch.device:
        """Device of the model's parameters."""
        return self.inner.device

    @property
    def dtype(self) -> torch.dtype:
        """Floating dtype of the model's parameters."""
        return self.inner.dtype

    def __call__(self, x: torch.Tensor, t: int, cond: Any) -> torch.Tensor:
        inner: Any = self.inner  # a UNet wrapper (PixelUNet or LatentUNet): it has .unet
        with _adapters_disabled(inner.unet):
            return inner(x, t, cond)

    def decode(self, x: torch.Tensor) -> torch.Tensor:
        return self.inner.decode(x)


def without_adapters(model: Any) -> Denoiser:
    """The pretrained view of a LoRA-adapted model: the same module with its peft adapters switched off per call.

    Lets a LoRA checkpoint be guided against its own base weights without holding a second copy of the UNet.
    """
    den = as_denoiser(model)
    unet = getattr(den, "unet", None)
    if unet is None or not _tuner_layers(unet):
        raise ValueError(
            "without_adapters needs a UNet carrying peft LoRA adapters (see finextract.add_lora / "
            "load_lora); this model has none"
        )
    return _AdaptersOff(den)
