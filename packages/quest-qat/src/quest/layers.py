"""``QuestConfig``, the fake-quant training layer ``QuestLinear`` and the packed ``Int4Linear``."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace

import torch
import torch.nn.functional as F
from icml25_shared.validation import Interval, Options, check_params
from torch import nn

from quest.grids import GRIDS, Codebook, GridSpec, grid_for
from quest.hadamard import block_hadamard, check_block
from quest.kernels import PackedInt4, dequantize_int4, find_scale, int4_gemm, quantize_int4, unpack_int4
from quest.quantizers import METHODS, RMS_GRID_METHODS, exact_grid_values, make_quantizer, parse_sparsity

__all__ = ["HADAMARD_MODES", "Int4Linear", "QuestConfig", "QuestLinear"]

HADAMARD_MODES = ("half", "full", None)
FilterFn = Callable[[nn.Module, str], bool]


def _uniform(spec: GridSpec | Codebook) -> GridSpec:
    if not isinstance(spec, GridSpec):  # exact_eval holds only for uniform grids
        raise TypeError(f"the exact eval product needs a uniform grid, got {type(spec).__name__}")
    return spec


@dataclass(frozen=True, kw_only=True)
class QuestConfig:
    """How :func:`quest.quantize_` fake-quantizes ``nn.Linear`` layers.

    - ``weight_bits``, ``act_bits``: 1..8 or ``"ternary"``; ``act_bits=None`` leaves activations in
      float (weight-only QAT).
    - ``hadamard``: ``"half"`` (QuEST default: quantize ``x H`` and ``W H`` and multiply them, exact
      because ``H H^T = I``), ``"full"`` (rotate both back after quantizing; same product, two more
      transforms) or ``None`` (no rotation).
    - ``trust``: trust radius in units of the row RMS; ``None`` = half a grid step (the paper's
      default), ``math.inf`` = plain STE. Used by ``method="quest"`` only.
    - ``block``: Hadamard block size (power of two); each quantized layer's input width must be a
      multiple of it (layers that are not are rejected with their name; exclude them with ``filter_fn``).
    - ``method``: ``"quest"`` (trust estimator) or a baseline on the same code path: ``"ste"``,
      ``"clip_ste"`` (``clip_scale`` times the clip value), ``"lsq"``, ``"pact"``.
    - ``weight_method``, ``act_method``: a method for each operand (default ``method``), e.g. LSQ
      weights with trust-estimated activations.
    - ``weight_grid``, ``act_grid``: ``"uniform"`` (the RMS-scaled QuEST grid), ``"fp4"`` (E2M1
      values at the MSE-optimal scale, 4 bits) or ``"lloyd_max"`` (MSE-optimal non-uniform points for
      N(0,1)); non-uniform grids work with the quest/ste/clip_ste methods.
    - ``weight_sparsity``: ``"2:4"`` or ``"4:8"`` keeps the N largest-magnitude of every M weights
      of a row after the rotation (QuEST's sparse variant; trust estimator on the kept entries).
    - ``filter_fn(module, fqn) -> bool``: which ``nn.Linear`` layers to swap; default all except a
      layer named ``lm_head`` and layers whose weight is shared with an embedding.

    ``"ternary"`` is the 3-point grid ``{-s, 0, s}`` (1.58 bits); the official code's ``bits=1.585``
    builds a 4-level grid instead (``2**1.585`` levels, no zero).

    Examples
    --------
    >>> import math
    >>> from quest import QuestConfig
    >>> QuestConfig(weight_bits=4, act_bits=4).label
    'quest W4A4 +H'
    >>> QuestConfig(weight_bits=1, act_bits=None, hadamard=None, trust=math.inf).validate().label
    'quest W1A16'
    >>> QuestConfig(weight_bits=9)  # validated on construction
    Traceback (most recent call last):
    ...
    ValueError: QuestConfig: weight_bits must be an int in [1, 8] or one of 'ternary'; got 9
    """

    weight_bits: int | str = 4
    act_bits: int | str | None = 4
    hadamard: str | None = "half"
    trust: float | None = None
    block: int = 128
    method: str = "quest"
    clip_scale: float = 1.0
    weight_method: str | None = None
    act_method: str | None = None
    weight_grid: str = "uniform"
    act_grid: str = "uniform"
    weight_sparsity: str | None = None
    filter_fn: FilterFn | None = None

    def __post_init__(self) -> None:
        self.validate()

    def validate(self) -> QuestConfig:
        """Raise ``TypeError`` (wrong type) or ``ValueError`` (wrong value) naming the field; return self."""
        bits = [Interval(int, 1, 8), Options(str, {"ternary"})]
        methods = Options(str, set(METHODS))
        grids = [Options(str, set(GRIDS))]
        check_params({name: getattr(self, name) for name in (
            "weight_bits", "act_bits", "hadamard", "trust", "block", "method", "clip_scale", "weight_method",
            "act_method", "weight_grid", "act_grid", "weight_sparsity", "filter_fn")}, {
            "weight_bits": bits, "act_bits": [None, *bits], "hadamard": [None, Options(str, {"half", "full"})],
            "trust": [None, Interval(float, 0, None, closed="neither")], "block": [Interval(int, 2, None)],
            "method": [methods], "clip_scale": [Interval(float, 0, None, closed="neither")],
            "weight_method": [None, methods], "act_method": [None, methods], "weight_grid": grids,
            "act_grid": grids, "weight_sparsity": [None, Options(str, {"2:4", "4:8"})],
            "filter_fn": [None, "callable"]}, owner="QuestConfig")
        for field, value in (("weight_grid", self.weight_grid), ("act_grid", self.act_grid)):
            operand_bits = self.weight_bits if field == "weight_grid" else self.act_bits
            if operand_bits is not None:
                grid_for(operand_bits, value)  # fp4 needs 4 bits, lloyd_max an int width
        parse_sparsity(self.weight_sparsity)
        for operand, method, grid, sparsity in (("weight", self.weight_method_, self.weight_grid, self.weight_sparsity),
                                                ("act", self.act_method_, self.act_grid, None)):
            if method in ("lsq", "pact") and (grid != "uniform" or sparsity is not None):
                raise ValueError(f"{operand}_method {method!r} learns its scale on the uniform grid; use "
                                 f"{operand}_grid='uniform' and no sparsity with it (got grid={grid!r}, "
                                 f"sparsity={sparsity!r})")
        if self.hadamard is not None:
            check_block(self.block)
        return self

    @property
    def weight_method_(self) -> str:
        """The weight quantizer's method (``weight_method`` or ``method``)."""
        return self.weight_method if self.weight_method is not None else self.method

    @property
    def act_method_(self) -> str:
        """The activation quantizer's method (``act_method`` or ``method``)."""
        return self.act_method if self.act_method is not None else self.method

    @property
    def exact_eval(self) -> bool:
        """Whether eval mode multiplies exact grid values (uniform RMS grids, dense; what convert_ packs)."""
        methods = {self.weight_method_} | ({self.act_method_} if self.act_bits is not None else set())
        return (methods <= set(RMS_GRID_METHODS) and self.weight_grid == "uniform"
                and (self.act_grid == "uniform" or self.act_bits is None) and self.weight_sparsity is None)

    @property
    def label(self) -> str:
        """Short name such as ``quest W4A4 +H``."""
        a = "16" if self.act_bits is None else self.act_bits
        had = {"half": " +H", "full": " +Hfull", None: ""}[self.hadamard]
        if self.act_bits is None or self.weight_method_ == self.act_method_:
            method = self.weight_method_
        else:
            method = f"{self.weight_method_}/{self.act_method_}"
        extra = "" if self.weight_grid == "uniform" else f" w:{self.weight_grid}"
        extra += "" if self.act_grid == "uniform" or self.act_bits is None else f" a:{self.act_grid}"
        extra += "" if self.weight_sparsity is None else f" {self.weight_sparsity}"
        return f"{method} W{self.weight_bits}A{a}{had}{extra}"


class _ValueWithGradOf(torch.autograd.Function):
    """Forward: ``value`` (no rounding added); backward: the gradient goes to ``source`` unchanged."""

    @staticmethod
    def forward(ctx, source: torch.Tensor, value: torch.Tensor) -> torch.Tensor:
        return value.clone()

    @staticmethod
    def backward(ctx, grad: torch.Tensor):
        return grad, None


class QuestLinear(nn.Linear):
    """``nn.Linear`` whose forward is ``F.linear(Qa(x H), Qw(W H), b)`` (``H`` = block Hadamard).

    Activations are quantized per token and weights per output row, both over the input dimension.
    In eval mode (RMS-grid methods) the exact grid values are multiplied in float64 and rounded once,
    which is what the INT4 path computes, so :func:`quest.convert_` preserves outputs bit for bit; the
    backward in eval mode is the train-mode estimator's. The rotation always runs in float32 (also for
    bfloat16/float16 inputs), as in :class:`Int4Linear`.
    Holds the float master weights; :func:`quest.convert_` turns a trained layer into an
    :class:`Int4Linear`.
    """

    def __init__(self, in_features: int, out_features: int, bias: bool = True, *,
                 config: QuestConfig = QuestConfig(), device=None, dtype=None) -> None:
        super().__init__(in_features, out_features, bias=bias, device=device, dtype=dtype)
        if not isinstance(config, QuestConfig):
            raise TypeError(f"config must be a QuestConfig, got {type(config).__name__}")
        if config.hadamard is not None and in_features % config.block:
            raise ValueError(f"in_features={in_features} is not a multiple of the Hadamard block {config.block}")
        # the layer keeps no filter_fn: a lambda there would make torch.save(model) fail
        self.config = replace(config, filter_fn=None)
        c = config
        self.weight_quantizer = make_quantizer(c.weight_method_, c.weight_bits, rows=out_features, trust=c.trust,
                                               clip_scale=c.clip_scale, grid=c.weight_grid,
                                               sparsity=c.weight_sparsity)
        self.act_quantizer = (None if c.act_bits is None else
                              make_quantizer(c.act_method_, c.act_bits, rows=1, trust=c.trust,
                                             clip_scale=c.clip_scale, grid=c.act_grid))
        if device is not None or dtype is not None:
            self.to(device=device, dtype=dtype)

    @classmethod
    def from_linear(cls, linear: nn.Linear, config: QuestConfig) -> QuestLinear:
        """A ``QuestLinear`` that shares ``linear``'s weight and bias parameters (same objects)."""
        on_cuda = [linear.weight.device] if linear.weight.device.type == "cuda" else []
        with torch.random.fork_rng(devices=on_cuda):  # the discarded default init must not advance the caller's RNG
            layer = cls(linear.in_features, linear.out_features, bias=linear.bias is not None, config=config,
                        device=linear.weight.device)
        layer.weight = linear.weight
        layer.bias = linear.bias
        return layer.to(device=linear.weight.device)

    def quantized_weight(self) -> torch.Tensor:
        """``Qw(W H)`` (or ``Qw(W)`` without Hadamard) as used by the forward, float32 ``(out, in)``."""
        w = self.weight.float()
        if self.config.hadamard is not None:
            w = block_hadamard(w, self.config.block)
        return self.weight_quantizer(w)

    def _estimator_product(self, x: torch.Tensor, dtype: torch.dtype) -> torch.Tensor:
        """Train-mode product ``Qa(x) Qw(W H)^T`` of rotated rows ``x`` (float32), in ``dtype``, with gradients."""
        if self.act_quantizer is not None:
            x = self.act_quantizer(x)
        x = x.to(dtype)
        w = self.quantized_weight().to(dtype)
        if self.config.hadamard == "full":
            x, w = block_hadamard(x, self.config.block), block_hadamard(w, self.config.block)
        return F.linear(x, w)

    def _exact_product(self, x: torch.Tensor) -> torch.Tensor:
        """Eval-mode product: exact grid values multiplied in float64, rounded once to float32 (no gradient)."""
        had, block = self.config.hadamard, self.config.block
        with torch.no_grad():
            x = x.detach()
            x = x.double() if self.act_quantizer is None else exact_grid_values(x, _uniform(self.act_quantizer.spec))
            w = self.weight.detach().float()
            w = exact_grid_values(w if had is None else block_hadamard(w, block), _uniform(self.weight_quantizer.spec))
            if had == "full":
                x, w = block_hadamard(x, block), block_hadamard(w, block)
            return F.linear(x, w).float()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """Quantized product of ``x`` (..., in_features) with the layer's weights: (..., out_features).

        Train mode: fake-quantized operands multiplied in the input dtype. Eval mode (RMS-grid
        methods): the exact grid values multiplied in float64 and rounded once to float32, bias added
        in float32, then cast to the input dtype, which is what :class:`Int4Linear` computes; when a
        gradient is needed, the backward is the train-mode estimator's (same masks, same gradients).
        """
        if x.shape[-1] != self.in_features:
            raise ValueError(f"expected input width {self.in_features}, got shape {tuple(x.shape)}")
        had, block = self.config.hadamard, self.config.block
        lead, dtype = x.shape[:-1], x.dtype
        # one (tokens, K) float32 layout, as in Int4Linear, so both compute bit-identical rotations and codes
        x = x.reshape(-1, self.in_features).float()
        if had is not None:
            x = block_hadamard(x, block)
        if not self.training and self.config.exact_eval:
            out = self._exact_product(x)
            needs_grad = torch.is_grad_enabled() and (
                x.requires_grad or any(p.requires_grad for p in self.parameters()))
            if needs_grad:  # forward value = exact product, backward = the train-mode estimator's
                out = _ValueWithGradOf.apply(self._estimator_product(x, torch.float32), out)
            if self.bias is not None:
                out = out + self.bias.float()
            out = out.to(dtype)
        else:
            out = self._estimator_product(x, dtype)
            if self.bias is not None:
                out = out + self.bias.to(dtype)
        return out.reshape(*lead, self.out_features)

    def extra_repr(self) -> str:
        """Shape and quantization settings, for ``repr``."""
        return f"{super().extra_repr()}, {self.config.label}"


class Int4Linear(nn.Module):
    """Inference layer with packed INT4 weights (two per byte) and INT4 per-token activations.

    ``act_bits=None`` (W4A16, from a weight-only layer): the rotated float activations times the
    exact dequantised weights, in float64, rounded once. ``act_bits=4``: rotate ``x`` (block Hadamard, float32), per-token step (:func:`~quest.kernels.find_scale`),
    INT4 codes (:func:`~quest.kernels.quantize_int4`), packed INT4 GEMM with the dequantising epilogue
    fused (:func:`~quest.kernels.int4_gemm`), bias in float32, cast to the input dtype. It equals
    the W4A4 fake-quant forward of the :class:`QuestLinear` it came from up to float32 summation order.
    Buffers: ``packed_weight`` uint8 ``(out, in/2)``, ``weight_step`` float32 ``(out,)``,
    ``weight_row_sum`` int32 ``(out,)``, ``bias`` (float or None).
    """

    def __init__(self, in_features: int, out_features: int, *, hadamard: str | None = "half",
                 block: int = 128, act_bits: int | None = 4) -> None:
        super().__init__()
        if act_bits not in (4, None):
            raise ValueError(f"act_bits must be 4 (W4A4) or None (W4A16, float activations), got {act_bits!r}")
        self.act_bits = act_bits
        if in_features % 2:
            raise ValueError(f"in_features must be even to pack INT4 pairs, got {in_features}")
        self.in_features, self.out_features = in_features, out_features
        self.hadamard, self.block = hadamard, block
        self.register_buffer("packed_weight", torch.zeros(out_features, in_features // 2, dtype=torch.uint8))
        self.register_buffer("weight_step", torch.ones(out_features))
        self.register_buffer("weight_row_sum", torch.zeros(out_features, dtype=torch.int32))
        self.register_buffer("bias", None)

    packed_weight: torch.Tensor
    weight_step: torch.Tensor
    weight_row_sum: torch.Tensor
    bias: torch.Tensor | None

    def _apply(self, fn, recurse=True):
        # .half()/.to(dtype) cast the float buffers; the steps stay float32 (they define the codes)
        step = self._buffers.pop("weight_step")
        try:
            super()._apply(fn, recurse)
            target = fn(torch.empty(0, device=step.device))
        finally:
            self._buffers["weight_step"] = step
        self._buffers["weight_step"] = step.to(device=target.device)
        return self

    def get_extra_state(self) -> dict:
        """The layout the packed codes were made with, stored in ``state_dict`` under ``_extra_state``."""
        return {"act_bits": self.act_bits, "hadamard": self.hadamard, "block": self.block}

    def set_extra_state(self, state: dict) -> None:
        """Check on ``load_state_dict`` that the codes were packed with this layer's layout.

        Raises ``ValueError`` naming the fields that differ (the codes would be read in another basis).
        """
        wrong = {k: (v, getattr(self, k)) for k, v in state.items() if getattr(self, k) != v}
        if wrong:
            desc = ", ".join(f"{k}={v!r} in the state_dict but {mine!r} here" for k, (v, mine) in wrong.items())
            raise ValueError(f"Int4Linear state_dict was packed with another layout: {desc}; convert a model "
                             "quantized with the same QuestConfig before loading")

    @property
    def weight(self) -> torch.Tensor:
        """Dequantised weight in the input basis, float32 ``(out_features, in_features)``.

        ``Qw(W H) H`` with the block Hadamard ``H`` (``Qw(W)`` without rotation), so that
        ``x @ weight.T`` is the layer's product for an unquantised input ``x``.
        """
        w = dequantize_int4(self.packed_weight, self.weight_step)
        return w if self.hadamard is None else block_hadamard(w, self.block)

    @classmethod
    def from_quest_linear(cls, layer: QuestLinear, name: str = "<layer>") -> Int4Linear:
        """Pack a trained W4A4 :class:`QuestLinear` whose forward grid is the RMS grid (quest/ste/clip_ste)."""
        c = layer.config
        if c.weight_bits != 4 or c.act_bits not in (4, None) or not c.exact_eval:
            raise ValueError(f"layer {name!r} ({c.label}) cannot be converted: convert_ packs W4A4 and W4A16 layers "
                             "trained with method 'quest', 'ste' or 'clip_ste' on the dense uniform grid")
        out = cls(layer.in_features, layer.out_features, hadamard=c.hadamard, block=c.block, act_bits=c.act_bits)
        with torch.no_grad():
            w = layer.weight.detach().float()
            if c.hadamard is not None:
                w = block_hadamard(w, c.block)
            # the torch reference, as in training: the stored codes are the ones the fake-quant model used
            step = find_scale(w, bits=4, backend="torch")
            codes = quantize_int4(w, step, backend="torch")
            out.packed_weight = codes.packed
            out.weight_step = step
            out.weight_row_sum = codes.row_sum
            out.bias = None if layer.bias is None else layer.bias.detach().clone()
        return out.to(layer.weight.device)

    def weight_nbytes(self) -> int:
        """Bytes of weight storage: packed codes plus per-row step and row sum."""
        return sum(t.numel() * t.element_size() for t in (self.packed_weight, self.weight_step, self.weight_row_sum))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """Quantized product of ``x`` (..., in_features) with the layer's weights: (..., out_features)."""
        if x.shape[-1] != self.in_features:
            raise ValueError(f"expected input width {self.in_features}, got shape {tuple(x.shape)}")
        lead = x.shape[:-1]
        rows = x.reshape(-1, self.in_features).float()
        if self.hadamard is not None:
            rows = block_hadamard(rows, self.block)
        if self.act_bits is None:
            # W4A16: float activations times the exact grid values, in float64, rounded once
            w = (unpack_int4(self.packed_weight).double() + 0.5) * self.weight_step.double().unsqueeze(-1)
            rows = rows.double()
            if self.hadamard == "full":
                rows, w = block_hadamard(rows, self.block), block_hadamard(w, self.block)
            out = F.linear(rows, w).float()
        else:
            step = find_scale(rows, bits=4)
            codes = quantize_int4(rows, step)
            out = int4_gemm(codes, step, PackedInt4(self.packed_weight, self.weight_row_sum), self.weight_step)
        if self.bias is not None:
            out = out + self.bias.float()
        return out.reshape(*lead, self.out_features).to(x.dtype)

    def extra_repr(self) -> str:
        """Shape and quantization settings, for ``repr``."""
        ratio = self.weight_nbytes() / (4 * self.in_features * self.out_features)
        acts = "A4" if self.act_bits == 4 else "A16"
        return (f"in_features={self.in_features}, out_features={self.out_features}, W4{acts}, "
                f"hadamard={self.hadamard}, block={self.block}, weight bytes = {ratio:.3f} x float32")

