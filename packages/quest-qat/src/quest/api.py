"""torchao-style in-place model transforms: ``quantize_`` (fake-quant for QAT) and ``convert_`` (INT4)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from torch import nn

from quest.layers import Int4Linear, QuestConfig, QuestLinear

__all__ = ["ConversionReport", "convert_", "default_filter", "quantize_"]


def _embedding_weights(model: nn.Module) -> set[int]:
    return {id(m.weight) for m in model.modules() if isinstance(m, nn.Embedding)}


def default_filter(module: nn.Module, fqn: str) -> bool:
    """Select every ``nn.Linear`` except one whose name ends in ``lm_head`` (the paper keeps the head in float).

    Parameters
    ----------
    module : torch.nn.Module
        A submodule.
    fqn : str
        Its fully qualified name in the model.

    Returns
    -------
    bool
        Whether :func:`quantize_` swaps it.
    """
    return isinstance(module, nn.Linear) and not fqn.split(".")[-1] == "lm_head"


def _set_child(model: nn.Module, fqn: str, new: nn.Module) -> None:
    parent_name, _, child = fqn.rpartition(".")
    parent = model.get_submodule(parent_name) if parent_name else model
    setattr(parent, child, new)


def _already_done(model: nn.Module) -> str:
    """' (it already holds N QuestLinear / Int4Linear layers: ...)' or ''."""
    parts = []
    for cls, how in ((QuestLinear, "quantize_"), (Int4Linear, "convert_")):
        names = [n for n, m in model.named_modules() if isinstance(m, cls)]
        if names:
            parts.append(f"{len(names)} {cls.__name__} layers from {how} ({names[:5]}"
                         f"{', ...' if len(names) > 5 else ''})")
    return f"; the model already holds {' and '.join(parts)}" if parts else ""


def quantize_(model: nn.Module, config: QuestConfig | None = None,
              filter_fn: Callable[[nn.Module, str], bool] | None = None) -> nn.Module:
    """Swap the matching ``nn.Linear`` layers of ``model`` for :class:`QuestLinear`, in place.

    Weights and biases stay the same parameter objects, so call it before building the optimizer or
    after (both work). Embeddings are never touched; the LM head and layers tied to an embedding are
    skipped unless a filter selects them; the ``out_proj`` of ``nn.MultiheadAttention`` is always skipped
    (its forward reads the weight without calling the layer; a filter that selects it raises). Raises
    ``ValueError`` when no layer matches (naming the layers already quantized or converted, if any) or a
    matching layer's input width is not a multiple of the Hadamard block (the message names the layer).

    Parameters
    ----------
    model : torch.nn.Module
        The model to transform in place.
    config : QuestConfig, optional
        Bits, rotation, estimator and filter (default ``QuestConfig()``: W4A4 QuEST, half Hadamard).
    filter_fn : callable, optional
        ``filter_fn(module, fqn) -> bool`` selects the ``nn.Linear`` layers to swap (torchao's
        argument); default ``config.filter_fn``, else :func:`default_filter` minus embedding-tied layers.

    Returns
    -------
    torch.nn.Module
        ``model`` itself.

    Raises
    ------
    ValueError
        When no layer matches, a matching layer's input width is not a multiple of ``config.block``, or
        ``model`` is itself an ``nn.Linear`` (use :meth:`QuestLinear.from_linear` for a bare layer), or
        ``filter_fn`` selects the ``out_proj`` of an ``nn.MultiheadAttention``.

    Examples
    --------
    >>> import torch
    >>> from quest import QuestConfig, QuestLinear, convert_, quantize_
    >>> _ = torch.manual_seed(0)
    >>> model = torch.nn.Sequential(torch.nn.Linear(128, 256), torch.nn.ReLU(), torch.nn.Linear(256, 128))
    >>> _ = quantize_(model, QuestConfig(weight_bits=4, act_bits=4))
    >>> isinstance(model[0], QuestLinear)
    True
    >>> x = torch.randn(8, 128)
    >>> with torch.no_grad():
    ...     fake = model.eval()(x)
    ...     report = convert_(model)  # packed INT4 weights, same output
    ...     torch.equal(model(x), fake)
    True
    >>> report.layers, round(report.compression, 3)
    (['0', '2'], 0.137)
    """
    config = QuestConfig() if config is None else config
    if not isinstance(config, QuestConfig):
        raise TypeError(f"config must be a QuestConfig, got {type(config).__name__}")
    if not isinstance(model, nn.Module):
        raise TypeError(f"model must be a torch.nn.Module, got {type(model).__name__}")
    if filter_fn is not None and not callable(filter_fn):
        raise TypeError(f"filter_fn must be callable(module, fqn) -> bool, got {filter_fn!r}")
    filter_fn = filter_fn if filter_fn is not None else config.filter_fn
    tied = _embedding_weights(model)
    linears = [(name, m) for name, m in model.named_modules()
               if isinstance(m, nn.Linear) and not isinstance(m, QuestLinear)]
    if filter_fn is not None:
        chosen = [(n, m) for n, m in linears if filter_fn(m, n)]
    else:
        chosen = [(n, m) for n, m in linears if default_filter(m, n) and id(m.weight) not in tied]
    if not chosen:
        names = [n for n, _ in linears]
        raise ValueError(f"no nn.Linear layer of {type(model).__name__} matched the filter "
                         f"(nn.Linear layers found: {names[:20] or 'none'}){_already_done(model)}; "
                         "quantize_ swaps float nn.Linear layers once")
    bypassed = {id(m.out_proj) for m in model.modules() if isinstance(m, nn.MultiheadAttention)}
    if filter_fn is None:
        chosen = [(n, m) for n, m in chosen if id(m) not in bypassed]
    else:
        bad = [n for n, m in chosen if id(m) in bypassed]
        if bad:
            raise ValueError(f"filter_fn selected the out_proj of nn.MultiheadAttention ({bad[:5]}), whose forward "
                             "reads out_proj.weight directly, so a QuestLinear there would never run; exclude it "
                             "from filter_fn (the default filter skips it)")
    if any(n == "" for n, _ in chosen):
        raise ValueError(f"the model itself is an nn.Linear ({type(model).__name__}); quantize_ swaps submodules in "
                         "place and cannot replace the object you hold: use QuestLinear.from_linear(linear, config) "
                         "or wrap it, e.g. nn.Sequential(linear)")
    if config.hadamard is not None:
        bad = [(n, m.in_features) for n, m in chosen if m.in_features % config.block]
        if bad:
            desc = ", ".join(f"{n!r} (in_features={k})" for n, k in bad[:10])
            raise ValueError(f"the Hadamard block is {config.block} but these layers' input width is not a "
                             f"multiple of it: {desc}; pass a smaller power-of-two block, hadamard=None, or a "
                             "filter_fn that skips them")
    for name, module in chosen:
        _set_child(model, name, QuestLinear.from_linear(module, config))
    return model


@dataclass(frozen=True)
class ConversionReport:
    """What :func:`convert_` did: converted layer names and weight bytes before and after."""

    layers: list[str]
    float_weight_bytes: int
    int4_weight_bytes: int

    @property
    def compression(self) -> float:
        """``int4_weight_bytes / float_weight_bytes`` (float32 reference)."""
        return self.int4_weight_bytes / self.float_weight_bytes


def convert_(model: nn.Module) -> ConversionReport:
    """Replace every trained W4A4 or W4A16 :class:`QuestLinear` of ``model`` by a packed :class:`Int4Linear`, in place.

    The converted forward equals the fake-quant forward (same steps and codes; only the float32
    summation order differs). Layers of other bit widths or learned-scale methods raise ``ValueError``
    naming the layer; a model without ``QuestLinear`` layers raises too (call :func:`quantize_` first).

    Parameters
    ----------
    model : torch.nn.Module
        A model transformed by :func:`quantize_` (W4A4 or weight-only W4A16; methods quest/ste/clip_ste on
        the dense uniform grid).

    Returns
    -------
    ConversionReport
        Converted layer names and weight bytes before and after.
    """
    layers = [(n, m) for n, m in model.named_modules() if isinstance(m, QuestLinear)]
    if not layers:
        done = [n for n, m in model.named_modules() if isinstance(m, Int4Linear)]
        if done:
            raise ValueError(f"{type(model).__name__} is already converted: it holds {len(done)} Int4Linear layers "
                             f"({done[:5]}{', ...' if len(done) > 5 else ''}) and no QuestLinear layer left to "
                             "convert; convert_ runs once per quantize_")
        raise ValueError(f"{type(model).__name__} has no QuestLinear layers; call quantize_(model, config) first")
    if any(n == "" for n, _ in layers):
        raise ValueError("the model itself is a QuestLinear; convert_ swaps submodules in place and cannot replace "
                         "the object you hold: use Int4Linear.from_quest_linear(layer) or wrap it, e.g. "
                         "nn.Sequential(layer)")
    converted = [(name, Int4Linear.from_quest_linear(layer, name)) for name, layer in layers]
    float_bytes = int4_bytes = 0
    for (name, layer), (_, new) in zip(layers, converted, strict=True):
        float_bytes += 4 * layer.weight.numel()
        int4_bytes += new.weight_nbytes()
        _set_child(model, name, new)
    return ConversionReport([n for n, _ in layers], float_bytes, int4_bytes)
