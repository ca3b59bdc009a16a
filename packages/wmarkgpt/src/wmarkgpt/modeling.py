"""The mPLUG-Owl2 architecture that WMarkGPT fine-tunes, as a transformers ``PreTrainedModel``.

Three parts, under the parameter names of the released ``TanSongBai/WMarkGPT-*`` checkpoints:

* ``model.vision_model``: a CLIP-style ViT (class token, learned position embedding, pre-norm blocks
  with a fused ``query_key_value`` projection and QuickGELU MLPs, a final ``post_layernorm``);
* ``model.visual_abstractor``: learnable queries that cross-attend to the ViT tokens (2-D sin-cos
  position codes on the keys, SwiGLU MLP), projected by ``visual_fc`` to the decoder width and closed by
  a learned ``vit_eos`` token;
* a LLaMA decoder (``model.embed_tokens``, ``model.layers``, ``model.norm``, ``lm_head``) whose key/value
  projections and both RMS norms are two-way (``multiway.0`` for text tokens, ``multiway.1`` for visual
  tokens): each token uses the way of its modality.

The image token ``<|image|>`` is the id ``IMAGE_TOKEN_INDEX`` (-200) in ``input_ids``; it is replaced by
the abstractor's ``num_learnable_queries + 1`` visual tokens.
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, cast

import numpy as np
import torch
from torch import nn
from torch.nn import functional as F
from transformers import PretrainedConfig, PreTrainedModel
from transformers.modeling_outputs import CausalLMOutputWithPast

__all__ = [
    "AUX_OUTPUTS",
    "DEFAULT_VISUAL_CONFIG",
    "ConvStem",
    "IGNORE_INDEX",
    "IMAGE_TOKEN_INDEX",
    "WMarkGPTConfig",
    "WMarkGPTForCausalLM",
    "output_cache",
]

IMAGE_TOKEN_INDEX = -200
"""The id that stands for ``<|image|>`` in ``input_ids`` (as in mPLUG-Owl2)."""

IGNORE_INDEX = -100
"""Label id excluded from the loss (prompt and visual positions)."""

AUX_OUTPUTS = 5
"""Outputs of the optional auxiliary visual head: standardised visibility and the four box coordinates."""

DEFAULT_VISUAL_CONFIG: dict[str, dict[str, Any]] = {
    "visual_model": {"hidden_size": 1024, "intermediate_size": 4096, "num_hidden_layers": 24,
                     "num_attention_heads": 16, "image_size": 448, "patch_size": 14, "layer_norm_eps": 1e-6},
    "visual_abstractor": {"num_learnable_queries": 64, "hidden_size": 1024, "num_hidden_layers": 6,
                          "num_attention_heads": 16, "intermediate_size": 2816, "layer_norm_eps": 1e-6,
                          "encoder_hidden_size": 1024, "grid_size": 32},
}
"""The mPLUG-Owl2 (7B) vision and abstractor sizes, used when ``visual_config`` is not given."""

_WEIGHT_FILES = ("model.safetensors", "model.safetensors.index.json", "pytorch_model.bin",
                 "pytorch_model.bin.index.json")


class WMarkGPTConfig(PretrainedConfig):
    """Configuration of :class:`WMarkGPTForCausalLM` (``model_type`` "mplug_owl2").

    Parameters
    ----------
    visual_config : dict, optional
        ``{"visual_model": {...}, "visual_abstractor": {...}}`` with the keys of
        ``DEFAULT_VISUAL_CONFIG`` (missing keys take its values).
    vocab_size, hidden_size, intermediate_size, num_hidden_layers, num_attention_heads : int
        LLaMA decoder sizes (defaults: LLaMA-2-7B).
    num_key_value_heads : int, optional
        Key/value heads (grouped-query attention); defaults to ``num_attention_heads``.
    hidden_act : str, default "silu"
        Decoder MLP activation.
    max_position_embeddings : int, default 2048
        Longest sequence.
    rms_norm_eps : float, default 1e-6
        RMS norm epsilon.
    rope_theta : float, default 10000.0
        Rotary base.
    attention_bias : bool, default False
        Biases on the decoder's q/k/v/o projections.
    initializer_range : float, default 0.02
        Standard deviation of the initial weights.
    pad_token_id, bos_token_id, eos_token_id : int or None
        Special token ids (LLaMA: none, 1, 2).
    **kwargs
        Passed to ``PretrainedConfig`` (``tie_word_embeddings``, ...).
    """

    model_type = "mplug_owl2"

    def __init__(self, visual_config: dict[str, dict[str, Any]] | None = None, vocab_size: int = 32000,
                 hidden_size: int = 4096, intermediate_size: int = 11008, num_hidden_layers: int = 32,
                 num_attention_heads: int = 32, num_key_value_heads: int | None = None, hidden_act: str = "silu",
                 max_position_embeddings: int = 2048, rms_norm_eps: float = 1e-6, rope_theta: float = 10000.0,
                 attention_bias: bool = False, initializer_range: float = 0.02, pad_token_id: int | None = None,
                 bos_token_id: int | None = 1, eos_token_id: int | None = 2, **kwargs: Any) -> None:
        merged = {part: {**DEFAULT_VISUAL_CONFIG[part], **((visual_config or {}).get(part) or {})}
                  for part in DEFAULT_VISUAL_CONFIG}
        self.visual_config = merged
        self.vocab_size = vocab_size
        self.hidden_size = hidden_size
        self.intermediate_size = intermediate_size
        self.num_hidden_layers = num_hidden_layers
        self.num_attention_heads = num_attention_heads
        self.num_key_value_heads = num_key_value_heads if num_key_value_heads is not None else num_attention_heads
        self.hidden_act = hidden_act
        self.max_position_embeddings = max_position_embeddings
        self.rms_norm_eps = rms_norm_eps
        self.rope_theta = rope_theta
        self.attention_bias = attention_bias
        self.initializer_range = initializer_range
        self.pad_token_id = pad_token_id
        self.bos_token_id = bos_token_id
        self.eos_token_id = eos_token_id
        kwargs.setdefault("tie_word_embeddings", False)
        super().__init__(**kwargs)

    def validate_sizes(self) -> None:
        """Raise ``ValueError`` when the sizes cannot build the model (divisibility, grid size).

        Raises
        ------
        ValueError
            Naming the inconsistent sizes.
        """
        if self.hidden_size % self.num_attention_heads:
            raise ValueError(f"hidden_size {self.hidden_size} is not a multiple of num_attention_heads "
                             f"{self.num_attention_heads}")
        if self.num_attention_heads % self.num_key_value_heads:
            raise ValueError(f"num_attention_heads {self.num_attention_heads} is not a multiple of "
                             f"num_key_value_heads {self.num_key_value_heads}")
        vm, ab = self.visual_config["visual_model"], self.visual_config["visual_abstractor"]
        if vm["hidden_size"] % vm["num_attention_heads"] or ab["hidden_size"] % ab["num_attention_heads"]:
            raise ValueError("visual hidden sizes must be multiples of their attention heads")
        if vm["image_size"] % vm["patch_size"]:
            raise ValueError(f"image_size {vm['image_size']} is not a multiple of patch_size {vm['patch_size']}")
        grid = vm["image_size"] // vm["patch_size"]
        if ab["grid_size"] != grid:
            raise ValueError(f"visual_abstractor grid_size {ab['grid_size']} must equal image_size // patch_size "
                             f"= {grid}")
        if ab["encoder_hidden_size"] != vm["hidden_size"] or ab["hidden_size"] != vm["hidden_size"]:
            raise ValueError("the abstractor's hidden_size and encoder_hidden_size must equal the vision "
                             f"hidden_size {vm['hidden_size']}")


def _sincos_1d(dim: int, pos: np.ndarray) -> np.ndarray:
    omega = np.arange(dim // 2, dtype=np.float64) / (dim / 2.0)
    omega = 1.0 / 10000**omega
    out = np.einsum("m,d->md", pos.reshape(-1).astype(np.float64), omega)
    return np.concatenate([np.sin(out), np.cos(out)], axis=1)


def _sincos_2d(dim: int, grid_size: int) -> np.ndarray:
    gh = np.arange(grid_size, dtype=np.float32)
    gw = np.arange(grid_size, dtype=np.float32)
    grid = np.stack(np.meshgrid(gw, gh), axis=0).reshape(2, 1, grid_size, grid_size)
    emb = np.concatenate([_sincos_1d(dim // 2, grid[0]), _sincos_1d(dim // 2, grid[1])], axis=1)
    return np.concatenate([np.zeros((1, dim)), emb], axis=0)


class MultiwayNetwork(nn.Module):
    """One copy of a module per modality; each token goes through the copy of its modality."""

    def __init__(self, factory: Callable[[], nn.Module], num_multiway: int = 2) -> None:
        super().__init__()
        self.multiway = nn.ModuleList([factory() for _ in range(num_multiway)])

    def forward(self, hidden_states: torch.Tensor, modality: torch.Tensor) -> torch.Tensor:
        out = self.multiway[0](hidden_states)
        for way in range(1, len(self.multiway)):
            chosen = modality == way
            if bool(chosen.any()):
                out = torch.where(chosen.unsqueeze(-1), self.multiway[way](hidden_states), out)
        return out


class RMSNorm(nn.Module):
    """LLaMA's root-mean-square layer norm (computed in float32)."""

    def __init__(self, hidden_size: int, eps: float) -> None:
        super().__init__()
        self.weight = nn.Parameter(torch.ones(hidden_size))
        self.variance_epsilon = eps

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        dtype = x.dtype
        h = x.to(torch.float32)
        h = h * torch.rsqrt(h.pow(2).mean(-1, keepdim=True) + self.variance_epsilon)
        return self.weight * h.to(dtype)


