"""Looped transformers as ``transformers`` models: ``LoopedConfig`` and ``LoopedForCausalLM``.

``n_blocks`` weight-tied blocks are applied ``n_loops`` times. Per-loop conditioning (``timestep``) is
``"none"`` (a plain looped transformer), ``"tmlt"`` (timestep modulation: a sinusoid of the loop index through
an MLP gives per-loop scales and gates of both residual branches, zero-initialised so that every loop starts
as the identity) or ``"learned"`` (a learned embedding added at the start of each loop and learned per-loop
gates of both branches).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, TypeVar

import torch
import torch.nn.functional as F
from icml25_shared.validation import Interval, Options, check_param, check_params
from torch import nn
from torch.utils.checkpoint import checkpoint
from transformers import AutoConfig, AutoModel, AutoModelForCausalLM, GenerationMixin, PretrainedConfig, PreTrainedModel
from transformers import initialization as init
from transformers.cache_utils import Cache, DynamicCache
from transformers.modeling_outputs import CausalLMOutputWithPast
from transformers.utils import ModelOutput

__all__ = [
    "BLOCKS",
    "TIMESTEPS",
    "LoopedCausalLMOutput",
    "LoopedConfig",
    "LoopedForCausalLM",
    "LoopedModel",
    "LoopedModelOutput",
    "timestep_embedding",
    "tmlt_extra_parameters",
]

# transformers 5.24 renamed the cache argument and output field from past_key_values to cache (and rejects both
# at once); before, generate reads past_key_values.
_OLD_CACHE_NAME = "cache" not in CausalLMOutputWithPast.__dataclass_fields__


_Out = TypeVar("_Out", bound=ModelOutput)


def _with_old_cache_name(out: _Out) -> _Out:
    cache = getattr(out, "cache", None)
    if _OLD_CACHE_NAME and cache is not None:
        out["past_key_values"] = cache  # sets the key and the attribute generate reads
    return out


BLOCKS = ("gpt", "llama")
"""Accepted ``LoopedConfig.block`` values: GPT-2 style blocks or Llama decoder layers."""
TIMESTEPS = ("none", "tmlt", "learned")
"""Accepted ``LoopedConfig.timestep`` values: no per-loop conditioning, TMLT modulation, learned loop embeddings."""


#: Architecture fields of other model families that this model does not implement: passing one raises.
_FOREIGN_FIELDS = ("num_hidden_layers", "hidden_act", "attention_dropout", "rope_scaling", "rope_parameters",
                   "rope_type", "partial_rotary_factor", "sliding_window", "use_sliding_window", "max_window_layers",
                   "layer_types", "pretraining_tp", "n_layer", "n_head", "n_embd", "n_positions", "n_inner",
                   "activation_function", "resid_pdrop", "embd_pdrop", "attn_pdrop", "hidden_dropout_prob",
                   "attention_probs_dropout_prob", "num_layers", "qk_layernorm", "use_qk_norm")


def _reject_foreign_fields(kwargs: dict[str, Any]) -> None:
    foreign = sorted(set(kwargs) & set(_FOREIGN_FIELDS))
    if foreign:
        raise ValueError(f"LoopedConfig does not implement {', '.join(foreign)}: a looped model has n_blocks "
                         "blocks applied n_loops times, rotary positions without scaling, no dropout and a fixed "
                         "activation per block; start from LoopedConfig.from_pretrained_config(config, n_loops=...) "
                         "for a Llama or Qwen2 configuration")


class LoopedConfig(PretrainedConfig):
    """Configuration of a looped transformer (keyword-only, validated on creation).

    Every attribute below is also a keyword argument of the constructor (the fields of a transformers
    configuration); other keywords go to ``transformers.PretrainedConfig``.

    Attributes
    ----------
    vocab_size : int, default 64
        Number of token ids.
    hidden_size : int, default 64
        Width ``d`` of the residual stream.
    num_attention_heads : int, default 4
        Attention heads; must divide ``hidden_size`` unless ``head_dim`` is given.
    num_key_value_heads : int, optional
        Key/value heads of grouped-query attention (default ``num_attention_heads``: full multi-head
        attention); must divide ``num_attention_heads``.
    head_dim : int, optional
        Width of one head (default ``hidden_size // num_attention_heads``); queries have
        ``num_attention_heads * head_dim`` features, as in ``LlamaAttention``.
    attention_bias : bool, optional
        Biases of the query, key and value projections (default: True for ``"gpt"``, False for ``"llama"``).
    attention_output_bias : bool, optional
        Bias of the output projection (default ``attention_bias``; Qwen2 has biased q/k/v and an unbiased
        output).
    mlp_bias : bool, optional
        Biases of the MLP projections (default: True for ``"gpt"``, False for ``"llama"``).
    intermediate_size : int, optional
        Hidden width of the MLP (default ``4 * hidden_size``).
    n_blocks : int, default 1
        Distinct blocks ``k`` applied in order inside one loop.
    n_loops : int, default 4
        Loops ``r`` of a call that does not pass ``n_loops``.
    block : {"gpt", "llama"}, default "gpt"
        ``"gpt"``: learned positions, attention and MLP biases, tanh-GELU MLP, LayerNorm before the head.
        ``"llama"``: rotary positions, no biases, SwiGLU MLP, RMSNorm before the head (mirrors
        ``LlamaDecoderLayer``).
    timestep : {"none", "tmlt", "learned"}, default "none"
        Per-loop conditioning (see the module docstring).
    input_injection : bool, default False
        Start from a zero state and add the input embedding before every loop (Yang et al., 2024).
    max_position_embeddings : int, default 256
        Longest sequence (prompt plus cache) a forward accepts.
    timestep_dim : int, default 256
        Width of the sinusoidal loop-index encoding (``"tmlt"``).
    max_period : float, default 10000.0
        Longest period of that encoding.
    shift : bool, default False
        ``"tmlt"`` only: add shift terms to the modulation (``x * (1 + beta) + shift``).
    max_loops : int, default 64
        ``"learned"`` only: number of per-loop embeddings and gates (the largest ``n_loops`` accepted).
    value_from_unnormed : bool, default False
        Reproduce the attention of the ``tmlt`` repository's ``LoopedGPT``: values from the un-normalised
        state and an MLP without pre-norm (``timestep="none"`` only).
    loss_loops : int, default 1
        Loops at the end of the loop stack whose losses are averaged when ``labels`` are given.
    checkpoint_loops : bool, default False
        Recompute each loop in backward instead of storing its activations (training only).
    rms_norm_eps : float, default 1e-6
        Epsilon of the RMS norms.
    layer_norm_eps : float, default 1e-5
        Epsilon of the final LayerNorm of ``"gpt"`` blocks.
    rope_theta : float, default 10000.0
        Base of the rotary frequencies (``"llama"``).
    initializer_range : float, default 0.02
        Standard deviation of the normal initialisation of linear and embedding weights.
    """

    model_type = "looped"

    vocab_size: int = 64
    hidden_size: int = 64
    num_attention_heads: int = 4
    num_key_value_heads: int | None = None
    head_dim: int | None = None
    attention_bias: bool | None = None
    attention_output_bias: bool | None = None
    mlp_bias: bool | None = None
    intermediate_size: int | None = None
    n_blocks: int = 1
    n_loops: int = 4
    block: str = "gpt"
    timestep: str = "none"
    input_injection: bool = False
    max_position_embeddings: int = 256
    timestep_dim: int = 256
    max_period: float = 10000.0
    shift: bool = False
    max_loops: int = 64
    value_from_unnormed: bool = False
    loss_loops: int = 1
    checkpoint_loops: bool = False
    rms_norm_eps: float = 1e-6
    layer_norm_eps: float = 1e-5
    rope_theta: float = 10000.0
    initializer_range: float = 0.02
    tie_word_embeddings: bool = False
    use_cache: bool = True

    def __post_init__(self, **kwargs: Any) -> None:
        _reject_foreign_fields(kwargs)
        if self.intermediate_size is None:
            self.intermediate_size = 4 * self.hidden_size
        if self.num_key_value_heads is None:
            self.num_key_value_heads = self.num_attention_heads
        if self.attention_bias is None:
            self.attention_bias = self.block == "gpt"
        if self.attention_output_bias is None:
            self.attention_output_bias = self.attention_bias
        if self.mlp_bias is None:
            self.mlp_bias = self.block == "gpt"
        self.validate_looped()
        super().__post_init__(**kwargs)

    @property
    def head_width(self) -> int:
        """Width of one attention head: ``head_dim`` when set, else ``hidden_size // num_attention_heads``."""
        return self.head_dim if self.head_dim is not None else self.hidden_size // self.num_attention_heads

    @classmethod
    def from_pretrained_config(cls, config: PretrainedConfig, *, n_loops: int, n_blocks: int | None = None,
                               **overrides: Any) -> LoopedConfig:
        """A llama-block looped configuration with the architecture of a ``LlamaConfig`` or ``Qwen2Config``.

        The width, heads (grouped-query), head width, biases, MLP width, vocabulary, positions, norm epsilon,
        rotary base and tied embeddings are copied; ``n_blocks`` distinct blocks (default: the source's
        ``num_hidden_layers``) are applied ``n_loops`` times. Fields this model does not implement raise
        instead of being dropped: rotary scaling other than ``"default"``, sliding-window attention, an
        activation other than SiLU, attention dropout, ``pretraining_tp > 1``.

        Parameters
        ----------
        config : LlamaConfig or Qwen2Config
            The source configuration (``model_type`` ``"llama"`` or ``"qwen2"``).
        n_loops : int
            Loops ``r``.
        n_blocks : int, optional
            Distinct blocks ``k`` (default ``config.num_hidden_layers``).
        **overrides
            Other :class:`LoopedConfig` fields (e.g. ``timestep="tmlt"``).

        Returns
        -------
        LoopedConfig
            ``block="llama"`` with the copied fields.

        Raises
        ------
        TypeError
            When ``config`` is not a transformers configuration.
        ValueError
            When its ``model_type`` is not supported or it sets a field this model does not implement.

        Examples
        --------
        >>> from transformers import Qwen2Config
        >>> src = Qwen2Config(vocab_size=32, hidden_size=64, intermediate_size=96, num_hidden_layers=2,
        ...                   num_attention_heads=4, num_key_value_heads=2)
        >>> cfg = LoopedConfig.from_pretrained_config(src, n_loops=3)
        >>> (cfg.n_blocks, cfg.num_key_value_heads, cfg.attention_bias, cfg.attention_output_bias)
        (2, 2, True, False)
        """
        if not isinstance(config, PretrainedConfig):
            raise TypeError(f"LoopedConfig.from_pretrained_config: config must be a transformers configuration "
                            f"(LlamaConfig or Qwen2Config); got {type(config).__name__}")
        kind = getattr(config, "model_type", None)
        if kind not in ("llama", "qwen2"):
            raise ValueError(f"LoopedConfig.from_pretrained_config: config must be a LlamaConfig or Qwen2Config; "
                             f"got model_type {kind!r}")
        rope = dict(getattr(config, "rope_parameters", None) or {})
        problems = []
        if rope.get("rope_type", "default") != "default":
            problems.append(f"rope_type={rope['rope_type']!r} (only 'default' rotary positions)")
        if getattr(config, "use_sliding_window", False) or any(t != "full_attention"
                                                               for t in getattr(config, "layer_types", None) or []):
            problems.append("sliding-window attention")
        if getattr(config, "hidden_act", "silu") != "silu":
            problems.append(f"hidden_act={config.hidden_act!r} (SwiGLU with SiLU only)")
        if getattr(config, "attention_dropout", 0.0):
            problems.append(f"attention_dropout={config.attention_dropout} (no dropout)")
        if (getattr(config, "pretraining_tp", 1) or 1) > 1:
            problems.append(f"pretraining_tp={config.pretraining_tp}")
        if problems:
            raise ValueError(f"LoopedConfig.from_pretrained_config: the {kind} configuration sets what this model "
                             f"does not implement: {'; '.join(problems)}")
        qwen = kind == "qwen2"
        fields: dict[str, Any] = {
            "block": "llama", "vocab_size": config.vocab_size, "hidden_size": config.hidden_size,
            "num_attention_heads": config.num_attention_heads, "num_key_value_heads": config.num_key_value_heads,
            "head_dim": getattr(config, "head_dim", None) or config.hidden_size // config.num_attention_heads,
            "intermediate_size": config.intermediate_size,
            "attention_bias": True if qwen else bool(config.attention_bias),
            "attention_output_bias": False if qwen else bool(config.attention_bias),
            "mlp_bias": False if qwen else bool(config.mlp_bias),
            "max_position_embeddings": config.max_position_embeddings, "rms_norm_eps": config.rms_norm_eps,
            "rope_theta": float(rope.get("rope_theta", 10000.0)), "initializer_range": config.initializer_range,
            "tie_word_embeddings": bool(config.tie_word_embeddings),
            "n_blocks": config.num_hidden_layers if n_blocks is None else n_blocks, "n_loops": n_loops}
        fields.update(overrides)
        return cls(**fields)

    def validate_looped(self) -> None:
        """Check the fields again (``from_pretrained(..., n_loops=...)`` sets them after construction).

        Raises
        ------
        ValueError
            When a field is out of range or two fields disagree.
        """
        positive = [Interval(int, 1, None)]
        flag = ["boolean"]
        check_params({name: getattr(self, name) for name in (
            "vocab_size", "hidden_size", "num_attention_heads", "num_key_value_heads", "intermediate_size", "n_blocks",
            "n_loops", "max_position_embeddings", "timestep_dim", "max_loops", "loss_loops")},
            dict.fromkeys(("vocab_size", "hidden_size", "num_attention_heads", "num_key_value_heads",
                           "intermediate_size", "n_blocks", "n_loops", "max_position_embeddings", "timestep_dim",
                           "max_loops", "loss_loops"), positive), owner="LoopedConfig")
        check_params({"head_dim": self.head_dim, "block": self.block, "timestep": self.timestep,
                      "attention_bias": self.attention_bias, "attention_output_bias": self.attention_output_bias,
                      "mlp_bias": self.mlp_bias, "input_injection": self.input_injection, "shift": self.shift,
                      "value_from_unnormed": self.value_from_unnormed, "checkpoint_loops": self.checkpoint_loops,
                      "rms_norm_eps": self.rms_norm_eps, "layer_norm_eps": self.layer_norm_eps,
                      "rope_theta": self.rope_theta, "max_period": self.max_period,
                      "initializer_range": self.initializer_range},
                     {"head_dim": [None, Interval(int, 1, None)], "block": [Options(str, set(BLOCKS))],
                      "timestep": [Options(str, set(TIMESTEPS))], "attention_bias": [None, *flag],
                      "attention_output_bias": [None, *flag], "mlp_bias": [None, *flag], "input_injection": flag,
                      "shift": flag, "value_from_unnormed": flag, "checkpoint_loops": flag,
                      "rms_norm_eps": [Interval(float, 0, None, closed="neither")],
                      "layer_norm_eps": [Interval(float, 0, None, closed="neither")],
                      "rope_theta": [Interval(float, 0, None, closed="neither")],
                      "max_period": [Interval(float, 0, None, closed="neither")],
                      "initializer_range": [Interval(float, 0, None)]}, owner="LoopedConfig")
        if self.head_dim is None and self.hidden_size % self.num_attention_heads:
            raise ValueError(f"LoopedConfig: num_attention_heads={self.num_attention_heads} does not divide "
                             f"hidden_size={self.hidden_size}; set head_dim to use heads of another width")
        if self.num_attention_heads % int(self.num_key_value_heads or self.num_attention_heads):
            raise ValueError(f"LoopedConfig: num_key_value_heads={self.num_key_value_heads} does not divide "
                             f"num_attention_heads={self.num_attention_heads}")
        if self.block == "llama" and self.head_width % 2:
            raise ValueError(f"LoopedConfig: block='llama' needs an even head_dim for rotary positions; got "
                             f"{self.head_width}")
        if self.value_from_unnormed and self.timestep != "none":
            raise ValueError("value_from_unnormed reproduces the plain looped GPT; it needs timestep='none', "
                             f"got {self.timestep!r}")
        if self.shift and self.timestep != "tmlt":
            raise ValueError(f"shift applies to timestep='tmlt' only, got timestep={self.timestep!r}")
        if self.timestep == "learned" and self.n_loops > self.max_loops:
            raise ValueError(f"n_loops={self.n_loops} exceeds max_loops={self.max_loops} of timestep='learned'")
        if self.loss_loops > self.n_loops:
            raise ValueError(f"loss_loops={self.loss_loops} exceeds n_loops={self.n_loops}")


def timestep_embedding(t: torch.Tensor, dim: int = 256, max_period: float = 10000.0) -> torch.Tensor:
    """Sinusoidal encoding of loop indices, ``[cos, sin]`` halves (GLIDE/DiT form).

    Parameters
    ----------
    t : Tensor, shape (n,)
        Loop indices (may be fractional).
    dim : int, default 256
        Output width; an odd width gets a zero last column.
    max_period : float, default 10000.0
        Longest period; frequency ``i`` is ``max_period ** (-i / (dim // 2))``.

    Returns
    -------
    Tensor, shape (n, dim)
        ``cat([cos(t * f), sin(t * f)])`` in float32.

    Examples
    --------
    >>> import torch
    >>> e = timestep_embedding(torch.tensor([0.0, 3.0]), 8)
    >>> e[0].tolist()
    [1.0, 1.0, 1.0, 1.0, 0.0, 0.0, 0.0, 0.0]
    """
    half = dim // 2
    freqs = torch.exp(-math.log(max_period) * torch.arange(half, dtype=torch.float32, device=t.device) / half)
    args = t[:, None].float() * freqs[None]
    emb = torch.cat([torch.cos(args), torch.sin(args)], dim=-1)
    if dim % 2:
        emb = torch.cat([emb, torch.zeros_like(emb[:, :1])], dim=-1)
    return emb


def tmlt_extra_parameters(hidden_size: int, n_blocks: int = 1, *, timestep_dim: int = 256,
                          shift: bool = False) -> int:
    """Parameters ``timestep="tmlt"`` adds to ``timestep="none"`` (same other settings).

    The timestep MLP ``Linear(timestep_dim, d) -> SiLU -> Linear(d, d)`` plus one ``Linear(d, 4d)``
    (``6d`` with ``shift``) per block, minus the two affine norm weights per block that the modulated
    blocks do not have.

    Parameters
    ----------
    hidden_size : int
        Width ``d``.
    n_blocks : int, default 1
        Blocks ``k``.
    timestep_dim : int, default 256
        Width of the sinusoid.
    shift : bool, default False
        Whether the modulation has shift terms.

    Returns
    -------
    int
        ``timestep_dim*d + d + d*d + d + k*(m*d*d + m*d) - 2*k*d`` with ``m = 4`` (6 with shift).

    Examples
    --------
    >>> tmlt_extra_parameters(32)
    13440
    """
    d, m = hidden_size, 6 if shift else 4
    return timestep_dim * d + d + d * d + d + n_blocks * (m * d * d + m * d) - 2 * n_blocks * d


class RMSNorm(nn.Module):
    """RMS norm computed in float32 as ``LlamaRMSNorm``; ``affine=False`` has no weight."""

    def __init__(self, dim: int, eps: float, affine: bool = True) -> None:
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim)) if affine else None

    def forward(self, x: torch.Tensor) -> torch.Tensor:  # noqa: D102
        dtype = x.dtype
        h = x.to(torch.float32)
        h = h * torch.rsqrt(h.pow(2).mean(-1, keepdim=True) + self.eps)
        return h.to(dtype) if self.weight is None else self.weight * h.to(dtype)


