"""Fake quantizers (forward on the grid, a chosen backward), one row = the last dimension.

- :class:`TrustQuantizer` is QuEST's: RMS-scaled MSE-optimal Gaussian grid in the forward, and the
  *trust* gradient estimator in the backward: the gradient passes (times 1) where the quantisation
  error is at most ``trust * sigma`` and is zeroed elsewhere (``trust=inf`` is plain STE).
- Baselines on the same grid and code path: :class:`STEQuantizer` (identity backward),
  :class:`ClipSTEQuantizer` (zero gradient where ``|x| > clip_scale * s``), and two learned-scale
  baselines, :class:`LSQQuantizer` (learned step, LSQ gradient) and :class:`PACTQuantizer` (learned
  clip value, PACT gradient), both initialised from the ``alpha_b * rms`` rule on the first batch.

Every quantizer maps ``(..., K) -> (..., K)`` and keeps the input dtype.
"""

from __future__ import annotations

import math

import torch
from torch import nn

from quest.grids import Codebook, GridSpec, grid_for
from quest.kernels import _find_scale_torch

__all__ = [
    "METHODS",
    "ClipSTEQuantizer",
    "LSQQuantizer",
    "PACTQuantizer",
    "Quantizer",
    "STEQuantizer",
    "TrustQuantizer",
    "exact_grid_values",
    "grid_quantize",
    "make_quantizer",
    "nm_mask",
    "parse_sparsity",
    "rms_step",
]

METHODS = ("quest", "ste", "clip_ste", "lsq", "pact")
"""Accepted quantizer methods: QuEST's trust estimator, plain and clipped STE, LSQ and PACT."""
RMS_GRID_METHODS = ("quest", "ste", "clip_ste")  # forward = the fixed alpha_b * rms grid


def rms_step(x: torch.Tensor, spec: GridSpec) -> torch.Tensor:
    """Per-row grid step ``2 (alpha * rms + 1e-8) / (levels - 1)`` (float32, shape ``x.shape[:-1]``).

    The same float operations as the torch reference of :func:`quest.kernels.find_scale`, so the
    fake-quant model and the INT4 model see bit-identical steps.
    """
    flat = x.detach().reshape(-1, x.shape[-1])
    return _find_scale_torch(flat, spec.alpha, spec.levels).reshape(x.shape[:-1])


def grid_quantize(x: torch.Tensor, step: torch.Tensor, spec: GridSpec, *,
                  dtype: torch.dtype = torch.float32) -> torch.Tensor:
    """Nearest grid point of ``x`` (float32) for per-row ``step`` (shape ``x.shape[:-1]``); no gradient path.

    2**b-point grids: ``(clamp(floor(x / step), -2**(b-1), 2**(b-1) - 1) + 1/2) * step``, which equals
    the paper's ``(round(clamp(x, -s, s) / step + 1/2) - 1/2) * step`` bit for bit in float32 off ties.
    Ternary: ``clamp(round(x / step), -1, 1) * step``. ``dtype=torch.float64`` returns the exact
    products (code times float32 step) instead of their float32 rounding.
    """
    y = x.detach().float() / step.unsqueeze(-1)
    codes = torch.round(y) if spec.is_ternary else torch.floor(y)
    codes = torch.clamp(codes, spec.index_min, spec.index_max) + spec.offset
    return codes.to(dtype) * step.unsqueeze(-1).to(dtype)


def exact_grid_values(x: torch.Tensor, spec: GridSpec) -> torch.Tensor:
    """The RMS-grid quantization of ``x`` as exact float64 values (no gradient).

    What the INT4 path multiplies: used by :class:`~quest.layers.QuestLinear` in eval mode so that a
    converted model reproduces the fake-quant model bit for bit.
    """
    return grid_quantize(x, rms_step(x, spec), spec, dtype=torch.float64)


SPARSITY_PATTERNS = ("2:4", "4:8")


def parse_sparsity(pattern: str | None) -> tuple[int, int] | None:
    """``"2:4"`` -> ``(2, 4)`` (keep 2 of every 4); None stays None."""
    if pattern is None:
        return None
    if pattern not in SPARSITY_PATTERNS:
        raise ValueError(f"sparsity must be one of {SPARSITY_PATTERNS} or None, got {pattern!r}")
    n, m = pattern.split(":")
    return int(n), int(m)


