"""Load pretrained / fine-tuned checkpoints from local diffusers folders (``local_files_only=True``, no hub).

Layouts understood: a Stable-Diffusion pipeline folder (``unet/``, optional ``vae/``, ``text_encoder/``,
``tokenizer/``, ``scheduler/``), a pipeline folder holding a pixel ``UNet2DModel`` in ``unet/``, or a single
model folder (``config.json`` + weights). A LoRA folder (peft or diffusers layout) can be applied on top.
"""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Any

import torch

from finextract.denoisers import Denoiser, LatentUNet, PixelUNet
from finextract.lora import load_lora

__all__ = ["load_checkpoint"]

log = logging.getLogger(__name__)


def _class_name(folder: Path) -> str:
    cfg = folder / "config.json"
    if not cfg.is_file():
        raise FileNotFoundError(f"{folder} has no config.json: not a diffusers model folder")
    return str(json.loads(cfg.read_text()).get("_class_name", ""))


def load_checkpoint(
    path: str | Path,
    *,
    lora: str | Path | None = None,
    null_class: int | None = None,
    torch_dtype: torch.dtype | None = None,
    device: str | torch.device = "cpu",
) -> Denoiser:
    """Load a local diffusers checkpoint as a :class:`~finextract.Denoiser` (no network access).

    ``lora``: an adapter folder applied to the UNet (then ``without_adapters(result)`` is the base model).
    ``null_class``: the unconditional class id of a class-conditional pixel UNet (default: the last id).
    For latent models with a tokenizer and text encoder, the empty prompt's embeddings become ``null_embeds``.
    """
    from diffusers import AutoencoderKL, DDIMScheduler, UNet2DConditionModel, UNet2DModel

    root = Path(path)
    if not root.is_dir():
        raise FileNotFoundError(
            f"checkpoint folder not found: {root} (only local diffusers folders are read; nothing is downloaded)"
        )
    kw: dict[str, Any] = {"local_files_only": True}
    if torch_dtype is not None:
        kw["torch_dtype"] = torch_dtype
    unet_dir = root / "unet" if (root / "unet").is_dir() else root
    cls = _class_name(unet_dir)
    if cls == "UNet2DConditionModel":
        unet = UNet2DConditionModel.from_pretrained(str(unet_dir), **kw)
    elif cls == "UNet2DModel":
        unet = UNet2DModel.from_pretrained(str(unet_dir), **kw)
    else:
        raise ValueError(f"{unet_dir} holds a {cls or 'unknown model'}; expected UNet2DModel or UNet2DConditionModel")
    unet = unet.to(device).eval()
    if lora is not None:
        load_lora(unet, lora)
    scheduler = None
    if (root / "scheduler").is_dir():
        scheduler = DDIMScheduler.from_pretrained(str(root), subfolder="scheduler", local_files_only=True)
    if cls == "UNet2DModel":
        n_cls = unet.config.num_class_embeds
        null = null_class if null_class is not None else (n_cls - 1 if n_cls else None)
        return PixelUNet(unet, null_class=null, scheduler=scheduler)
    vae = text_encoder = tokenizer = None
    if (root / "vae").is_dir():
        vae = AutoencoderKL.from_pretrained(str(root), subfolder="vae", **kw).to(device).eval()
    if (root / "text_encoder").is_dir():
        from transformers import CLIPTextModel

        text_encoder = CLIPTextModel.from_pretrained(str(root / "text_encoder"), local_files_only=True)
        text_encoder = text_encoder.to(device)  # type: ignore[arg-type]  # transformers' stub types .to's self
        text_encoder.eval()
    if (root / "tokenizer").is_dir():
        from transformers import CLIPTokenizer

        tokenizer = CLIPTokenizer.from_pretrained(str(root / "tokenizer"), local_files_only=True)
    den = LatentUNet(unet, vae=vae, text_encoder=text_encoder, tokenizer=tokenizer, scheduler=scheduler)
    if tokenizer is not None and text_encoder is not None:
        den.null_embeds = den.null_cond = den.encode_prompt("")
    return den
