"""Decoder-layer locators and context managers that read, add to, replace or ablate a layer's output.

Layer ``l`` means the residual stream after decoder layer ``l`` (0-based, the layer's own output). For
``l < L - 1`` that is entry ``l + 1`` of ``output_hidden_states``; at the last layer it is not:
transformers stores the state after the final norm there (``model.norm``, GPT-2's ``ln_f``), while
:func:`read_layer` returns the last layer's output before that norm. Every context manager removes its hooks on exit, so the model computes
bitwise what it computed before; none of them changes a parameter.
"""

from __future__ import annotations

import math
import numbers
import warnings
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import torch
from icml25_shared.validation import Interval, check_param
from torch import nn

__all__ = ["LAYER_PATHS", "ablate_direction", "add_vector", "check_layer", "decoder_layers",
           "hidden_size", "num_layers", "read_layer", "replace_layer"]

LAYER_PATHS = ("model.layers", "model.language_model.layers", "language_model.model.layers", "transformer.h",
               "gpt_neox.layers", "model.decoder.layers", "transformer.blocks", "layers")
"""Attribute paths tried first for the decoder-layer list (Llama, Qwen2/3, Gemma2/3, Mistral, Phi-3, GPT-2, NeoX,
OPT, multimodal wrappers); any other model is searched for it (see :func:`decoder_layers`)."""

Tokens = slice | None


class StopForward(Exception):
    """Raised by a hook to end a forward pass after the layer it reads (caught by the package)."""


def _boolean(name: str, value: Any) -> bool:
    """``value`` checked to be a bool (a string such as "no" is truthy and would silently mean True)."""
    check_param(name, value, ["boolean"])
    return bool(value)


def _model_type(model: nn.Module) -> str:
    config = getattr(model, "config", None)
    return str(getattr(config, "model_type", type(model).__name__))


def _text_config(model: nn.Module) -> Any:
    config = getattr(model, "config", None)
    getter = getattr(config, "get_text_config", None)
    return getter() if callable(getter) else config


def _configured_layers(model: nn.Module) -> int | None:
    config = _text_config(model)
    for name in ("num_hidden_layers", "n_layer", "num_layers"):
        value = getattr(config, name, None)
        if isinstance(value, int) and value > 0:
            return value
    return None


def _resolve(model: nn.Module, path: str) -> Any:
    obj: Any = model
    for part in path.split("."):
        obj = getattr(obj, part, None)
        if obj is None:
            return None
    return obj


def _is_layer_list(obj: Any, expected: int | None) -> bool:
    return (isinstance(obj, nn.ModuleList) and len(obj) > 0 and (expected is None or len(obj) == expected)
            and len({type(m) for m in obj}) == 1)


def decoder_layers(model: nn.Module) -> nn.ModuleList:
    """The decoder layers of a transformer language model, located by structure.

    The paths of :data:`LAYER_PATHS` are tried first; otherwise the model's modules are searched for an
    ``nn.ModuleList`` of ``config.num_hidden_layers`` blocks of one class (the shallowest such list).
    Failing both, a shorter list of one class at one of those paths is used with a warning (a pruned model
    whose config still names the original depth).
    Llama, Qwen2, Qwen3, Gemma2, Gemma3, Mistral, Phi-3 and GPT-2 are tested.

    Parameters
    ----------
    model : transformers.PreTrainedModel
        A causal LM (``*ForCausalLM``), its bare trunk, or a wrapper holding a language model.

    Returns
    -------
    torch.nn.ModuleList
        The layers in order.

    Raises
    ------
    ValueError
        When no such list is found, naming the model class and what was looked for.
    """
    expected = _configured_layers(model)
    for path in LAYER_PATHS:
        found = _resolve(model, path)
        if _is_layer_list(found, expected):
            return found
    candidates = [(name.count("."), name, module) for name, module in model.named_modules()
                  if _is_layer_list(module, expected)]
    if candidates:
        return min(candidates, key=lambda c: (c[0], c[1]))[2]
    for path in LAYER_PATHS:
        # a model whose layer list was cut in place (layer pruning) without updating its config; a longer list is
        # not accepted: transformers' forwards run only the first config.num_hidden_layers layers
        found = _resolve(model, path)
        if expected is not None and _is_layer_list(found, None) and len(found) < expected:
            warnings.warn(f"{type(model).__name__}.{path} holds {len(found)} layers but config.num_hidden_layers is "
                          f"{expected}; using the {len(found)} layers of {path}", UserWarning, stacklevel=2)
            return found
    wanted = f"{expected} blocks (config.num_hidden_layers)" if expected else "blocks"
    raise ValueError(f"no decoder-layer list found in {type(model).__name__} (model_type {_model_type(model)!r}): "
                     f"looked for an nn.ModuleList of {wanted} of one class, at {list(LAYER_PATHS)} and anywhere "
                     "in the module tree")