def nm_mask(x: torch.Tensor, n: int, m: int) -> torch.Tensor:
    """Boolean N:M mask over the last dimension: in each group of ``m`` entries keep the ``n`` largest |x|.

    Ties go to the lower index (``torch.topk`` order on CPU is not specified for ties, so the ranks
    are made strict with a tiny index-based tiebreak).
    """
    k = x.shape[-1]
    if k % m:
        raise ValueError(f"the last dimension ({k}) must be a multiple of the sparsity group size {m}")
    groups = x.detach().abs().float().reshape(*x.shape[:-1], k // m, m)
    # rank by |x| descending, then by position ascending
    order = torch.argsort(groups, dim=-1, descending=True, stable=True)
    keep = torch.zeros_like(groups, dtype=torch.bool).scatter_(-1, order[..., :n], True)
    return keep.reshape(x.shape)


def codebook_quantize(x: torch.Tensor, book: Codebook, sigma: torch.Tensor) -> torch.Tensor:
    """Nearest point of ``sigma * book.values`` for each entry (float32; ``sigma`` per row, no gradient)."""
    values = torch.tensor(book.values, dtype=torch.float32, device=x.device)
    mids = (values[1:] + values[:-1]) / 2
    y = x.detach().float() / sigma.unsqueeze(-1)
    return values[torch.bucketize(y, mids)] * sigma.unsqueeze(-1)


def _rms(x: torch.Tensor, keep_fraction: float = 1.0) -> torch.Tensor:
    """Row RMS over the kept entries (``x`` zero elsewhere) plus 1e-8, float32."""
    return x.detach().float().pow(2).mean(dim=-1).div(keep_fraction).sqrt() + 1e-8


class _Straight(torch.autograd.Function):
    """Forward: exactly ``xq``; backward: ``grad * mask`` (``mask=None``: identity).

    ``x + (xq - x).detach()`` would leave float rounding on the forward value; this keeps the
    forward bit-identical to the grid (and hence to the INT4 kernels).
    """

    @staticmethod
    def forward(ctx, x: torch.Tensor, xq: torch.Tensor, mask: torch.Tensor | None):
        ctx.save_for_backward(mask if mask is not None else torch.empty(0))
        ctx.has_mask = mask is not None
        return xq.to(x.dtype)

    @staticmethod
    def backward(ctx, grad: torch.Tensor):
        (mask,) = ctx.saved_tensors
        return (grad * mask if ctx.has_mask else grad), None, None


def _check_input(x: torch.Tensor) -> None:
    if not x.is_floating_point():
        raise TypeError(f"quantizers need a floating-point tensor, got {x.dtype}")
    if x.ndim == 0 or x.shape[-1] == 0:
        raise ValueError(f"quantizers act on the last dimension, got shape {tuple(x.shape)}")


class Quantizer(nn.Module):
    """Base class: ``bits`` in 1..8 or ``"ternary"``; subclasses define the backward.

    ``grid``: ``"uniform"`` (QuEST's RMS-scaled uniform grid), ``"fp4"`` (E2M1 values, 4 bits) or
    ``"lloyd_max"`` (MSE-optimal non-uniform points for N(0,1)), all scaled by the row RMS.
    ``sparsity``: ``"2:4"`` or ``"4:8"`` keeps the largest-magnitude N of every M entries of a row
    (after the rotation, when there is one), zeroes the rest, and fits the grid to the kept entries
    (their RMS); the gradient of a pruned entry is zero.
    """

    def __init__(self, bits: int | str = 4, *, grid: str = "uniform", sparsity: str | None = None) -> None:
        super().__init__()
        self.bits = bits
        self.grid = grid
        self.spec = grid_for(bits, grid)
        self.sparsity = sparsity
        self._nm = parse_sparsity(sparsity)

    def _quantize(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor | None]:
        """``(x_q float32, sigma (..., 1), keep mask or None)`` for the forward value and the masks."""
        keep = None
        n, m = self._nm if self._nm is not None else (1, 1)
        if self._nm is not None:
            keep = nm_mask(x, n, m)
            x = x.detach().float() * keep
        if isinstance(self.spec, Codebook):
            sigma = _rms(x, 1.0 if keep is None else n / m)
            xq = codebook_quantize(x, self.spec, sigma)
            sigma = sigma.unsqueeze(-1)
        else:
            if keep is None:
                step = rms_step(x, self.spec)
            else:  # the step of the kept entries' RMS
                step = rms_step(x * (m / n) ** 0.5, self.spec)
            xq = grid_quantize(x, step, self.spec)
            sigma = (step * ((self.spec.levels - 1) / 2.0) / self.spec.alpha).unsqueeze(-1)
        if keep is not None:
            xq = xq * keep
        return xq, sigma, keep

    def extra_repr(self) -> str:
        """Bits and settings, for ``repr``."""
        extra = "" if self.grid == "uniform" else f", grid={self.grid!r}"
        extra += "" if self.sparsity is None else f", sparsity={self.sparsity!r}"
        return f"bits={self.bits!r}{extra}"


class STEQuantizer(Quantizer):
    """RMS-scaled MSE-optimal grid; straight-through (identity) backward."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """Fake-quantize ``x`` over its last dimension (same shape and dtype)."""
        _check_input(x)
        xq, _, keep = self._quantize(x)
        return _Straight.apply(x, xq, None if keep is None else keep.to(x.dtype))


class _MaskedQuantizer(Quantizer):
    """Forward ``x_q``; backward ``grad * mask`` with a 0/1 ``mask`` chosen by the subclass."""

    def _mask(self, x: torch.Tensor, xq: torch.Tensor, sigma: torch.Tensor) -> torch.Tensor:
        raise TypeError(f"{type(self).__name__} does not define a gradient mask")

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """Fake-quantize ``x`` over its last dimension (same shape and dtype)."""
        _check_input(x)
        xq, sigma, keep = self._quantize(x)
        mask = self._mask(x.detach().float(), xq, sigma)
        if keep is not None:  # trust (or clip) on the kept entries, zero on the pruned ones
            mask = mask & keep
        mask = mask.to(x.dtype)
        self.masked_fraction_ = 1.0 - mask.mean().detach()
        return _Straight.apply(x, xq, mask)


class TrustQuantizer(_MaskedQuantizer):
    """QuEST: grid forward, trust backward ``mask = |x_q - x| <= trust * sigma``.

    ``trust`` is in units of the row RMS ``sigma``; ``None`` takes the paper's default, half a grid
    step (``alpha_b / (2**b - 1)``), which masks only outliers beyond the clip value plus half a step.
    ``math.inf`` turns the estimator into plain STE. ``masked_fraction_`` holds the share of entries
    whose gradient the last forward zeroed.
    """

    def __init__(self, bits: int | str = 4, *, trust: float | None = None, grid: str = "uniform",
                 sparsity: str | None = None) -> None:
        super().__init__(bits, grid=grid, sparsity=sparsity)
        if trust is not None and not (isinstance(trust, (int, float)) and trust > 0):
            raise ValueError(f"trust must be a positive number (sigma units), math.inf, or None, got {trust!r}")
        self.trust = float(trust) if trust is not None else self.spec.default_trust

    def _mask(self, x: torch.Tensor, xq: torch.Tensor, sigma: torch.Tensor) -> torch.Tensor:
        return (xq - x).abs() <= self.trust * sigma

    def extra_repr(self) -> str:
        """Bits and settings, for ``repr``."""
        return f"{super().extra_repr()}, trust={self.trust:.4g}"


class ClipSTEQuantizer(_MaskedQuantizer):
    """Grid forward; STE backward inside ``|x| <= clip_scale * s`` (``s = alpha_b * sigma``), zero outside."""

    def __init__(self, bits: int | str = 4, *, clip_scale: float = 1.0, grid: str = "uniform",
                 sparsity: str | None = None) -> None:
        super().__init__(bits, grid=grid, sparsity=sparsity)
        if not (isinstance(clip_scale, (int, float)) and clip_scale > 0):
            raise ValueError(f"clip_scale must be a positive number, got {clip_scale!r}")
        self.clip_scale = float(clip_scale)

    def _mask(self, x: torch.Tensor, xq: torch.Tensor, sigma: torch.Tensor) -> torch.Tensor:
        return x.abs() <= self.clip_scale * self.spec.alpha * sigma

    def extra_repr(self) -> str:
        """Bits and settings, for ``repr``."""
        return f"{super().extra_repr()}, clip_scale={self.clip_scale:.4g}"


class _LearnedQuantizer(Quantizer):
    """A learned per-row (``rows`` > 1) or per-tensor (``rows`` = 1) parameter, set from the first batch."""

    def __init__(self, bits: int | str = 4, *, rows: int = 1) -> None:
        super().__init__(bits)
        if isinstance(rows, bool) or not isinstance(rows, int) or rows < 1:
            raise ValueError(f"rows must be a positive int, got {rows!r}")
        self.rows = rows
        self.value = nn.Parameter(torch.ones(rows))
        self.register_buffer("initialized", torch.zeros((), dtype=torch.bool))
        if not isinstance(self.spec, GridSpec):  # learned scales live on the uniform grid
            raise ValueError(f"{type(self).__name__} learns its scale on the uniform grid, not a codebook")
        self.uniform: GridSpec = self.spec

    initialized: torch.Tensor

    def _init_value(self, x: torch.Tensor) -> torch.Tensor:
        raise TypeError(f"{type(self).__name__} does not define an initial value")

    def _shaped(self, x: torch.Tensor) -> torch.Tensor:
        if self.rows == 1:
            return self.value.reshape([1] * x.ndim)
        if x.ndim != 2 or x.shape[0] != self.rows:
            raise ValueError(f"{type(self).__name__} has {self.rows} per-row values but got shape {tuple(x.shape)}")
        return self.value.reshape(self.rows, 1)

    def _maybe_init(self, x: torch.Tensor) -> None:
        if bool(self.initialized):
            return
        with torch.no_grad():
            rms = x.detach().float().pow(2).mean(dim=-1).sqrt().reshape(-1)
            if self.rows == 1:
                rms = rms.mean().reshape(1)
            elif rms.numel() != self.rows:
                raise ValueError(f"{type(self).__name__} has {self.rows} per-row values but got shape "
                                 f"{tuple(x.shape)}")
            init = self._init_value(rms)
            # data-parallel ranks see different batches; start every replica from the same value
            if torch.distributed.is_available() and torch.distributed.is_initialized():
                torch.distributed.all_reduce(init)
                init /= torch.distributed.get_world_size()
            self.value.copy_(init)
            self.initialized.fill_(True)


def _round_ste(x: torch.Tensor) -> torch.Tensor:
    return x + (torch.round(x) - x).detach()


def _grad_scale(x: torch.Tensor, scale: float) -> torch.Tensor:
    return (x - x * scale).detach() + x * scale


class LSQQuantizer(_LearnedQuantizer):
    """LSQ (Esser et al. 2020) on the QuEST grid, with a learned step ``value``.

    The step's gradient is scaled by ``1 / sqrt(numel_per_step * q_max)``; it is initialised to the
    ``alpha_b * rms`` step.
    """

    def _init_value(self, rms: torch.Tensor) -> torch.Tensor:
        return rms * self.uniform.step_in_sigma + 1e-8

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """Fake-quantize ``x`` over its last dimension (same shape and dtype)."""
        _check_input(x)
        self._maybe_init(x)
        q_max = max(self.uniform.index_max, 1)
        g = 1.0 / math.sqrt(x.numel() / self.rows * q_max)
        step = _grad_scale(self._shaped(x).abs() + 1e-8, g).to(x.dtype)
        off = self.uniform.offset
        codes = _round_ste(torch.clamp(x / step - off, self.uniform.index_min, self.uniform.index_max))
        return (codes + off) * step


class PACTQuantizer(_LearnedQuantizer):
    """PACT (Choi et al. 2018), symmetric, with a learned clip value ``value`` (init ``alpha_b * rms``).

    ``d out / d clip = sign(x)`` outside the clip range, STE inside.
    """

    def _init_value(self, rms: torch.Tensor) -> torch.Tensor:
        return rms * self.uniform.alpha + 1e-8

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """Fake-quantize ``x`` over its last dimension (same shape and dtype)."""
        _check_input(x)
        self._maybe_init(x)
        clip = self._shaped(x).abs().to(x.dtype) + 1e-8
        clipped = torch.minimum(torch.maximum(x, -clip), clip)
        step = (clip.detach().float() * (self.uniform.step_in_sigma / self.uniform.alpha)).expand(*x.shape[:-1], 1)
        return _Straight.apply(clipped, grid_quantize(clipped, step.squeeze(-1), self.uniform), None)


def make_quantizer(method: str, bits: int | str, *, rows: int = 1, trust: float | None = None,
                   clip_scale: float = 1.0, grid: str = "uniform", sparsity: str | None = None) -> Quantizer:
    """Build the quantizer of ``method`` (one of :data:`METHODS`) for ``bits``.

    ``rows``: number of learned values for ``lsq``/``pact`` (output rows for weights, 1 for activations).
    ``grid`` and ``sparsity`` (see :class:`Quantizer`) apply to the RMS-grid methods quest/ste/clip_ste.
    """
    if method in ("lsq", "pact") and (grid != "uniform" or sparsity is not None):
        raise ValueError(f"method {method!r} learns its own scale on the uniform grid: grid must be 'uniform' and "
                         f"sparsity None, got grid={grid!r}, sparsity={sparsity!r}")
    if method == "quest":
        return TrustQuantizer(bits, trust=trust, grid=grid, sparsity=sparsity)
    if method == "ste":
        return STEQuantizer(bits, grid=grid, sparsity=sparsity)
    if method == "clip_ste":
        return ClipSTEQuantizer(bits, clip_scale=clip_scale, grid=grid, sparsity=sparsity)
    if method == "lsq":
        return LSQQuantizer(bits, rows=rows)
    if method == "pact":
        return PACTQuantizer(bits, rows=rows)
    raise ValueError(f"method must be one of {METHODS}, got {method!r}")
