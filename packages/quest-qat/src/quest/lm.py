"""A small Llama-type causal LM, a byte-level tokenizer and an offline text corpus.

The model follows the QuEST training code's architecture: RMSNorm (eps 1e-5), rotary position
embeddings, SwiGLU MLP, no biases, untied ``lm_head``; every linear layer inside the blocks is an
``nn.Linear`` that :func:`quest.quantize_` can swap. The corpus is the Python standard library's own
source files, which every Python installation ships (no download).
"""

from __future__ import annotations

import contextlib
import math
import sysconfig
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch
import torch.nn.functional as F
from icml25_shared.random import int_seed
from torch import nn

__all__ = ["ByteTokenizer", "TinyLlama", "TinyLlamaConfig", "hf_tiny_llama", "stdlib_corpus"]


@dataclass(frozen=True, kw_only=True)
class TinyLlamaConfig:
    """Sizes of :class:`TinyLlama`. ``hidden`` defaults to ``round_up(8 d / 3, multiple_of)``."""

    vocab_size: int = 256
    d_model: int = 128
    n_layers: int = 2
    n_heads: int = 2
    max_seq_len: int = 256
    hidden: int | None = None
    multiple_of: int = 128

    @property
    def ffn_hidden(self) -> int:
        """Width of the SwiGLU hidden layer (``hidden`` or about 8/3 ``d_model``)."""
        if self.hidden is not None:
            return self.hidden
        h = int(8 * self.d_model / 3)
        return self.multiple_of * math.ceil(h / self.multiple_of)


class RMSNorm(nn.Module):
    def __init__(self, dim: int, eps: float = 1e-5) -> None:
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps) * self.weight