def num_layers(model: nn.Module) -> int:
    """Number of decoder layers of ``model`` (see :func:`decoder_layers`)."""
    return len(decoder_layers(model))


def hidden_size(model: nn.Module) -> int:
    """Residual-stream width ``d`` of ``model`` (of its text model for multimodal configs)."""
    config = _text_config(model)
    return int(getattr(config, "hidden_size", None) or config.n_embd)


def check_layer(model: nn.Module, layer: Any, *, name: str = "layer") -> int:
    """Validate a layer index against the model's decoder layers.

    Parameters
    ----------
    model : transformers.PreTrainedModel
        The model the index refers to.
    layer : int
        0-based index; negative indices count from the end.
    name : str, default "layer"
        Argument name used in the error.

    Returns
    -------
    int
        The non-negative index.

    Raises
    ------
    TypeError
        When ``layer`` is not an int (a bool is not one).
    ValueError
        When ``layer`` is out of range, naming the layer count.
    """
    n = num_layers(model)
    if isinstance(layer, bool) or not isinstance(layer, numbers.Integral):
        raise TypeError(f"{name} must be an int, got {layer!r}")
    if not -n <= int(layer) < n:
        raise ValueError(f"{name} {layer} is out of range: the {_model_type(model)} model has {n} decoder layers "
                         f"(valid 0..{n - 1} or -{n}..-1)")
    return int(layer) % n


@contextmanager
def _eval_mode(model: nn.Module) -> Iterator[None]:
    """Run the block with every module in eval mode (dropout off), then restore each module's own mode."""
    modes = [(m, m.training) for m in model.modules()]
    model.eval()
    try:
        yield
    finally:
        for m, training in modes:
            m.training = training


def _check_alpha(alpha: Any) -> float:
    check_param("alpha", alpha, [Interval(float, None, None), Interval(int, None, None)])
    if not math.isfinite(float(alpha)):
        raise ValueError(f"alpha must be a finite real number; got {alpha!r}")
    return float(alpha)


def _check_vector(vector: Any, d: int, what: str) -> torch.Tensor:
    v = torch.as_tensor(vector)
    if not v.is_floating_point():
        raise ValueError(f"{what} must be a floating-point vector, got dtype {v.dtype}")
    if v.shape != (d,):
        raise ValueError(f"{what} has shape {tuple(v.shape)} but the layer's hidden size is {d}: expected ({d},)")
    if not torch.isfinite(v).all():
        raise ValueError(f"{what} contains NaN or infinity")
    return v.detach()


@contextmanager
def _output_hook(model: nn.Module, layer: int, fn: Callable[[torch.Tensor], torch.Tensor | None]) -> Iterator[None]:
    module = decoder_layers(model)[check_layer(model, layer)]

    def hook(_module: nn.Module, _inputs: Any, output: Any) -> Any:
        hidden = output[0] if isinstance(output, tuple) else output
        new = fn(hidden)
        if new is None:
            return None
        return (new, *output[1:]) if isinstance(output, tuple) else new

    handle = module.register_forward_hook(hook)
    try:
        yield
    finally:
        handle.remove()