def _rotate_half(x: torch.Tensor) -> torch.Tensor:
    x1, x2 = x[..., : x.shape[-1] // 2], x[..., x.shape[-1] // 2:]
    return torch.cat((-x2, x1), dim=-1)


def _rope(position_ids: torch.Tensor, head_dim: int, theta: float, dtype: torch.dtype) -> tuple[torch.Tensor, ...]:
    inv_freq = 1.0 / (theta ** (torch.arange(0, head_dim, 2, dtype=torch.int64, device=position_ids.device)
                                .float() / head_dim))
    freqs = position_ids[..., None].float() * inv_freq
    emb = torch.cat((freqs, freqs), dim=-1)
    return emb.cos().to(dtype)[:, None], emb.sin().to(dtype)[:, None]


class LoopedAttention(nn.Module):
    """Causal self-attention with grouped-query heads (queries/keys and values may come from different inputs)."""

    def __init__(self, config: LoopedConfig) -> None:
        super().__init__()
        d, bias, out_bias = config.hidden_size, bool(config.attention_bias), bool(config.attention_output_bias)
        self.n_heads, self.head_dim = config.num_attention_heads, config.head_width
        self.n_kv_heads = int(config.num_key_value_heads or config.num_attention_heads)
        self.rope_theta = config.rope_theta if config.block == "llama" else None
        self.q_proj = nn.Linear(d, self.n_heads * self.head_dim, bias=bias)
        self.k_proj = nn.Linear(d, self.n_kv_heads * self.head_dim, bias=bias)
        self.v_proj = nn.Linear(d, self.n_kv_heads * self.head_dim, bias=bias)
        self.o_proj = nn.Linear(self.n_heads * self.head_dim, d, bias=out_bias)

    def forward(self, x: torch.Tensor, x_value: torch.Tensor, mask: torch.Tensor | None,
                rope: tuple[torch.Tensor, ...] | None, cache: Cache | None, layer_idx: int) -> torch.Tensor:  # noqa: D102
        b, s, _ = x.shape
        q = self.q_proj(x).view(b, s, self.n_heads, self.head_dim).transpose(1, 2)
        k = self.k_proj(x).view(b, s, self.n_kv_heads, self.head_dim).transpose(1, 2)
        v = self.v_proj(x_value).view(b, s, self.n_kv_heads, self.head_dim).transpose(1, 2)
        if rope is not None:
            cos, sin = rope
            q, k = q * cos + _rotate_half(q) * sin, k * cos + _rotate_half(k) * sin
        if cache is not None:
            k, v = cache.update(k, v, layer_idx)
        if self.n_kv_heads != self.n_heads:  # grouped-query: each key/value head serves a group of query heads
            k = k.repeat_interleave(self.n_heads // self.n_kv_heads, dim=1)
            v = v.repeat_interleave(self.n_heads // self.n_kv_heads, dim=1)
        out = F.scaled_dot_product_attention(q, k, v, attn_mask=mask, is_causal=mask is None and s > 1)
        return self.o_proj(out.transpose(1, 2).reshape(b, s, -1))


class LoopedMLP(nn.Module):
    """tanh-GELU MLP (``"gpt"``) or SwiGLU (``"llama"``, as ``LlamaMLP``)."""

    def __init__(self, config: LoopedConfig) -> None:
        super().__init__()
        d, gpt, bias = config.hidden_size, config.block == "gpt", bool(config.mlp_bias)
        m = int(config.intermediate_size or 4 * d)
        self.gate_proj = None if gpt else nn.Linear(d, m, bias=bias)
        self.up_proj, self.down_proj = nn.Linear(d, m, bias=bias), nn.Linear(m, d, bias=bias)

    def forward(self, x: torch.Tensor) -> torch.Tensor:  # noqa: D102
        if self.gate_proj is None:
            return self.down_proj(F.gelu(self.up_proj(x), approximate="tanh"))
        return self.down_proj(F.silu(self.gate_proj(x)) * self.up_proj(x))


class LoopedBlock(nn.Module):
    """One pre-norm block; with ``timestep="tmlt"`` its norms have no weights and it owns a modulation layer."""

    def __init__(self, config: LoopedConfig) -> None:
        super().__init__()
        affine = config.timestep != "tmlt"
        self.quirk = config.value_from_unnormed
        self.input_layernorm = RMSNorm(config.hidden_size, config.rms_norm_eps, affine)
        self.self_attn = LoopedAttention(config)
        self.post_attention_layernorm = None if self.quirk else RMSNorm(config.hidden_size, config.rms_norm_eps,
                                                                         affine)
        self.mlp = LoopedMLP(config)
        self.modulation: nn.Linear | None = None
        if config.timestep == "tmlt":
            self.modulation = nn.Linear(config.hidden_size, (6 if config.shift else 4) * config.hidden_size)
            self.modulation._looped_zero_init = True  # type: ignore[assignment]  # a marker read by _init_weights

    def forward(self, x: torch.Tensor, cond: torch.Tensor | None, gates: torch.Tensor | None,
                mask: torch.Tensor | None, rope: tuple[torch.Tensor, ...] | None, cache: Cache | None,
                layer_idx: int) -> torch.Tensor:  # noqa: D102
        if self.modulation is not None:
            assert cond is not None and self.post_attention_layernorm is not None  # tmlt blocks always have both
            mod = self.modulation(F.silu(cond))[:, None, :].chunk(6 if self.modulation.out_features
                                                                   == 6 * x.shape[-1] else 4, dim=-1)
            beta1, beta2, gamma1, gamma2 = mod[:4]
            shift1, shift2 = mod[4:] if len(mod) == 6 else (0.0, 0.0)
            h = self.input_layernorm(x) * (1 + beta1) + shift1
            x = x + gamma1 * self.self_attn(h, h, mask, rope, cache, layer_idx)
            h = self.post_attention_layernorm(x) * (1 + beta2) + shift2
            return x + gamma2 * self.mlp(h)
        h = self.input_layernorm(x)
        a = self.self_attn(h, x if self.quirk else h, mask, rope, cache, layer_idx)
        x = x + (a if gates is None else gates[0] * a)
        norm = self.post_attention_layernorm
        m = self.mlp(x if norm is None else norm(x))
        return x + (m if gates is None else gates[1] * m)


def _modulation_of(block: nn.Module) -> nn.Linear:
    modulation = getattr(block, "modulation", None)
    if not isinstance(modulation, nn.Linear):
        raise ValueError("timestep='tmlt' blocks carry a modulation layer; this block has none")
    return modulation


class TimestepEmbedder(nn.Module):
    """``Linear(timestep_dim, d) -> SiLU -> Linear(d, d)`` applied to :func:`timestep_embedding`."""

    def __init__(self, config: LoopedConfig) -> None:
        super().__init__()
        self.dim, self.max_period = config.timestep_dim, config.max_period
        self.mlp = nn.Sequential(nn.Linear(config.timestep_dim, config.hidden_size), nn.SiLU(),
                                 nn.Linear(config.hidden_size, config.hidden_size))

    def forward(self, t: torch.Tensor) -> torch.Tensor:  # noqa: D102
        first = self.mlp[0]
        assert isinstance(first, nn.Linear)
        return self.mlp(timestep_embedding(t, self.dim, self.max_period).to(first.weight.dtype))


@dataclass
class LoopedModelOutput(ModelOutput):
    """Output of :class:`LoopedModel`.

    Attributes
    ----------
    last_hidden_state : Tensor, shape (batch, seq, d)
        The state after the last loop, after the final norm.
    cache : transformers Cache, optional
        Keys and values of every (loop, block), layer index ``loop * n_blocks + block``.
        With transformers < 5.24 it is also returned as ``past_key_values``.
    loop_states : tuple of Tensor, optional
        The un-normalised state after each loop (``n_loops`` entries) when requested.
    """

    last_hidden_state: torch.Tensor | None = None
    cache: Cache | None = None
    loop_states: tuple[torch.Tensor, ...] | None = None


@dataclass
class LoopedCausalLMOutput(ModelOutput):
    """Output of :class:`LoopedForCausalLM`.

    Attributes
    ----------
    loss : Tensor, optional
        Next-token cross-entropy averaged over the last ``loss_loops`` loops (when ``labels`` are given).
    logits : Tensor, shape (batch, seq, vocab)
        Logits after the last loop.
    cache : transformers Cache, optional
        The key/value cache (one layer per loop and block).
        With transformers < 5.24 it is also returned as ``past_key_values``.
    loop_states : tuple of Tensor, optional
        The state after each loop (``output_loop_states=True``).
    loop_logits : tuple of Tensor, optional
        ``lm_head(norm(state))`` after each loop, the per-loop logit lens (``output_loop_states=True``).
    """

    loss: torch.Tensor | None = None
    logits: torch.Tensor | None = None
    cache: Cache | None = None
    loop_states: tuple[torch.Tensor, ...] | None = None
    loop_logits: tuple[torch.Tensor, ...] | None = None


class LoopedPreTrainedModel(PreTrainedModel):
    """Weight initialisation and loading shared by the looped models."""

    config_class = LoopedConfig
    base_model_prefix = "model"
    _no_split_modules = ["LoopedBlock"]
    supports_gradient_checkpointing = False

    @torch.no_grad()
    def _init_weights(self, module: nn.Module) -> None:
        std = self.config.initializer_range
        if isinstance(module, nn.Linear) and getattr(module, "_looped_zero_init", False):
            init.zeros_(module.weight)
            if module.bias is not None:
                init.zeros_(module.bias)
        elif isinstance(module, nn.Linear):
            init.normal_(module.weight, mean=0.0, std=std)
            if module.bias is not None:
                init.zeros_(module.bias)
        elif isinstance(module, nn.Embedding):
            init.normal_(module.weight, mean=0.0, std=std)
        elif isinstance(module, (RMSNorm, nn.LayerNorm)):
            if module.weight is not None:
                init.ones_(module.weight)
            if isinstance(module, nn.LayerNorm) and module.bias is not None:
                init.zeros_(module.bias)
        elif isinstance(module, LoopedModel) and module.loop_gates is not None and module.loop_embed is not None:
            init.ones_(module.loop_gates)
            init.zeros_(module.loop_embed.weight)


class LoopedModel(LoopedPreTrainedModel):
    """The looped trunk: embeddings, ``n_blocks`` blocks applied ``n_loops`` times, final norm.

    Parameters
    ----------
    config : LoopedConfig
        The architecture.
    """

    def __init__(self, config: LoopedConfig) -> None:
        config.validate_looped()
        super().__init__(config)
        d = config.hidden_size
        self.embed_tokens = nn.Embedding(config.vocab_size, d)
        self.embed_positions = nn.Embedding(config.max_position_embeddings, d) if config.block == "gpt" else None
        self.layers = nn.ModuleList(LoopedBlock(config) for _ in range(config.n_blocks))
        self.timestep_embedder = TimestepEmbedder(config) if config.timestep == "tmlt" else None
        self.loop_embed = nn.Embedding(config.max_loops, d) if config.timestep == "learned" else None
        self.loop_gates = (nn.Parameter(torch.ones(config.max_loops, config.n_blocks, 2, d))
                           if config.timestep == "learned" else None)
        self.norm = (nn.LayerNorm(d, eps=config.layer_norm_eps) if config.block == "gpt"
                     else RMSNorm(d, config.rms_norm_eps))
        self.post_init()

    def get_input_embeddings(self) -> nn.Embedding:  # noqa: D102
        return self.embed_tokens

    def set_input_embeddings(self, value: nn.Module) -> None:  # noqa: D102
        if not isinstance(value, nn.Embedding):
            raise TypeError(f"set_input_embeddings: value must be an nn.Embedding; got {type(value).__name__}")
        self.embed_tokens = value

    def resolve_loops(self, n_loops: int | None) -> int:
        """The loop count of a call: ``n_loops`` when given (validated), else the config's.

        Parameters
        ----------
        n_loops : int or None
            The requested loops.

        Returns
        -------
        int
            Loops to run.
        """
        r = self.config.n_loops if n_loops is None else n_loops
        check_param("n_loops", r, [Interval(int, 1, None)], owner=type(self).__name__)
        r = int(r)
        if self.loop_embed is not None and r > self.config.max_loops:
            raise ValueError(f"n_loops={r} exceeds max_loops={self.config.max_loops} of timestep='learned'")
        return r

    @torch.no_grad()
    def loop_modulation(self, n_loops: int | None = None) -> torch.Tensor:
        """Per-loop scales and gates, for inspection.

        Parameters
        ----------
        n_loops : int, optional
            Loops to tabulate (default ``config.n_loops``).

        Returns
        -------
        Tensor
            ``"tmlt"``: shape ``(n_loops, n_blocks, m, d)`` with rows ``beta1, beta2, gamma1, gamma2`` (then
            ``shift1, shift2`` when ``shift``); ``"learned"``: the gates, shape ``(n_loops, n_blocks, 2, d)``.

        Raises
        ------
        ValueError
            When ``timestep="none"`` (nothing depends on the loop).
        """
        r = self.resolve_loops(n_loops)
        if self.loop_gates is not None:
            return self.loop_gates[:r].detach().clone()
        if self.timestep_embedder is None:
            raise ValueError("timestep='none' has no per-loop modulation")
        cond = self.timestep_embedder(torch.arange(r, dtype=torch.float32, device=self.embed_tokens.weight.device))
        rows = [_modulation_of(blk)(F.silu(cond)).view(r, -1, self.config.hidden_size) for blk in self.layers]
        return torch.stack(rows, dim=1)

    def _check_device(self, tensor: torch.Tensor, name: str) -> None:
        device = self.embed_tokens.weight.device
        if tensor.device != device:
            raise ValueError(f"{type(self).__name__}: {name} is on {tensor.device} but the model is on {device}; "
                             f"move it with {name}.to(model.device)")

    def embed(self, input_ids: torch.Tensor | None = None, inputs_embeds: torch.Tensor | None = None,
              position_ids: torch.Tensor | None = None, past_length: int = 0) -> tuple[torch.Tensor, torch.Tensor]:
        """Token (or given) embeddings plus learned positions, and the position ids.

        Parameters
        ----------
        input_ids : LongTensor, shape (batch, seq), optional
            Token ids (exactly one of ``input_ids`` and ``inputs_embeds``).
        inputs_embeds : Tensor, shape (batch, seq, d), optional
            Embeddings used instead of the token table.
        position_ids : LongTensor, shape (batch, seq), optional
            Positions (default ``past_length + arange(seq)``).
        past_length : int, default 0
            Tokens already in the cache.

        Returns
        -------
        tuple of Tensor
            The embeddings ``(batch, seq, d)`` and the position ids ``(batch, seq)``.
        """
        if (input_ids is None) == (inputs_embeds is None):
            raise ValueError("pass exactly one of input_ids and inputs_embeds")
        if input_ids is not None:
            if not isinstance(input_ids, torch.Tensor) or input_ids.is_floating_point() or input_ids.is_complex() \
                    or input_ids.dtype == torch.bool:
                shown = str(input_ids.dtype) if isinstance(input_ids, torch.Tensor) else type(input_ids).__name__
                raise TypeError(f"{type(self).__name__}: input_ids must be an integer tensor of token ids; got {shown}")
            if input_ids.dim() != 2:
                raise ValueError(f"{type(self).__name__}: input_ids must have shape (batch, seq); got "
                                 f"{tuple(input_ids.shape)}")
            self._check_device(input_ids, "input_ids")
            if input_ids.numel() and (int(input_ids.min()) < 0 or int(input_ids.max()) >= self.config.vocab_size):
                raise ValueError(f"token ids must lie in [0, {self.config.vocab_size}), got range "
                                 f"[{int(input_ids.min())}, {int(input_ids.max())}]")
            inputs_embeds = self.embed_tokens(input_ids)
        elif not isinstance(inputs_embeds, torch.Tensor) or not inputs_embeds.is_floating_point():
            shown = str(inputs_embeds.dtype) if isinstance(inputs_embeds, torch.Tensor) else type(inputs_embeds).__name__
            raise TypeError(f"{type(self).__name__}: inputs_embeds must be a floating-point tensor; got {shown}")
        elif inputs_embeds.dim() != 3 or inputs_embeds.shape[-1] != self.config.hidden_size:
            raise ValueError(f"{type(self).__name__}: inputs_embeds must have shape (batch, seq, "
                             f"{self.config.hidden_size}); got {tuple(inputs_embeds.shape)}")
        else:
            self._check_device(inputs_embeds, "inputs_embeds")
        b, s = inputs_embeds.shape[:2]
        if past_length + s > self.config.max_position_embeddings:
            raise ValueError(f"sequence of {past_length + s} positions (cache {past_length} + input {s}) exceeds "
                             f"max_position_embeddings={self.config.max_position_embeddings}")
        if position_ids is not None and tuple(position_ids.shape) not in ((b, s), (1, s)):
            raise ValueError(f"{type(self).__name__}: position_ids must have shape (batch, seq) = {(b, s)}; got "
                             f"{tuple(position_ids.shape)}")
        if position_ids is None:
            position_ids = torch.arange(past_length, past_length + s, device=inputs_embeds.device).expand(b, s)
        if self.embed_positions is not None:
            inputs_embeds = inputs_embeds + self.embed_positions(position_ids)
        return inputs_embeds, position_ids

    def forward(self, input_ids: torch.Tensor | None = None, attention_mask: torch.Tensor | None = None,
                position_ids: torch.Tensor | None = None, cache: Cache | None = None,
                inputs_embeds: torch.Tensor | None = None, use_cache: bool | None = None,
                n_loops: int | None = None, output_loop_states: bool = False,
                checkpoint_loops: bool | None = None, past_key_values: Cache | None = None,
                **kwargs: Any) -> LoopedModelOutput:
        """Run the loops.

        Parameters
        ----------
        input_ids : LongTensor, shape (batch, seq), optional
            Token ids.
        attention_mask : Tensor, shape (batch, past + seq), optional
            1 for tokens to attend to, 0 for padding.
        position_ids : LongTensor, shape (batch, seq), optional
            Positions (default: after the cached tokens).
        cache : transformers Cache, optional
            Keys and values from earlier calls with the same ``n_loops``.
        inputs_embeds : Tensor, shape (batch, seq, d), optional
            Embeddings instead of ``input_ids`` (e.g. a linear read-in).
        use_cache : bool, optional
            Return a cache (default ``config.use_cache``; off while training).
        n_loops : int, optional
            Loops of this call (default ``config.n_loops``).
        output_loop_states : bool, default False
            Also return the state after every loop.
        checkpoint_loops : bool, optional
            Recompute loops in backward (default ``config.checkpoint_loops``; only when gradients are on and
            no cache is used).
        past_key_values : transformers Cache, optional
            ``cache`` under the name transformers < 5.24 passes.
        **kwargs
            Ignored (keys ``generate`` passes).

        Returns
        -------
        LoopedModelOutput
            The normalised last state, the cache and the per-loop states.
        """
        r = self.resolve_loops(n_loops)
        cache = cache if cache is not None else past_key_values  # the name transformers < 5.24 uses
        use_cache = (self.config.use_cache and not self.training) if use_cache is None else use_cache
        if use_cache and cache is None:
            cache = DynamicCache()
        past = cache.get_seq_length() if cache is not None else 0
        n_layers = r * self.config.n_blocks
        if past and cache is not None and len(cache.layers) != n_layers:
            raise ValueError(f"the cache holds {len(cache.layers)} layers (loops x blocks) but this call runs "
                             f"{r} loops x {self.config.n_blocks} blocks = {n_layers}; use the same n_loops")
        e, position_ids = self.embed(input_ids, inputs_embeds, position_ids, past)
        s = e.shape[1]
        if attention_mask is not None and (attention_mask.dim() != 2 or attention_mask.shape[0] != e.shape[0]
                                           or attention_mask.shape[1] < past + s):
            raise ValueError(f"{type(self).__name__}: attention_mask must have shape (batch, cache + seq) = "
                             f"{(e.shape[0], past + s)}; got {tuple(attention_mask.shape)}")
        mask = None
        if attention_mask is not None or (past and s > 1):
            q_pos = torch.arange(past, past + s, device=e.device)
            mask = torch.arange(past + s, device=e.device)[None, :] <= q_pos[:, None]
            mask = mask[None, None]
            if attention_mask is not None:
                keep = attention_mask[:, None, None, : past + s].bool()
                diagonal = torch.arange(past + s, device=e.device)[None, :] == q_pos[:, None]
                mask = (mask & keep) | diagonal  # a padded query still attends to itself (no empty rows)
        rope = (_rope(position_ids, self.config.head_width, self.config.rope_theta, e.dtype)
                if self.config.block == "llama" else None)
        ckpt = self.config.checkpoint_loops if checkpoint_loops is None else checkpoint_loops
        ckpt = ckpt and torch.is_grad_enabled() and cache is None
        h = torch.zeros_like(e) if self.config.input_injection else e
        states = []
        for t in range(r):
            if ckpt:
                h = checkpoint(self._loop, h, e, t, mask, rope, None, use_reentrant=False)
            else:
                h = self._loop(h, e, t, mask, rope, cache)
            if output_loop_states:
                states.append(h)
        kept = cache if use_cache else None
        return _with_old_cache_name(LoopedModelOutput(last_hidden_state=self.norm(h), cache=kept,
                                                      loop_states=tuple(states) if output_loop_states else None))

    def _loop(self, h: torch.Tensor, e: torch.Tensor, t: int, mask: torch.Tensor | None,
              rope: tuple[torch.Tensor, ...] | None, cache: Cache | None) -> torch.Tensor:
        if self.config.input_injection:
            h = h + e
        cond = gates = None
        if self.timestep_embedder is not None:
            cond = self.timestep_embedder(torch.tensor([float(t)], device=h.device))
        if self.loop_embed is not None:
            h = h + self.loop_embed.weight[t]
        for j, block in enumerate(self.layers):
            if self.loop_gates is not None:
                gates = self.loop_gates[t, j]
            h = block(h, cond, gates, mask, rope, cache, t * self.config.n_blocks + j)
        return h


class LoopedForCausalLM(LoopedPreTrainedModel, GenerationMixin):
    """A looped transformer with a language-model head; supports ``generate``, ``save_pretrained`` and Trainer.

    Parameters
    ----------
    config : LoopedConfig
        The architecture.

    Examples
    --------
    >>> import torch
    >>> from looped_transformers import LoopedConfig, LoopedForCausalLM
    >>> torch.manual_seed(0)  # doctest: +ELLIPSIS
    <torch._C.Generator object at ...>
    >>> model = LoopedForCausalLM(LoopedConfig(vocab_size=16, hidden_size=32, num_attention_heads=2,
    ...                                        n_loops=4, timestep="tmlt")).eval()
    >>> ids = torch.tensor([[1, 2, 3, 4]])
    >>> out = model(ids, n_loops=8, output_loop_states=True)
    >>> out.logits.shape, len(out.loop_logits)
    (torch.Size([1, 4, 16]), 8)
    >>> bool(torch.equal(out.logits, model.lm_head(model.model.norm(model.model.embed(ids)[0]))))
    True
    """

    _tied_weights_keys = {"lm_head.weight": "model.embed_tokens.weight"}

    def __init__(self, config: LoopedConfig) -> None:
        super().__init__(config)
        self.model = LoopedModel(config)
        self.lm_head = nn.Linear(config.hidden_size, config.vocab_size, bias=False)
        self.post_init()

    def get_input_embeddings(self) -> nn.Embedding:  # noqa: D102
        return self.model.embed_tokens

    def set_input_embeddings(self, value: nn.Module) -> None:  # noqa: D102
        self.model.set_input_embeddings(value)

    def get_output_embeddings(self) -> nn.Linear:  # noqa: D102
        return self.lm_head

    def set_output_embeddings(self, value: nn.Linear) -> None:  # noqa: D102
        self.lm_head = value

    def generate(self, inputs: torch.Tensor | None = None, *args: Any, **kwargs: Any) -> Any:
        """``GenerationMixin.generate``, after checking that the requested length fits the positions.

        Parameters
        ----------
        inputs : LongTensor, shape (batch, seq), optional
            The prompt (also accepted as ``input_ids=``).
        *args, **kwargs
            As ``transformers.GenerationMixin.generate`` (``n_loops`` is passed on to every forward).

        Returns
        -------
        LongTensor or a transformers generation output
            What ``GenerationMixin.generate`` returns.

        Raises
        ------
        ValueError
            When the prompt plus ``max_new_tokens`` (or ``max_length``) exceeds ``max_position_embeddings``,
            before any token is generated.
        """
        prompt = inputs if inputs is not None else kwargs.get("input_ids")
        if isinstance(prompt, torch.Tensor) and prompt.dim() == 2:
            config = kwargs.get("generation_config")
            new = kwargs.get("max_new_tokens", getattr(config, "max_new_tokens", None))
            total = prompt.shape[1] + new if new is not None else kwargs.get("max_length",
                                                                              getattr(config, "max_length", None))
            if total is not None and total > self.config.max_position_embeddings:
                raise ValueError(f"{type(self).__name__}.generate: the prompt ({prompt.shape[1]} tokens) plus the "
                                 f"requested tokens make {total} positions, above max_position_embeddings="
                                 f"{self.config.max_position_embeddings}; lower max_new_tokens")
        return super().generate(inputs, *args, **kwargs)

    @classmethod
    def _supports_default_dynamic_cache(cls) -> bool:
        return False  # the number of cache layers depends on n_loops: forward creates the cache

    def forward(self, input_ids: torch.Tensor | None = None, attention_mask: torch.Tensor | None = None,
                position_ids: torch.Tensor | None = None, cache: Cache | None = None,
                inputs_embeds: torch.Tensor | None = None, labels: torch.Tensor | None = None,
                use_cache: bool | None = None, n_loops: int | None = None, loss_loops: int | None = None,
                output_loop_states: bool = False, checkpoint_loops: bool | None = None,
                logits_to_keep: int = 0, past_key_values: Cache | None = None,
                **kwargs: Any) -> LoopedCausalLMOutput:
        """Logits, and the loss over the last ``loss_loops`` loops when ``labels`` are given.

        Parameters
        ----------
        input_ids, attention_mask, position_ids, cache, inputs_embeds, use_cache, n_loops, checkpoint_loops
            As in :meth:`LoopedModel.forward`.
        labels : LongTensor, shape (batch, seq), optional
            Targets aligned with the inputs (shifted inside, as transformers' causal LMs); -100 is ignored.
        loss_loops : int, optional
            Average the loss of the last ``T`` loops (default ``config.loss_loops``; ``T <= n_loops``).
        output_loop_states : bool, default False
            Return every loop's state and its logit lens.
        logits_to_keep : int, default 0
            Compute logits for the last ``logits_to_keep`` positions only (0: all).
        past_key_values : transformers Cache, optional
            ``cache`` under the name transformers < 5.24 passes.
        **kwargs
            ``num_items_in_batch`` (passed by Trainer): the loss is then the sum over labelled tokens divided
            by it, as transformers' causal LMs, so gradient accumulation is exact; other keys are ignored.

        Returns
        -------
        LoopedCausalLMOutput
            Loss, logits, cache and the per-loop outputs.
        """
        r = self.model.resolve_loops(n_loops)
        big_t = None
        if labels is not None:
            big_t = self.config.loss_loops if loss_loops is None else loss_loops
            check_param("loss_loops", big_t, [Interval(int, 1, None)], owner=type(self).__name__)
            reference = input_ids if input_ids is not None else inputs_embeds
            if reference is not None and tuple(labels.shape) != tuple(reference.shape[:2]):
                raise ValueError(f"{type(self).__name__}: labels must have the shape of input_ids "
                                 f"{tuple(reference.shape[:2])}; got {tuple(labels.shape)}")
            if labels.is_floating_point():
                raise TypeError(f"{type(self).__name__}: labels must be integer token ids (-100 to ignore); got "
                                f"{labels.dtype}")
            if big_t > r:
                raise ValueError(f"loss_loops={big_t} exceeds n_loops={r}: the loss can average at most the "
                                 "loops that run")
        need_states = output_loop_states or (big_t is not None and big_t > 1)
        cache = cache if cache is not None else past_key_values
        out = self.model(input_ids=input_ids, attention_mask=attention_mask, position_ids=position_ids, cache=cache,
                         inputs_embeds=inputs_embeds, use_cache=use_cache, n_loops=r,
                         output_loop_states=need_states, checkpoint_loops=checkpoint_loops)
        keep = slice(-logits_to_keep, None) if logits_to_keep else slice(None)
        logits = self.lm_head(out.last_hidden_state[:, keep])
        loop_logits = None
        if need_states:
            loop_logits = tuple(self.lm_head(self.model.norm(h[:, keep])) for h in out.loop_states[:-1]) + (logits,)
        loss: torch.Tensor | None = None
        if labels is not None:
            assert big_t is not None
            chosen = loop_logits[r - big_t:] if loop_logits is not None and big_t > 1 else (logits,)
            target = labels[:, 1:].reshape(-1)
            items = kwargs.get("num_items_in_batch")  # Trainer with gradient accumulation: sum / items
            loss = torch.stack([F.cross_entropy(z[:, :-1].reshape(-1, z.shape[-1]).float(), target,
                                                ignore_index=-100, reduction="mean" if items is None else "sum")
                                for z in chosen]).sum() / len(chosen)
            if items is not None:
                loss = loss / (items.to(loss.device) if torch.is_tensor(items) else items)
        return _with_old_cache_name(LoopedCausalLMOutput(
            loss=loss, logits=logits, cache=out.cache, loop_states=out.loop_states if output_loop_states else None,
            loop_logits=loop_logits if output_loop_states else None))


AutoConfig.register("looped", LoopedConfig, exist_ok=True)
AutoModel.register(LoopedConfig, LoopedModel, exist_ok=True)
AutoModelForCausalLM.register(LoopedConfig, LoopedForCausalLM, exist_ok=True)
