"""LoRA adapters on diffusers UNets through peft: add, save, load (peft or diffusers file layouts)."""

from __future__ import annotations

import json
import warnings
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import torch

__all__ = ["add_lora", "load_lora", "save_lora"]

DEFAULT_TARGETS = ("to_q", "to_k", "to_v", "to_out.0", "conv1", "conv2", "time_emb_proj")
_WEIGHTS = "adapter_model.safetensors"


def _present_targets(model: torch.nn.Module, targets: Sequence[str]) -> list[str]:
    names = [n for n, _ in model.named_modules()]
    found = [t for t in targets if any(n == t or n.endswith("." + t) for n in names)]
    if not found:
        raise ValueError(f"none of the LoRA target modules {list(targets)} exist in {type(model).__name__}")
    return found


def add_lora(
    model: torch.nn.Module,
    *,
    rank: int = 4,
    alpha: float | None = None,
    target_modules: Sequence[str] = DEFAULT_TARGETS,
    random_state: Any = None,
) -> torch.nn.Module:
    """Inject a peft LoRA adapter (B initialised to zero, so the output is unchanged) and freeze the base.

    Parameters
    ----------
    model : torch.nn.Module
        A diffusers UNet (modified in place).
    rank : int, default 4
        LoRA rank r.
    alpha : float, optional
        LoRA alpha (default ``rank``, a scale of 1).
    target_modules : sequence of str
        Module-name suffixes: attention projections, resnet convs and time-embedding projections by default;
        names absent from the model are skipped.
    random_state : None, int or numpy Generator, optional
        Seeds the initialisation of the A matrices; None draws from torch's global generator. torch's global
        generator is left as it was when this is given.

    Returns
    -------
    torch.nn.Module
        ``model``, with only the LoRA parameters trainable.
    """
    from peft import LoraConfig, inject_adapter_in_model


    if isinstance(rank, bool) or not isinstance(rank, int) or rank < 1:
        raise ValueError(f"rank must be a positive int, got {rank!r}")
    config = LoraConfig(
        r=rank,
        lora_alpha=alpha if alpha is not None else rank,  # type: ignore[arg-type]  # peft's stub says int; floats work
        target_modules=_present_targets(model, target_modules),
        init_lora_weights=True,
    )
    model.requires_grad_(False)
    if random_state is None:
        inject_adapter_in_model(config, model)
    else:
        from icml25_shared.random import int_seed

        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(int_seed(random_state))
            inject_adapter_in_model(config, model)
    for name, p in model.named_parameters():
        p.requires_grad_("lora_" in name)
    setattr(model, "_finextract_lora_config", config)  # noqa: B010 - remembered for save_lora (not a Module field)
    return model


def save_lora(model: torch.nn.Module, path: str | Path) -> Path:
    """Write the adapter in peft's layout: ``adapter_config.json`` + ``adapter_model.safetensors``."""
    from peft import get_peft_model_state_dict
    from safetensors.torch import save_file

    config = getattr(model, "_finextract_lora_config", None)
    if config is None:
        raise ValueError("this model carries no adapter added by finextract.add_lora / load_lora")
    path = Path(path)
    path.mkdir(parents=True, exist_ok=True)
    state = {k: v.detach().cpu().contiguous() for k, v in get_peft_model_state_dict(model).items()}
    save_file(state, str(path / _WEIGHTS))
    cfg = config.to_dict()
    cfg["target_modules"] = sorted(cfg["target_modules"]) if cfg.get("target_modules") else None
    (path / "adapter_config.json").write_text(json.dumps(cfg, indent=2, default=str))
    return path


def load_lora(model: torch.nn.Module, path: str | Path) -> torch.nn.Module:
    """Load a LoRA adapter into ``model`` from a local folder (no hub access).

    Accepts peft's layout (``adapter_config.json`` + ``adapter_model.safetensors``, as written by
    :func:`save_lora`) and diffusers' ``pytorch_lora_weights.safetensors`` (``train_text_to_image_lora.py`` /
    DreamBooth-LoRA output) for models with diffusers' ``load_lora_adapter``.
    """
    path = Path(path)
    if not path.is_dir():
        raise FileNotFoundError(f"LoRA folder not found: {path}")
    if (path / "adapter_config.json").is_file():
        from peft import LoraConfig, inject_adapter_in_model, set_peft_model_state_dict
        from safetensors.torch import load_file

        raw = json.loads((path / "adapter_config.json").read_text())
        known = set(LoraConfig.__dataclass_fields__)
        config = LoraConfig(**{k: v for k, v in raw.items() if k in known and k not in ("peft_type", "task_type")})
        weights = path / _WEIGHTS
        if not weights.is_file():
            raise FileNotFoundError(f"{weights} is missing next to adapter_config.json")
        model.requires_grad_(False)
        inject_adapter_in_model(config, model)
        result = set_peft_model_state_dict(model, load_file(str(weights)))
        unexpected = getattr(result, "unexpected_keys", None)
        if unexpected:
            raise ValueError(f"LoRA weights in {path} do not fit this model: unexpected keys {unexpected[:3]}...")
        setattr(model, "_finextract_lora_config", config)  # noqa: B010 - not a Module field
        return model
    if (path / "pytorch_lora_weights.safetensors").is_file():
        if not hasattr(model, "load_lora_adapter"):
            raise TypeError(f"{type(model).__name__} cannot read diffusers LoRA files; save with finextract.save_lora")
        from safetensors import safe_open

        with safe_open(str(path / "pytorch_lora_weights.safetensors"), framework="pt") as f:
            other = [k for k in f.keys() if not k.startswith("unet.")]
        if other:
            warnings.warn(
                f"{path} also holds {len(other)} LoRA tensors outside the UNet (e.g. {other[0]!r}, a text-encoder "
                "LoRA from --train_text_encoder); only the UNet adapter is loaded, so prompts are encoded by the "
                "base text encoder and the audit may under-report extraction",
                UserWarning,
                stacklevel=2,
            )
        unet: Any = model  # a diffusers UNet (PeftAdapterMixin), whose mixin methods are not in Module's type
        unet.load_lora_adapter(
            str(path), prefix="unet", weight_name="pytorch_lora_weights.safetensors", local_files_only=True
        )
        return model
    raise FileNotFoundError(
        f"{path} holds neither adapter_config.json (peft) nor pytorch_lora_weights.safetensors (diffusers)"
    )


def lora_parameters(model: torch.nn.Module) -> list[Any]:
    """The trainable LoRA parameters of ``model``."""
    return [p for n, p in model.named_parameters() if "lora_" in n]