@contextmanager
def read_layer(model: nn.Module, layer: int, *, stop: bool = False) -> Iterator[list[torch.Tensor]]:
    """Record the output of decoder layer ``layer`` on every forward pass inside the block.

    Parameters
    ----------
    model : transformers.PreTrainedModel
        A supported model.
    layer : int
        Decoder layer index.
    stop : bool, default False
        End each forward right after the layer (the call then raises :class:`StopForward`; the
        package's collectors catch it).

    Yields
    ------
    list of torch.Tensor
        One detached ``(batch, seq, d)`` tensor per forward pass, appended as they happen.
    """
    _boolean("stop", stop)
    records: list[torch.Tensor] = []

    def fn(hidden: torch.Tensor) -> None:
        records.append(hidden.detach())
        if stop:
            raise StopForward

    with _output_hook(model, layer, fn):
        yield records


def _positions(tokens: Tokens) -> slice | None:
    if tokens is None:
        return None
    if not isinstance(tokens, slice):
        raise ValueError(f"tokens must be a slice of positions or None (all), got {tokens!r}")
    try:
        range(0)[tokens]  # the checks a tensor index makes, before any forward runs
    except (TypeError, ValueError) as err:
        raise ValueError(f"tokens must be a slice of int positions with a non-zero step, got {tokens!r}") from err
    return tokens


@contextmanager
def _token_mask(model: nn.Module, tokens: Tokens) -> Iterator[Callable[[torch.Tensor], torch.Tensor | None]]:
    """Yield ``select(hidden) -> (batch, seq) bool`` marking the positions ``tokens`` picks in each row.

    The slice indexes each row's real tokens (those of the forward's ``attention_mask``), so a left- or
    right-padded batch steers the same tokens as each text alone. With a KV cache the layer sees only the
    newest positions: they are the last columns of the mask, picked by the slice over the whole sequence so
    far (earlier positions keep their cached values). ``select`` returns None when every position is picked
    (``tokens=None``).
    """
    where = _positions(tokens)
    if where is None:
        yield lambda hidden: None
        return
    # one mask per forward in progress: a forward of the same model nested in a hook (mapped_replacement with
    # the model as its own source) pushes and pops its own, leaving the outer forward's mask in place
    masks: list[Any] = []

    def grab(_module: nn.Module, args: tuple, kwargs: dict) -> None:
        masks.append(kwargs.get("attention_mask", args[1] if len(args) > 1 else None))

    def clear(*_: Any) -> None:
        if masks:
            masks.pop()

    def select(hidden: torch.Tensor) -> torch.Tensor:
        batch, seq = hidden.shape[:2]
        mask = masks[-1] if masks else None
        if mask is None:
            real = torch.ones(batch, seq, dtype=torch.bool, device=hidden.device)
        else:
            if mask.ndim != 2 or mask.shape[0] != batch or mask.shape[1] < seq:
                raise ValueError(f"tokens= needs a 2-D attention_mask of shape (batch, >= {seq}) to find each row's "
                                 f"real tokens, got shape {tuple(mask.shape)}")
            real = mask.bool().to(hidden.device)
        chosen = torch.zeros_like(real)
        for row in range(batch):
            idx = torch.nonzero(real[row]).flatten()[where]
            chosen[row, idx] = True
        return chosen[:, chosen.shape[1] - seq:]

    pre = model.register_forward_pre_hook(grab, with_kwargs=True)
    post = model.register_forward_hook(clear, always_call=True)
    try:
        yield select
    finally:
        pre.remove()
        post.remove()