def _rope(x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
    x1, x2 = x[..., 0::2], x[..., 1::2]
    return torch.stack((x1 * cos - x2 * sin, x1 * sin + x2 * cos), dim=-1).flatten(-2)


class Block(nn.Module):
    def __init__(self, cfg: TinyLlamaConfig) -> None:
        super().__init__()
        d = cfg.d_model
        self.n_heads = cfg.n_heads
        self.ln_1, self.ln_2 = RMSNorm(d), RMSNorm(d)
        self.c_attn = nn.Linear(d, 3 * d, bias=False)
        self.attn_proj = nn.Linear(d, d, bias=False)
        self.w1 = nn.Linear(d, cfg.ffn_hidden, bias=False)
        self.w2 = nn.Linear(d, cfg.ffn_hidden, bias=False)
        self.mlp_proj = nn.Linear(cfg.ffn_hidden, d, bias=False)

    def forward(self, x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
        b, t, d = x.shape
        q, k, v = self.c_attn(self.ln_1(x)).split(d, dim=-1)
        q, k, v = (z.view(b, t, self.n_heads, d // self.n_heads).transpose(1, 2) for z in (q, k, v))
        q, k = _rope(q, cos, sin), _rope(k, cos, sin)
        att = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        x = x + self.attn_proj(att.transpose(1, 2).reshape(b, t, d))
        h = self.ln_2(x)
        return x + self.mlp_proj(F.silu(self.w1(h)) * self.w2(h))


class TinyLlama(nn.Module):
    """Llama-type decoder: ``forward(idx (B, T) long) -> logits (B, T, vocab)``."""

    def __init__(self, config: TinyLlamaConfig = TinyLlamaConfig()) -> None:
        super().__init__()
        if config.d_model % config.n_heads or (config.d_model // config.n_heads) % 2:
            raise ValueError(f"d_model={config.d_model} must split into {config.n_heads} heads of even size")
        self.config = config
        self.wte = nn.Embedding(config.vocab_size, config.d_model)
        self.blocks = nn.ModuleList(Block(config) for _ in range(config.n_layers))
        self.ln_f = RMSNorm(config.d_model)
        self.lm_head = nn.Linear(config.d_model, config.vocab_size, bias=False)
        head_dim = config.d_model // config.n_heads
        inv = 1.0 / (10000 ** (torch.arange(0, head_dim, 2, dtype=torch.float32) / head_dim))
        angles = torch.outer(torch.arange(config.max_seq_len, dtype=torch.float32), inv)
        self.register_buffer("cos", angles.cos(), persistent=False)
        self.register_buffer("sin", angles.sin(), persistent=False)
        self.apply(self._init)
        for block in self.blocks:  # GPT-2 style scaled init of the residual projections
            assert isinstance(block, Block)
            for proj in (block.attn_proj, block.mlp_proj):
                nn.init.normal_(proj.weight, std=0.02 / math.sqrt(2 * config.n_layers))

    @staticmethod
    def _init(module: nn.Module) -> None:
        if isinstance(module, (nn.Linear, nn.Embedding)):
            nn.init.normal_(module.weight, std=0.02)

    cos: torch.Tensor
    sin: torch.Tensor

    def forward(self, idx: torch.Tensor) -> torch.Tensor:
        """Next-token logits (batch, time, vocab) for token ids ``idx`` (batch, time)."""
        t = idx.shape[1]
        if t > self.config.max_seq_len:
            raise ValueError(f"sequence length {t} exceeds max_seq_len={self.config.max_seq_len}")
        x = self.wte(idx)
        cos, sin = self.cos[:t].to(x.dtype), self.sin[:t].to(x.dtype)
        for block in self.blocks:
            x = block(x, cos, sin)
        return self.lm_head(self.ln_f(x))


@contextlib.contextmanager
def seeded_init(random_state: Any) -> Iterator[None]:
    """Draw what is built inside (weights, test inputs) from ``random_state``, leaving the global torch RNG alone.

    ``random_state`` is anything :func:`icml25_shared.random.int_seed` accepts.
    """
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(int_seed(random_state))
        yield


def hf_tiny_llama(*, d_model: int = 128, n_layers: int = 2, n_heads: int = 2, hidden: int = 384,
                  vocab_size: int = 256, max_seq_len: int = 256, random_state: int = 0) -> nn.Module:
    """A Hugging Face ``LlamaForCausalLM`` built from a tiny config in code (no download; needs transformers).

    Parameters
    ----------
    d_model, n_layers, n_heads, hidden, vocab_size, max_seq_len : int
        The Llama configuration.
    random_state : int, default 0
        Seeds the initial weights (in a forked RNG: the caller's global torch RNG is left untouched).

    Returns
    -------
    torch.nn.Module
        A ``LlamaForCausalLM``.
    """
    try:
        from transformers import LlamaConfig, LlamaForCausalLM
    except ImportError as err:  # pragma: no cover - exercised only without the extra
        raise ImportError("hf_tiny_llama needs transformers: pip install 'quest-qat[hf]'") from err
    cfg = LlamaConfig(vocab_size=vocab_size, hidden_size=d_model, intermediate_size=hidden,
                      num_hidden_layers=n_layers, num_attention_heads=n_heads, num_key_value_heads=n_heads,
                      max_position_embeddings=max_seq_len, tie_word_embeddings=False)
    with seeded_init(random_state):
        return LlamaForCausalLM(cfg)


class ByteTokenizer:
    """UTF-8 bytes as tokens: vocabulary 256, lossless for any text."""

    vocab_size = 256

    def encode(self, text: str | bytes) -> torch.Tensor:
        """UTF-8 bytes of ``text`` as a long tensor of ids in [0, 256)."""
        data = text.encode("utf-8") if isinstance(text, str) else bytes(text)
        return torch.frombuffer(bytearray(data), dtype=torch.uint8).long()

    def decode(self, ids: torch.Tensor | list[int]) -> str:
        """Text from byte ids (invalid UTF-8 replaced)."""
        values = ids.tolist() if isinstance(ids, torch.Tensor) else list(ids)
        return bytes(values).decode("utf-8", errors="replace")


def stdlib_corpus(max_bytes: int = 2_000_000, *, root: str | Path | None = None) -> bytes:
    """Concatenated ``.py`` files of the standard library (sorted paths, deterministic), up to ``max_bytes``.

    ``root`` overrides the folder (default: this interpreter's stdlib; ``site-packages`` and tests excluded).
    """
    if max_bytes <= 0:
        raise ValueError(f"max_bytes must be positive, got {max_bytes}")
    base = Path(root) if root is not None else Path(sysconfig.get_paths()["stdlib"])
    if not base.is_dir():
        raise FileNotFoundError(f"corpus folder {base} does not exist")
    skip = {"site-packages", "test", "tests", "idlelib", "__pycache__"}
    out = bytearray()
    for path in sorted(base.rglob("*.py")):
        if skip.intersection(path.relative_to(base).parts):
            continue
        try:
            out += path.read_bytes()
        except OSError:
            continue
        if len(out) >= max_bytes:
            break
    if not out:
        raise FileNotFoundError(f"no .py files under {base}")
    return bytes(out[:max_bytes])


def ngram_loss(train_tokens: torch.Tensor, val_tokens: torch.Tensor, *, order: int,
               alphas: tuple[float, ...] = (1.0, 0.1, 0.01, 0.001), vocab_size: int = 256) -> dict[str, Any]:
    """Cross-entropy (nats per token) of an additively smoothed n-gram table fitted on ``train_tokens``.

    Each validation token ``t >= order`` is predicted from the ``order`` tokens before it with
    ``(count(context, token) + alpha) / (count(context) + alpha * vocab_size)``; the table is fitted on the
    training split only. The reported loss is the lowest over ``alphas`` (a baseline tuned on validation:
    the stronger, and so the stricter, reference for a model to beat).

    Parameters
    ----------
    train_tokens, val_tokens : Tensor of int
        Token ids in ``[0, vocab_size)``.
    order : int
        Context length: 0 is the unigram table, 1 the bigram, 2 the order-2 Markov chain.
    alphas : tuple of float
        Smoothing constants tried.
    vocab_size : int, default 256
        Vocabulary size.

    Returns
    -------
    dict
        ``loss`` (the best), ``alpha`` (its smoothing) and ``by_alpha`` (every loss).

    Examples
    --------
    >>> import torch
    >>> tokens = torch.tensor([0, 1] * 50)
    >>> round(ngram_loss(tokens, tokens, order=0, vocab_size=2)["loss"], 4)  # each byte half of the time: ln 2
    0.6931
    >>> ngram_loss(tokens, tokens, order=1, alphas=(0.001,), vocab_size=2)["loss"] < 1e-4  # the next byte is known
    True
    """
    import numpy as np

    def keys(tokens: torch.Tensor) -> np.ndarray:
        t = tokens.long().numpy()
        key = np.zeros(len(t) - order, dtype=np.int64)
        for k in range(order + 1):  # context tokens then the predicted one, base vocab_size
            key = key * vocab_size + t[k:len(t) - order + k]
        return key

    train_keys, val_keys = keys(train_tokens), keys(val_tokens)
    joint = dict(zip(*np.unique(train_keys, return_counts=True), strict=True))
    context = dict(zip(*np.unique(train_keys // vocab_size, return_counts=True), strict=True))
    joint_v = np.array([joint.get(int(k), 0) for k in val_keys], dtype=float)
    context_v = np.array([context.get(int(k), 0) for k in val_keys // vocab_size], dtype=float)
    by_alpha = {a: float(-np.mean(np.log((joint_v + a) / (context_v + a * vocab_size)))) for a in alphas}
    best = min(by_alpha, key=lambda a: by_alpha[a])
    return {"loss": by_alpha[best], "alpha": best, "by_alpha": {str(a): v for a, v in by_alpha.items()}}