def _rotate_half(x: torch.Tensor) -> torch.Tensor:
    a, b = x.chunk(2, dim=-1)
    return torch.cat((-b, a), dim=-1)


class DecoderAttention(nn.Module):
    """Causal self-attention with rotary positions and two-way key/value projections."""

    inv_freq: torch.Tensor

    def __init__(self, config: WMarkGPTConfig) -> None:
        super().__init__()
        self.num_heads = config.num_attention_heads
        self.head_dim = config.hidden_size // self.num_heads
        self.num_kv = config.num_key_value_heads
        bias = config.attention_bias
        h, kv = config.hidden_size, self.num_kv * self.head_dim
        self.q_proj = nn.Linear(h, self.num_heads * self.head_dim, bias=bias)
        self.k_proj = MultiwayNetwork(lambda: nn.Linear(h, kv, bias=bias))
        self.v_proj = MultiwayNetwork(lambda: nn.Linear(h, kv, bias=bias))
        self.o_proj = nn.Linear(self.num_heads * self.head_dim, h, bias=bias)
        inv = 1.0 / (config.rope_theta ** (torch.arange(0, self.head_dim, 2, dtype=torch.int64).float()
                                          / self.head_dim))
        self.register_buffer("inv_freq", inv, persistent=False)

    def forward(self, x: torch.Tensor, modality: torch.Tensor, mask: torch.Tensor,
                past: tuple[torch.Tensor, torch.Tensor] | None = None
                ) -> tuple[torch.Tensor, tuple[torch.Tensor, torch.Tensor]]:
        """Attention output of the new positions ``x`` and the keys/values of every position so far.

        ``past`` holds the rotated keys and values of earlier positions (before head repetition); the new
        positions are numbered after them, and ``mask`` spans past and new keys.
        """
        b, t, _ = x.shape
        start = 0 if past is None else past[0].shape[2]
        q = self.q_proj(x).view(b, t, self.num_heads, self.head_dim).transpose(1, 2)
        k = self.k_proj(x, modality).view(b, t, self.num_kv, self.head_dim).transpose(1, 2)
        v = self.v_proj(x, modality).view(b, t, self.num_kv, self.head_dim).transpose(1, 2)
        pos = torch.arange(start, start + t, device=x.device, dtype=torch.float32)
        freqs = torch.outer(pos, self.inv_freq.float())
        emb = torch.cat((freqs, freqs), dim=-1)
        cos, sin = emb.cos().to(q.dtype), emb.sin().to(q.dtype)
        q = q * cos + _rotate_half(q) * sin
        k = k * cos + _rotate_half(k) * sin
        if past is not None:
            k, v = torch.cat([past[0], k], dim=2), torch.cat([past[1], v], dim=2)
        present = (k, v)
        if self.num_kv != self.num_heads:
            rep = self.num_heads // self.num_kv
            k, v = k.repeat_interleave(rep, dim=1), v.repeat_interleave(rep, dim=1)
        scores = q @ k.transpose(2, 3) / math.sqrt(self.head_dim) + mask
        probs = torch.softmax(scores, dim=-1, dtype=torch.float32).to(q.dtype)
        out = (probs @ v).transpose(1, 2).reshape(b, t, self.num_heads * self.head_dim)
        return self.o_proj(out), present