@contextmanager
def add_vector(model: nn.Module, layer: int, vector: torch.Tensor, *, alpha: float = 1.0,
               tokens: Tokens = None) -> Iterator[None]:
    """Add ``alpha * vector`` to the output of decoder layer ``layer`` at the token positions ``tokens``.

    Parameters
    ----------
    model : transformers.PreTrainedModel
        A supported model.
    layer : int
        Decoder layer index.
    vector : torch.Tensor, shape (d,)
        Steering vector, cast to the activations' dtype.
    alpha : float, default 1.0
        Finite multiplier.
    tokens : slice or None, default None
        Positions to steer among each row's real tokens (the forward's ``attention_mask``; padding is not
        counted, whichever side it is on): ``slice(-1, None)`` is every text's last token. None: every
        position, padding included. With a KV cache each position is steered or not once, when it is
        computed, and keeps that in the cache: slices anchored at the start (``slice(0, 2)``, steps) act as
        on full sequences, but ``slice(-1, None)`` steers the last prompt token and every generated one,
        where a full-sequence forward (:func:`~safety_transfer.generate`) steers only the current last token.

    Raises
    ------
    ValueError
        When ``alpha`` is not finite, the vector's shape is not ``(d,)`` or the layer is out of range.
    """
    a = _check_alpha(alpha)
    v = _check_vector(vector, hidden_size(model), "vector")
    _positions(tokens)

    with _token_mask(model, tokens) as select:
        def fn(hidden: torch.Tensor) -> torch.Tensor:
            steered = hidden + a * v.to(device=hidden.device, dtype=hidden.dtype)
            chosen = select(hidden)
            return steered if chosen is None else torch.where(chosen[..., None], steered, hidden)

        with _output_hook(model, layer, fn):
            yield


@contextmanager
def replace_layer(model: nn.Module, layer: int, fn: Callable[[torch.Tensor], torch.Tensor], *,
                  tokens: Tokens = None) -> Iterator[None]:
    """Replace the output ``h`` of decoder layer ``layer`` by ``fn(h)`` at the positions ``tokens``.

    Parameters
    ----------
    model : transformers.PreTrainedModel
        A supported model.
    layer : int
        Decoder layer index.
    fn : callable
        Maps a ``(batch, seq, d)`` tensor to one of the same shape.
    tokens : slice or None, default None
        Positions replaced among each row's real tokens, as in :func:`add_vector` (None: all).
    """
    _positions(tokens)

    with _token_mask(model, tokens) as select:
        def hook(hidden: torch.Tensor) -> torch.Tensor:
            new = fn(hidden)
            if new.shape != hidden.shape:
                raise ValueError(f"the replacement has shape {tuple(new.shape)}, the layer output "
                                 f"{tuple(hidden.shape)}")
            new = new.to(hidden.dtype)
            chosen = select(hidden)
            return new if chosen is None else torch.where(chosen[..., None], new, hidden)

        with _output_hook(model, layer, hook):
            yield


@contextmanager
def ablate_direction(model: nn.Module, layer: int, direction: torch.Tensor, *, tokens: Tokens = None) -> Iterator[None]:
    """Project the direction out of layer ``layer``'s output: ``h - (h . r) r`` with ``r`` of unit norm.

    Parameters
    ----------
    model : transformers.PreTrainedModel
        A supported model.
    layer : int
        Decoder layer index.
    direction : torch.Tensor, shape (d,)
        Non-zero direction (normalised here).
    tokens : slice or None, default None
        Positions ablated among each row's real tokens, as in :func:`add_vector` (None: all).
    """
    r = _check_vector(direction, hidden_size(model), "direction")
    norm = torch.linalg.vector_norm(r)
    if norm == 0:
        raise ValueError("direction has zero norm")
    r = r / norm

    def fn(hidden: torch.Tensor) -> torch.Tensor:
        u = r.to(device=hidden.device, dtype=hidden.dtype)
        return hidden - (hidden @ u)[..., None] * u

    with replace_layer(model, layer, fn, tokens=tokens):
        yield