class DecoderMLP(nn.Module):
    """LLaMA's gated MLP."""

    def __init__(self, config: WMarkGPTConfig) -> None:
        super().__init__()
        h, i = config.hidden_size, config.intermediate_size
        self.gate_proj = nn.Linear(h, i, bias=False)
        self.up_proj = nn.Linear(h, i, bias=False)
        self.down_proj = nn.Linear(i, h, bias=False)
        if config.hidden_act != "silu":
            raise ValueError(f"hidden_act {config.hidden_act!r} is not supported; accepted: 'silu'")

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.down_proj(F.silu(self.gate_proj(x)) * self.up_proj(x))


class DecoderLayer(nn.Module):
    """Pre-norm LLaMA block with two-way RMS norms."""

    def __init__(self, config: WMarkGPTConfig) -> None:
        super().__init__()
        self.self_attn = DecoderAttention(config)
        self.mlp = DecoderMLP(config)
        h, eps = config.hidden_size, config.rms_norm_eps
        self.input_layernorm = MultiwayNetwork(lambda: RMSNorm(h, eps))
        self.post_attention_layernorm = MultiwayNetwork(lambda: RMSNorm(h, eps))

    def forward(self, x: torch.Tensor, modality: torch.Tensor, mask: torch.Tensor,
                past: tuple[torch.Tensor, torch.Tensor] | None = None
                ) -> tuple[torch.Tensor, tuple[torch.Tensor, torch.Tensor]]:
        attended, present = self.self_attn(self.input_layernorm(x, modality), modality, mask, past)
        x = x + attended
        return x + self.mlp(self.post_attention_layernorm(x, modality)), present


class ConvStem(nn.Module):
    """A convolutional patch embedding: 3x3 convolutions with BatchNorm and ReLU, then a 1x1 projection.

    The first convolutions keep the full resolution and the last ``log2(patch_size)`` halve it, so that
    the output grid equals the ViT's patch grid. Small CNNs with BatchNorm learn local contrast
    (a faint logo, a frequency-domain mark) from a few thousand images where a randomly initialised
    linear patch embedding does not.

    Parameters
    ----------
    channels : sequence of int
        Widths of the 3x3 convolutions (at least ``1 + log2(patch_size)`` of them).
    hidden_size : int
        Output width (the ViT's).
    patch_size : int
        A power of two: the total stride.
    """

    def __init__(self, channels: Sequence[int], hidden_size: int, patch_size: int) -> None:
        super().__init__()
        n_down = int(round(math.log2(patch_size)))
        if 2**n_down != patch_size or len(channels) < 1 + n_down:
            raise ValueError(f"a conv stem needs a power-of-two patch_size and at least {1 + n_down} widths; got "
                             f"patch_size {patch_size} and widths {list(channels)}")
        layers: list[nn.Module] = []
        c_in = 3
        for i, c in enumerate(channels):
            stride = 2 if i >= len(channels) - n_down else 1  # full resolution first: a faint mark is fine detail
            conv = nn.Conv2d(c_in, c, 3, stride=stride, padding=1, bias=False)
            setattr(conv, "he_init", True)  # noqa: B010 - read by WMarkGPTForCausalLM._init_weights
            layers += [conv, nn.BatchNorm2d(c), nn.ReLU()]
            c_in = c
        layers.append(nn.Conv2d(c_in, hidden_size, 1))
        self.layers = nn.Sequential(*layers)

    def forward(self, pixels: torch.Tensor) -> torch.Tensor:
        """``(n, 3, S, S)`` pixels to ``(n, hidden, S / patch, S / patch)`` features."""
        return self.layers(pixels)


class VisionEmbeddings(nn.Module):
    """Patch embedding (strided convolution or :class:`ConvStem`), class token, positions, layer norm."""

    def __init__(self, cfg: dict[str, Any]) -> None:
        super().__init__()
        h = cfg["hidden_size"]
        self.cls_token = nn.Parameter(torch.randn(1, 1, h))
        self.patch_embed: nn.Module
        if cfg.get("conv_stem"):
            self.patch_embed = ConvStem(cfg["conv_stem"], h, cfg["patch_size"])
        else:
            self.patch_embed = nn.Conv2d(3, h, kernel_size=cfg["patch_size"], stride=cfg["patch_size"], bias=False)
        n = (cfg["image_size"] // cfg["patch_size"]) ** 2
        self.position_embedding = nn.Parameter(torch.randn(1, n + 1, h))
        self.pre_layernorm = nn.LayerNorm(h, eps=cfg["layer_norm_eps"])

    def forward(self, pixels: torch.Tensor) -> torch.Tensor:
        x = self.patch_embed(pixels).flatten(2).transpose(1, 2)
        x = torch.cat([self.cls_token.expand(x.shape[0], 1, -1).to(x.dtype), x], dim=1)
        return self.pre_layernorm(x + self.position_embedding[:, : x.shape[1]].to(x.dtype))


class VisionAttention(nn.Module):
    """ViT self-attention with the fused (head, q/k/v) projection layout of mPLUG-Owl."""

    def __init__(self, cfg: dict[str, Any]) -> None:
        super().__init__()
        self.hidden = cfg["hidden_size"]
        self.heads = cfg["num_attention_heads"]
        self.query_key_value = nn.Linear(self.hidden, 3 * self.hidden)
        self.dense = nn.Linear(self.hidden, self.hidden)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b, s, d = x.shape
        qkv = self.query_key_value(x).reshape(b, s, self.heads, 3, d // self.heads).permute(3, 0, 2, 1, 4)
        q, k, v = qkv[0], qkv[1], qkv[2]
        probs = torch.softmax(q @ k.transpose(-1, -2) * (d // self.heads) ** -0.5, dim=-1)
        return self.dense((probs @ v).permute(0, 2, 1, 3).reshape(b, s, d))


class VisionMLP(nn.Module):
    """ViT MLP with QuickGELU."""

    def __init__(self, cfg: dict[str, Any]) -> None:
        super().__init__()
        self.fc1 = nn.Linear(cfg["hidden_size"], cfg["intermediate_size"])
        self.fc2 = nn.Linear(cfg["intermediate_size"], cfg["hidden_size"])

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = self.fc1(x)
        return self.fc2(h * torch.sigmoid(1.702 * h))


class VisionLayer(nn.Module):
    """Pre-norm ViT block."""

    def __init__(self, cfg: dict[str, Any]) -> None:
        super().__init__()
        h, eps = cfg["hidden_size"], cfg["layer_norm_eps"]
        self.self_attn = VisionAttention(cfg)
        self.input_layernorm = nn.LayerNorm(h, eps=eps)
        self.mlp = VisionMLP(cfg)
        self.post_attention_layernorm = nn.LayerNorm(h, eps=eps)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x + self.self_attn(self.input_layernorm(x))
        return x + self.mlp(self.post_attention_layernorm(x))


class VisionEncoder(nn.Module):
    """The stack of ViT blocks."""

    def __init__(self, cfg: dict[str, Any]) -> None:
        super().__init__()
        self.layers = nn.ModuleList([VisionLayer(cfg) for _ in range(cfg["num_hidden_layers"])])

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        for layer in self.layers:
            x = layer(x)
        return x


class VisionModel(nn.Module):
    """The ViT encoder: ``(n, 3, H, W)`` pixels to ``(n, 1 + patches, hidden)`` tokens."""

    def __init__(self, cfg: dict[str, Any]) -> None:
        super().__init__()
        self.embeddings = VisionEmbeddings(cfg)
        self.encoder = VisionEncoder(cfg)
        self.post_layernorm = nn.LayerNorm(cfg["hidden_size"], eps=cfg["layer_norm_eps"])

    def forward(self, pixels: torch.Tensor) -> torch.Tensor:
        return self.post_layernorm(self.encoder(self.embeddings(pixels)))


class AbstractorMultiHeadAttention(nn.Module):
    """Cross-attention of the queries to ``[queries; image tokens]`` with fixed sin-cos position codes."""

    q_pos_embed: torch.Tensor
    k_pos_embed: torch.Tensor

    def __init__(self, cfg: dict[str, Any]) -> None:
        super().__init__()
        h = cfg["hidden_size"]
        self.heads = cfg["num_attention_heads"]
        self.query = nn.Linear(h, h)
        self.key = nn.Linear(cfg["encoder_hidden_size"], h)
        self.value = nn.Linear(cfg["encoder_hidden_size"], h)
        q_pos = _sincos_1d(h, np.arange(cfg["num_learnable_queries"], dtype=np.float32))
        self.register_buffer("q_pos_embed", torch.from_numpy(q_pos).float())
        self.register_buffer("k_pos_embed", torch.from_numpy(_sincos_2d(h, cfg["grid_size"])).float())

    def _split(self, x: torch.Tensor) -> torch.Tensor:
        return x.view(*x.shape[:-1], self.heads, x.shape[-1] // self.heads).permute(0, 2, 1, 3)

    def forward(self, queries: torch.Tensor, keys: torch.Tensor) -> torch.Tensor:
        pos = torch.cat([self.q_pos_embed, self.k_pos_embed], dim=0).unsqueeze(0).to(queries.dtype)
        k = self._split(self.key(keys + pos))
        v = self._split(self.value(keys))
        q = self._split(self.query(queries + self.q_pos_embed.unsqueeze(0).to(queries.dtype)))
        probs = torch.softmax(q @ k.transpose(-1, -2) / math.sqrt(q.shape[-1]), dim=-1)
        ctx = (probs @ v).permute(0, 2, 1, 3).contiguous()
        return ctx.view(*ctx.shape[:-2], -1)


class AbstractorMLP(nn.Module):
    """SwiGLU MLP with a layer norm before the down projection."""

    def __init__(self, cfg: dict[str, Any]) -> None:
        super().__init__()
        h, i = cfg["hidden_size"], cfg["intermediate_size"]
        self.w1 = nn.Linear(h, i)
        self.w2 = nn.Linear(i, h)
        self.w3 = nn.Linear(h, i)
        self.ffn_ln = nn.LayerNorm(i, eps=cfg["layer_norm_eps"])

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.w2(self.ffn_ln(F.silu(self.w1(x)) * self.w3(x)))


class AbstractorOutput(nn.Module):
    """Residual output projection and MLP of an abstractor layer."""

    def __init__(self, cfg: dict[str, Any]) -> None:
        super().__init__()
        h = cfg["hidden_size"]
        self.out_proj = nn.Linear(h, h)
        self.norm2 = nn.LayerNorm(h)
        self.mlp = AbstractorMLP(cfg)

    def forward(self, ctx: torch.Tensor, residual: torch.Tensor) -> torch.Tensor:
        x = residual + self.out_proj(ctx)
        return x + self.mlp(self.norm2(x))


class AbstractorCrossAttention(nn.Module):
    """Normalise queries and image tokens, attend, then the output block."""

    def __init__(self, cfg: dict[str, Any]) -> None:
        super().__init__()
        self.attention = AbstractorMultiHeadAttention(cfg)
        self.output = AbstractorOutput(cfg)
        self.norm1 = nn.LayerNorm(cfg["hidden_size"])
        self.normk = nn.LayerNorm(cfg["hidden_size"])

    def forward(self, queries: torch.Tensor, image_tokens: torch.Tensor) -> torch.Tensor:
        q = self.norm1(queries)
        keys = torch.cat([q, self.normk(image_tokens)], dim=1)
        return self.output(self.attention(q, keys), q)


class AbstractorLayer(nn.Module):
    """One abstractor layer."""

    def __init__(self, cfg: dict[str, Any]) -> None:
        super().__init__()
        self.crossattention = AbstractorCrossAttention(cfg)

    def forward(self, queries: torch.Tensor, image_tokens: torch.Tensor) -> torch.Tensor:
        return self.crossattention(queries, image_tokens)


class AbstractorEncoder(nn.Module):
    """The stack of abstractor layers."""

    def __init__(self, cfg: dict[str, Any]) -> None:
        super().__init__()
        self.layers = nn.ModuleList([AbstractorLayer(cfg) for _ in range(cfg["num_hidden_layers"])])

    def forward(self, queries: torch.Tensor, image_tokens: torch.Tensor) -> torch.Tensor:
        for layer in self.layers:
            queries = layer(queries, image_tokens)
        return queries


class VisualAbstractor(nn.Module):
    """Learnable queries over the ViT tokens: ``(n, S, C)`` to ``(n, queries + 1, decoder hidden)``."""

    def __init__(self, cfg: dict[str, Any], language_hidden_size: int) -> None:
        super().__init__()
        self.encoder = AbstractorEncoder(cfg)
        self.visual_fc = nn.Linear(cfg["hidden_size"], language_hidden_size)
        self.query_embeds = nn.Parameter(torch.randn(1, cfg["num_learnable_queries"], cfg["hidden_size"]))
        self.vit_eos = nn.Parameter(torch.randn(1, 1, language_hidden_size))

    def forward(self, image_tokens: torch.Tensor) -> torch.Tensor:
        queries = self.query_embeds.repeat(image_tokens.shape[0], 1, 1)
        out = self.visual_fc(self.encoder(queries, image_tokens))
        return torch.cat([out, self.vit_eos.repeat(out.shape[0], 1, 1)], dim=1)


class WMarkGPTModel(nn.Module):
    """Decoder body plus the vision tower and abstractor (the ``model.`` prefix of the checkpoint)."""

    def __init__(self, config: WMarkGPTConfig) -> None:
        super().__init__()
        self.embed_tokens = nn.Embedding(config.vocab_size, config.hidden_size, config.pad_token_id)
        self.layers = nn.ModuleList([DecoderLayer(config) for _ in range(config.num_hidden_layers)])
        self.norm = RMSNorm(config.hidden_size, config.rms_norm_eps)
        self.vision_model = VisionModel(config.visual_config["visual_model"])
        self.visual_abstractor = VisualAbstractor(config.visual_config["visual_abstractor"], config.hidden_size)

    def forward(self, embeds: torch.Tensor, modality: torch.Tensor, attention_mask: torch.Tensor) -> torch.Tensor:
        return self.decode(embeds, modality, attention_mask)[0]

    def decode(self, embeds: torch.Tensor, modality: torch.Tensor, attention_mask: torch.Tensor,
               past: tuple[tuple[torch.Tensor, torch.Tensor], ...] | None = None
               ) -> tuple[torch.Tensor, tuple[tuple[torch.Tensor, torch.Tensor], ...]]:
        """Hidden states of the new positions and every layer's keys/values, past ones included.

        ``attention_mask`` covers past and new positions, ``(batch, past + new)``.
        """
        t = embeds.shape[1]
        start = 0 if past is None else past[0][0].shape[2]
        causal = torch.ones(t, start + t, dtype=torch.bool, device=embeds.device).tril(diagonal=start)
        allowed = causal[None, None] & attention_mask.bool()[:, None, None, :]
        mask = torch.zeros(allowed.shape, dtype=embeds.dtype, device=embeds.device)
        mask = mask.masked_fill(~allowed, torch.finfo(embeds.dtype).min)
        x, presents = embeds, []
        for i, layer in enumerate(self.layers):
            x, present = layer(x, modality, mask, None if past is None else past[i])
            presents.append(present)
        return self.norm(x), tuple(presents)


class WMarkGPTForCausalLM(PreTrainedModel):
    """mPLUG-Owl2 with a language-model head: the WMarkGPT model.

    Parameters
    ----------
    config : WMarkGPTConfig
        Sizes of the decoder, vision tower and abstractor.

    Examples
    --------
    >>> import torch
    >>> from wmarkgpt.modeling import WMarkGPTForCausalLM, tiny_config
    >>> model = WMarkGPTForCausalLM(tiny_config(vocab_size=40)).eval()
    >>> ids = torch.tensor([[1, 5, -200, 7, 8]])
    >>> images = torch.zeros(1, 3, 16, 16)
    >>> model(input_ids=ids, images=images).logits.shape  # 4 text tokens + 4 queries + vit_eos
    torch.Size([1, 9, 40])
    """

    config_class = WMarkGPTConfig
    base_model_prefix = "model"
    _no_split_modules = ["DecoderLayer", "VisionLayer", "AbstractorLayer"]
    _keys_to_ignore_on_load_unexpected = [r"rotary_emb\.inv_freq"]

    def __init__(self, config: WMarkGPTConfig) -> None:
        config.validate_sizes()
        super().__init__(config)
        self.model = WMarkGPTModel(config)
        self.lm_head = nn.Linear(config.hidden_size, config.vocab_size, bias=False)
        vm = config.visual_config["visual_model"]
        # optional auxiliary head on the max-pooled vision tokens: standardised gt_score and the watermark box
        self.visual_aux_head = nn.Linear(vm["hidden_size"], AUX_OUTPUTS) if vm.get("aux_head") else None
        self._last_vision_tokens: torch.Tensor | None = None
        self.post_init()

    def _init_weights(self, module: nn.Module) -> None:
        std = self.config.initializer_range
        if isinstance(module, nn.Conv2d) and getattr(module, "he_init", False):  # the ConvStem's ReLU stack
            nn.init.kaiming_normal_(module.weight, nonlinearity="relu")
            if module.bias is not None:
                nn.init.zeros_(module.bias)
        elif isinstance(module, nn.BatchNorm2d):
            nn.init.ones_(module.weight)
            nn.init.zeros_(module.bias)
        elif isinstance(module, (nn.Linear, nn.Conv2d)):
            nn.init.normal_(module.weight, mean=0.0, std=std)
            if module.bias is not None:
                nn.init.zeros_(module.bias)
        elif isinstance(module, nn.Embedding):
            nn.init.normal_(module.weight, mean=0.0, std=std)
        elif isinstance(module, nn.LayerNorm):
            nn.init.ones_(module.weight)
            nn.init.zeros_(module.bias)
        elif isinstance(module, RMSNorm):
            nn.init.ones_(module.weight)
        elif isinstance(module, VisionEmbeddings):
            nn.init.normal_(module.cls_token, std=std)
            nn.init.normal_(module.position_embedding, std=std)
        elif isinstance(module, VisualAbstractor):
            nn.init.normal_(module.query_embeds, std=std)
            nn.init.normal_(module.vit_eos, std=std)
        elif isinstance(module, AbstractorMultiHeadAttention):
            cfg = self.config.visual_config["visual_abstractor"]
            h = cfg["hidden_size"]
            module.q_pos_embed.copy_(torch.from_numpy(
                _sincos_1d(h, np.arange(cfg["num_learnable_queries"], dtype=np.float32))).float())
            module.k_pos_embed.copy_(torch.from_numpy(_sincos_2d(h, cfg["grid_size"])).float())
        elif isinstance(module, DecoderAttention):
            cfg = self.config
            hd = cfg.hidden_size // cfg.num_attention_heads
            module.inv_freq.copy_(1.0 / (cfg.rope_theta ** (torch.arange(0, hd, 2, dtype=torch.int64).float() / hd)))

    def get_input_embeddings(self) -> nn.Module:
        """The decoder's token embedding."""
        return self.model.embed_tokens

    def set_input_embeddings(self, value: nn.Module) -> None:
        """Replace the decoder's token embedding."""
        self.model.embed_tokens = value

    def get_output_embeddings(self) -> nn.Module:
        """The language-model head."""
        return self.lm_head

    def encode_images(self, images: torch.Tensor) -> torch.Tensor:
        """Visual tokens of a batch of preprocessed images.

        Parameters
        ----------
        images : torch.Tensor, shape (n, 3, image_size, image_size)
            Pixel values after the image processor.

        Returns
        -------
        torch.Tensor, shape (n, num_learnable_queries + 1, hidden_size)
            The abstractor's output tokens, ``vit_eos`` last.
        """
        vm = self.config.visual_config["visual_model"]
        if not isinstance(images, torch.Tensor) or images.ndim != 4 or images.shape[1] != 3:
            shape = tuple(images.shape) if isinstance(images, torch.Tensor) else type(images).__name__
            raise ValueError(f"images must be a tensor of shape (n, 3, {vm['image_size']}, {vm['image_size']}), "
                             f"got {shape}")
        if images.shape[-1] != vm["image_size"] or images.shape[-2] != vm["image_size"]:
            raise ValueError(f"images are {images.shape[-2]}x{images.shape[-1]} but the vision tower expects "
                             f"{vm['image_size']}x{vm['image_size']}")
        images = images.to(self.model.embed_tokens.weight.dtype)
        tokens = self.model.vision_model(images)
        if self.visual_aux_head is not None and self.training:
            self._last_vision_tokens = tokens  # read by the trainer's auxiliary loss, so the tower runs once
        return self.model.visual_abstractor(tokens)

    def visual_aux(self, images: torch.Tensor | None = None) -> torch.Tensor:
        """The auxiliary head's outputs: standardised visibility and the box ``(x1, y1, x2, y2)``.

        Parameters
        ----------
        images : torch.Tensor, shape (n, 3, S, S), optional
            Preprocessed images; without them, the vision tokens of the last training forward pass.

        Returns
        -------
        torch.Tensor, shape (n, 5)
            ``(gt_score - 2.5) / 1.443`` and the box in image fractions, standardised as
            ``(fraction - 0.5) / 0.289`` (see ``wmarkgpt.training``).

        Raises
        ------
        ValueError
            When the configuration has no auxiliary head, or no images are given outside training.
        """
        if self.visual_aux_head is None:
            raise ValueError("this configuration has no auxiliary visual head (visual_model aux_head is False)")
        if images is not None:
            tokens = self.model.vision_model(images.to(self.model.embed_tokens.weight.dtype))
        elif self._last_vision_tokens is not None:
            tokens = self._last_vision_tokens
        else:
            raise ValueError("visual_aux needs images outside a training forward pass")
        # max over the patch tokens: a mark occupies few patches, a mean over all of them dilutes it
        return self.visual_aux_head(tokens[:, 1:].amax(dim=1))

    def build_inputs(self, input_ids: torch.Tensor, attention_mask: torch.Tensor | None = None,
                     images: torch.Tensor | None = None, labels: torch.Tensor | None = None
                     ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor | None]:
        """Embed ``input_ids`` and splice the visual tokens in place of each ``<|image|>`` id.

        Parameters
        ----------
        input_ids : torch.LongTensor, shape (batch, seq)
            Token ids; ``IMAGE_TOKEN_INDEX`` marks the image, exactly once per row when ``images`` is given
            and never otherwise.
        attention_mask : torch.Tensor, shape (batch, seq), optional
            1 for real tokens, 0 for padding.
        images : torch.Tensor, shape (batch, 3, H, W), optional
            One preprocessed image per row.
        labels : torch.LongTensor, shape (batch, seq), optional
            Target ids (``IGNORE_INDEX`` where no loss is taken).

        Returns
        -------
        tuple
            ``(embeds, modality, attention_mask, labels)`` over the spliced, right-padded sequence.

        Raises
        ------
        ValueError
            When a row has no or several image ids with ``images`` given, image ids appear without
            ``images``, the number of images differs from the batch size, the shapes disagree, or
            ``attention_mask`` is not a 0/1 right-padding mask.
        """
        if not isinstance(input_ids, torch.Tensor) or input_ids.ndim != 2 or input_ids.shape[0] == 0:
            raise ValueError("input_ids must be a non-empty 2-D LongTensor (batch, seq)")
        b, t = input_ids.shape
        if attention_mask is None:
            attention_mask = torch.ones_like(input_ids)
        if attention_mask.shape != input_ids.shape or (labels is not None and labels.shape != input_ids.shape):
            raise ValueError("attention_mask and labels must have the shape of input_ids")
        if bool(((attention_mask != 0) & (attention_mask != 1)).any()):
            raise ValueError("attention_mask must hold 0 or 1")
        if bool((attention_mask[:, 1:] > attention_mask[:, :-1]).any()):
            raise ValueError("attention_mask must describe right padding (ones, then zeros): positions count "
                             "from the first token, so left padding would shift every position")
        counts = (input_ids == IMAGE_TOKEN_INDEX).sum(dim=1)
        embed = self.model.embed_tokens
        if images is None:
            if bool(counts.any()):
                raise ValueError("input_ids contain the <|image|> id but no images were given")
            if bool(((input_ids < 0) | (input_ids >= self.config.vocab_size)).any()):
                raise ValueError(f"input_ids hold ids outside [0, {self.config.vocab_size})")
            return embed(input_ids), torch.zeros_like(input_ids), attention_mask, labels
        bad = [int(i) for i in torch.nonzero(counts != 1).flatten()]
        if bad:
            raise ValueError(f"each prompt needs exactly one <|image|> token; row {bad[0]} has "
                             f"{int(counts[bad[0]])}")
        if images.shape[0] != b:
            raise ValueError(f"got {images.shape[0]} images for {b} prompts (one image per prompt)")
        text = input_ids.clamp(min=0)
        if bool((input_ids[input_ids != IMAGE_TOKEN_INDEX] >= self.config.vocab_size).any()) or bool(
                (input_ids[input_ids != IMAGE_TOKEN_INDEX] < 0).any()):
            raise ValueError(f"input_ids hold ids outside [0, {self.config.vocab_size})")
        feats = self.encode_images(images)
        n_vis = feats.shape[1]
        tok = embed(text)
        pos = (input_ids == IMAGE_TOKEN_INDEX).int().argmax(dim=1)
        rows_e, rows_m, rows_a, rows_l = [], [], [], []
        for i in range(b):
            p = int(pos[i])
            rows_e.append(torch.cat([tok[i, :p], feats[i], tok[i, p + 1:]]))
            rows_m.append(torch.cat([torch.zeros(p, dtype=torch.long), torch.ones(n_vis, dtype=torch.long),
                                     torch.zeros(t - p - 1, dtype=torch.long)]).to(input_ids.device))
            rows_a.append(torch.cat([attention_mask[i, :p], attention_mask.new_ones(n_vis),
                                     attention_mask[i, p + 1:]]))
            if labels is not None:
                rows_l.append(torch.cat([labels[i, :p], labels.new_full((n_vis,), IGNORE_INDEX), labels[i, p + 1:]]))
        embeds = torch.stack(rows_e)
        new_labels = torch.stack(rows_l) if labels is not None else None
        return embeds, torch.stack(rows_m), torch.stack(rows_a), new_labels

    def forward(self, input_ids: torch.Tensor | None = None, attention_mask: torch.Tensor | None = None,
                images: torch.Tensor | None = None, labels: torch.Tensor | None = None,
                return_dict: bool | None = None, past_key_values: tuple | None = None, use_cache: bool = False,
                cache: tuple | None = None, **kwargs: Any) -> CausalLMOutputWithPast:
        """Logits (and the next-token loss when ``labels`` is given) of text with an optional image.

        Parameters
        ----------
        input_ids : torch.LongTensor, shape (batch, seq)
            Token ids with ``IMAGE_TOKEN_INDEX`` where the image goes.
        attention_mask : torch.Tensor, shape (batch, seq), optional
            1 for tokens, 0 for right padding.
        images : torch.Tensor, shape (batch, 3, H, W), optional
            One preprocessed image per prompt.
        labels : torch.LongTensor, shape (batch, seq), optional
            Targets aligned with ``input_ids`` (shifted inside); ``IGNORE_INDEX`` to skip.
        return_dict : bool, optional
            Accepted for transformers compatibility; the output is always a ``CausalLMOutputWithPast``.
        past_key_values : tuple, optional
            The cache of an earlier call with ``use_cache=True`` (:func:`output_cache`): ``input_ids`` then
            holds only the new text tokens (no image), and ``attention_mask``, if given, spans past and new
            tokens and is all ones. ``cache=`` is the same argument under the name transformers 5 uses.
        use_cache : bool, default False
            Return every layer's keys and values in the output (``cache`` in transformers 5,
            ``past_key_values`` before; :func:`output_cache` reads either). Padded prompts are refused:
            a continuation would number a short row's new tokens after its padding.
        **kwargs
            Ignored generation keywords; ``inputs_embeds`` is not supported.

        Returns
        -------
        transformers.modeling_outputs.CausalLMOutputWithPast
            ``logits`` of shape (batch, spliced seq, vocab), ``loss`` when ``labels`` is given and the
            cache when ``use_cache`` is set (read it with :func:`output_cache`).
        """
        if kwargs.get("inputs_embeds") is not None:
            raise ValueError("inputs_embeds is not supported; pass input_ids (and images)")
        if input_ids is None:
            raise ValueError("input_ids is required")
        if cache is not None:
            if past_key_values is not None:
                raise ValueError("pass the cache as cache= or past_key_values=, not both")
            past_key_values = cache
        if past_key_values is None:
            embeds, modality, mask, labels = self.build_inputs(input_ids, attention_mask, images, labels)
            if use_cache and not bool(mask.all()):
                raise ValueError("use_cache=True needs prompts without padding: a right-padded row's next token "
                                 "would be numbered after its padding; give rows of one length (or decode them "
                                 "separately)")
        else:
            embeds, modality, mask = self._continuation(input_ids, attention_mask, images, labels, past_key_values)
        hidden, presents = self.model.decode(embeds, modality, mask, past_key_values)
        logits = self.lm_head(hidden)
        loss = None
        if labels is not None:
            loss = F.cross_entropy(logits[:, :-1].reshape(-1, logits.shape[-1]).float(),
                                   labels[:, 1:].reshape(-1), ignore_index=IGNORE_INDEX)
        return CausalLMOutputWithPast(loss=loss, logits=logits, **{_CACHE_FIELD: presents if use_cache else None})

    def _continuation(self, input_ids: torch.Tensor, attention_mask: torch.Tensor | None, images: Any, labels: Any,
                      past: tuple) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """Embeddings, modality and mask of text tokens that follow cached positions."""
        n_layers = len(self.model.layers)
        attn = self.model.layers[0].self_attn
        junk = (f"past_key_values must be the ({n_layers} layers of) keys and values returned by a call with "
                "use_cache=True")
        if (not isinstance(past, (tuple, list)) or len(past) != n_layers
                or not all(isinstance(kv, (tuple, list)) and len(kv) == 2
                           and all(isinstance(x, torch.Tensor) and x.ndim == 4 for x in kv) for kv in past)):
            raise ValueError(junk)
        b, _, seen, _ = past[0][0].shape
        want, dtype = (b, attn.num_kv, seen, attn.head_dim), self.model.embed_tokens.weight.dtype
        for kv in past:
            for x in kv:
                if tuple(x.shape) != want or x.dtype != dtype:
                    raise ValueError(f"{junk}: every key and value of shape {want} and dtype {dtype}, got "
                                     f"{tuple(x.shape)} {x.dtype}")
        if images is not None or labels is not None:
            raise ValueError("with past_key_values, pass only the new text tokens: the image is already cached "
                             "and no loss is taken")
        if not isinstance(input_ids, torch.Tensor) or input_ids.ndim != 2 or input_ids.shape[0] != b \
                or input_ids.shape[1] == 0:
            shape = tuple(input_ids.shape) if isinstance(input_ids, torch.Tensor) else type(input_ids).__name__
            raise ValueError(f"input_ids must be (batch={b}, new tokens >= 1), got {shape}")
        total = seen + input_ids.shape[1]
        if attention_mask is None:
            attention_mask = torch.ones(b, total, dtype=torch.long, device=input_ids.device)
        elif tuple(attention_mask.shape) != (b, total):
            raise ValueError(f"with past_key_values, attention_mask spans past and new tokens: ({b}, {total}), "
                             f"got {tuple(attention_mask.shape)}")
        elif not bool((attention_mask == 1).all()):
            raise ValueError("with past_key_values, attention_mask must be all ones: the cache holds no padding, "
                             "and padding among the new tokens would enter the cache")
        embeds, modality, _, _ = self.build_inputs(input_ids)
        return embeds, modality, attention_mask

    @classmethod
    def from_pretrained(  # type: ignore[override]  # same call, offline by default
            cls, pretrained_model_name_or_path: str | os.PathLike[str], *args: Any, local_files_only: bool = True,
            **kwargs: Any) -> WMarkGPTForCausalLM:
        """Load a saved model folder (e.g. the released WMarkGPT-Synthetic/-Real) offline by default.

        Parameters
        ----------
        pretrained_model_name_or_path : str or path
            A folder with ``config.json`` and weights (``model.safetensors``, ``pytorch_model.bin`` or
            their sharded ``*.index.json``).
        *args, **kwargs
            Passed to ``PreTrainedModel.from_pretrained`` (``torch_dtype``, ...).
        local_files_only : bool, default True
            Never contact a model hub unless set to False.

        Returns
        -------
        WMarkGPTForCausalLM
            The model in eval mode.

        Raises
        ------
        FileNotFoundError
            When the folder lacks ``config.json`` or any weight file (naming the missing file).
        ValueError
            When ``config.json`` is not an mPLUG-Owl2 config.
        """
        path = Path(pretrained_model_name_or_path)
        if local_files_only or path.exists():
            if not path.is_dir():
                raise FileNotFoundError(f"checkpoint folder {str(path)!r} does not exist")
            if not (path / "config.json").is_file():
                raise FileNotFoundError(f"checkpoint folder {str(path)!r} has no config.json")
            model_type = json.loads((path / "config.json").read_text()).get("model_type")
            if model_type != WMarkGPTConfig.model_type:
                raise ValueError(f"{path / 'config.json'} has model_type {model_type!r}; expected 'mplug_owl2'")
            if not any((path / name).is_file() for name in _WEIGHT_FILES):
                raise FileNotFoundError(f"checkpoint folder {str(path)!r} has no weights (looked for "
                                        f"{', '.join(_WEIGHT_FILES)})")
        return super().from_pretrained(pretrained_model_name_or_path, *args, local_files_only=local_files_only,
                                       **kwargs)


_CACHE_FIELD = "cache" if "cache" in CausalLMOutputWithPast.__dataclass_fields__ else "past_key_values"
# transformers 5 renamed the output's past_key_values to cache (the old name still reads, with a warning)


def output_cache(output: CausalLMOutputWithPast) -> tuple | None:
    """The keys/values a forward call with ``use_cache=True`` returned, under either transformers' name."""
    return getattr(output, _CACHE_FIELD)


def tiny_config(*, vocab_size: int, hidden_size: int = 32, num_hidden_layers: int = 2, image_size: int = 16,
                patch_size: int = 8, vision_hidden_size: int = 16, num_learnable_queries: int = 4,
                abstractor_layers: int = 1, conv_stem: Sequence[int] | None = None, aux_head: bool = False,
                **kwargs: Any) -> WMarkGPTConfig:
    """A small :class:`WMarkGPTConfig` for CPU tests and the tiny training runs.

    Parameters
    ----------
    vocab_size : int
        Tokenizer size.
    hidden_size, num_hidden_layers : int
        Decoder width and depth (4 heads; MLP width ``2 * hidden_size``).
    image_size, patch_size : int
        Square input size and ViT patch size.
    vision_hidden_size : int
        Width of the ViT and the abstractor (2 heads each).
    num_learnable_queries, abstractor_layers : int
        Abstractor queries and depth.
    conv_stem : sequence of int, optional
        Widths of a :class:`ConvStem` replacing the linear patch embedding (e.g. ``(32, 64, 64, 96)``).
    aux_head : bool, default False
        Add the auxiliary visual head (standardised visibility and box, see ``visual_aux``).
    **kwargs
        Other :class:`WMarkGPTConfig` fields (token ids, ...).

    Returns
    -------
    WMarkGPTConfig
        The configuration.
    """
    grid = image_size // patch_size
    visual = {"visual_model": {"hidden_size": vision_hidden_size, "intermediate_size": 2 * vision_hidden_size,
                               "num_hidden_layers": 2, "num_attention_heads": 2, "image_size": image_size,
                               "patch_size": patch_size, "layer_norm_eps": 1e-6,
                               **({"conv_stem": list(conv_stem)} if conv_stem else {}),
                               **({"aux_head": True} if aux_head else {})},
              "visual_abstractor": {"num_learnable_queries": num_learnable_queries, "hidden_size": vision_hidden_size,
                                    "num_hidden_layers": abstractor_layers, "num_attention_heads": 2,
                                    "intermediate_size": 2 * vision_hidden_size, "layer_norm_eps": 1e-6,
                                    "encoder_hidden_size": vision_hidden_size, "grid_size": grid}}
    return WMarkGPTConfig(visual_config=cast(dict[str, dict[str, Any]], visual), vocab_size=vocab_size,
                          hidden_size=hidden_size,
                          intermediate_size=2 * hidden_size, num_hidden_layers=num_hidden_layers,
                          num_attention_heads=4, max_position_embeddings=512, **kwargs)
