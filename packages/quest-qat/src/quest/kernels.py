"""INT4 kernels of the QuEST inference path, each a Triton kernel with a pure-torch reference.

All act on 2-D row-major operands, one quantisation group per row (a token of activations or an
output row of weights), over the input dimension ``K``:

- :func:`find_scale`: per-row grid step ``step = 2 (alpha * rms(row) + 1e-8) / (levels - 1)``.
- :func:`quantize_int4`: codes ``q = clamp(floor(x / step), -8, 7)``, packed two per byte
  (``byte j = (q[2j+1] << 4) | (q[2j] & 0xF)``) plus the int32 row sums of ``q``. A code stands for
  ``(q + 1/2) * step``, the 16-point QuEST grid.
- :func:`int_matmul`: ``A @ B^T`` of int8 codes into int32 (the integer GEMM; a CPU reference).
- :func:`int4_gemm`: the packed-INT4 GEMM with the dequantising epilogue fused: both operands stay
  packed two codes per byte, the products accumulate in int32, and each output tile is dequantised
  before it is stored (the official CUTLASS kernel's contract). :func:`int4_matmul` returns the int32
  accumulator alone. The Triton kernel unpacks nibbles in registers and runs two int8 ``tl.dot``
  per K tile (low nibbles, high nibbles); its float64 epilogue performs the torch reference's
  operations in the same order, so both backends return bit-identical float32 results.
- :func:`dequant_epilogue`: turns the integer accumulator into the float product of the dequantised
  operands, ``(2 C + rowsum_a + rowsum_w + K/2) * 0.5 * step_a * step_w``, which removes the +1/2
  offsets exactly because ``sum_k (qa + 1/2)(qw + 1/2) = C + (rowsum_a + rowsum_w)/2 + K/4``. The
  torch reference scales in float64 and rounds once (the correctly rounded float32 product); the
  Triton kernel scales in float32 (two roundings, within 2 ulp).

Triton runs on CUDA tensors, or on CPU under ``TRITON_INTERPRET=1`` (float32/float16 there); the
dispatcher of :mod:`quest._kernels` picks the backend (``backend=`` forces one).
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from quest._kernels import Kernel, triton_available
from quest.grids import grid_spec

__all__ = [
    "EPS",
    "PackedInt4",
    "dequant_epilogue",
    "dequantize_int4",
    "find_scale",
    "int4_gemm",
    "int4_matmul",
    "int_matmul",
    "quantize_int4",
    "unpack_int4",
]

EPS = 1e-8  # keeps the step positive on an all-zero row
INT4_MIN, INT4_MAX = -8, 7


@dataclass(frozen=True)
class PackedInt4:
    """INT4 codes of a ``(M, K)`` matrix: ``packed`` uint8 ``(M, K // 2)``, ``row_sum`` int32 ``(M,)``."""

    packed: torch.Tensor
    row_sum: torch.Tensor


def _as_rows(x: torch.Tensor, what: str) -> None:
    if x.ndim != 2:
        raise ValueError(f"{what} must be 2-D (rows, K), got shape {tuple(x.shape)}")
    if not x.is_floating_point():
        raise TypeError(f"{what} must be a floating-point tensor, got {x.dtype}")


def _float_rows(x: torch.Tensor) -> bool:
    return x.dtype in (torch.float32, torch.float16) or (x.device.type == "cuda" and x.dtype == torch.bfloat16)


# ---------------------------------------------------------------- torch references


def _find_scale_torch(x: torch.Tensor, alpha: float, levels: int) -> torch.Tensor:
    rms = x.float().pow(2).mean(dim=-1).sqrt()
    return 2.0 * (alpha * rms + EPS) / (levels - 1)


def _quantize_int4_torch(x: torch.Tensor, step: torch.Tensor) -> PackedInt4:
    q = torch.clamp(torch.floor(x.float() / step.float().unsqueeze(-1)), INT4_MIN, INT4_MAX).to(torch.int32)
    packed = ((q[:, 1::2] & 0xF) << 4) | (q[:, 0::2] & 0xF)
    return PackedInt4(packed.to(torch.uint8), q.sum(dim=-1, dtype=torch.int32))


def _epilogue_torch(acc: torch.Tensor, row_sum_a: torch.Tensor, row_sum_w: torch.Tensor, step_a: torch.Tensor,
                    step_w: torch.Tensor, k: int) -> torch.Tensor:
    total = 2 * acc + row_sum_a.unsqueeze(1) + row_sum_w.unsqueeze(0) + k // 2
    # float64: the exact integer times the two float32 steps, rounded once to float32
    out = total.to(torch.float64) * 0.5 * step_a.double().unsqueeze(1) * step_w.double().unsqueeze(0)
    return out.to(torch.float32)


# ---------------------------------------------------------------- Triton kernels

_find_scale_triton = _quantize_int4_triton = _epilogue_triton = _int4_gemm_triton = None
GEMM_BLOCKS = (32, 32, 32)  # BLOCK_M, BLOCK_N, BLOCK_K (packed bytes: 64 codes) of the Triton INT4 GEMM
if triton_available(None) or triton_available("cuda"):
    try:
        import triton
        import triton.language as tl
    except ImportError:  # pragma: no cover - find_spec said yes but the import failed
        triton = None

    if triton is not None:

        @triton.jit
        def _find_scale_rows(x_ptr, out_ptr, stride, K, alpha, eps, levels_m1, BLOCK: tl.constexpr):
            row = tl.program_id(0)
            acc = tl.zeros([BLOCK], dtype=tl.float32)
            for start in range(0, K, BLOCK):
                cols = start + tl.arange(0, BLOCK)
                x = tl.load(x_ptr + row * stride + cols, mask=cols < K, other=0.0).to(tl.float32)
                acc += x * x
            rms = tl.sqrt_rn(tl.sum(acc, axis=0) / K)
            tl.store(out_ptr + row, 2.0 * (alpha * rms + eps) / levels_m1)

        @triton.jit
        def _quantize_int4_rows(x_ptr, step_ptr, out_ptr, sum_ptr, stride, K_HALF, BLOCK: tl.constexpr):
            row = tl.program_id(0)
            step = tl.load(step_ptr + row).to(tl.float32)
            acc = tl.zeros([BLOCK], dtype=tl.int32)
            for start in range(0, K_HALF, BLOCK):
                j = start + tl.arange(0, BLOCK)
                valid = j < K_HALF
                lo = tl.load(x_ptr + row * stride + 2 * j, mask=valid, other=0.0).to(tl.float32)
                hi = tl.load(x_ptr + row * stride + 2 * j + 1, mask=valid, other=0.0).to(tl.float32)
                q_lo = tl.minimum(tl.maximum(tl.floor(tl.div_rn(lo, step)), -8.0), 7.0).to(tl.int32)
                q_hi = tl.minimum(tl.maximum(tl.floor(tl.div_rn(hi, step)), -8.0), 7.0).to(tl.int32)
                byte = ((q_hi & 0xF) << 4) | (q_lo & 0xF)
                tl.store(out_ptr + row * K_HALF + j, byte.to(tl.uint8), mask=valid)
                acc += tl.where(valid, q_lo + q_hi, 0)
            tl.store(sum_ptr + row, tl.sum(acc, axis=0))

        @triton.jit
        def _epilogue_tiles(acc_ptr, ra_ptr, rw_ptr, sa_ptr, sw_ptr, out_ptr, M, N, half_k,
                            BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
            rows = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)
            cols = tl.program_id(1) * BLOCK_N + tl.arange(0, BLOCK_N)
            rmask, cmask = rows < M, cols < N
            mask = rmask[:, None] & cmask[None, :]
            acc = tl.load(acc_ptr + rows[:, None] * N + cols[None, :], mask=mask, other=0)
            ra = tl.load(ra_ptr + rows, mask=rmask, other=0)
            rw = tl.load(rw_ptr + cols, mask=cmask, other=0)
            sa = tl.load(sa_ptr + rows, mask=rmask, other=0.0)
            sw = tl.load(sw_ptr + cols, mask=cmask, other=0.0)
            total = (2 * acc + ra[:, None] + rw[None, :] + half_k).to(tl.float32)
            out = total * 0.5 * sa[:, None] * sw[None, :]
            tl.store(out_ptr + rows[:, None] * N + cols[None, :], out, mask=mask)

        @triton.jit
        def _int4_gemm_tiles(a_ptr, w_ptr, ra_ptr, rw_ptr, sa_ptr, sw_ptr, out_ptr, M, N, K_HALF, half_k,
                             stride_a, stride_w, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
                             BLOCK_K: tl.constexpr, EPILOGUE: tl.constexpr):
            rows = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)
            cols = tl.program_id(1) * BLOCK_N + tl.arange(0, BLOCK_N)
            rmask, cmask = rows < M, cols < N
            acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.int32)
            for start in range(0, K_HALF, BLOCK_K):
                kk = start + tl.arange(0, BLOCK_K)
                kmask = kk < K_HALF
                # a zero byte (masked tail) holds two zero codes and adds nothing
                a = tl.load(a_ptr + rows[:, None] * stride_a + kk[None, :], mask=rmask[:, None] & kmask[None, :],
                            other=0).to(tl.int32)
                w = tl.load(w_ptr + cols[:, None] * stride_w + kk[None, :], mask=cmask[:, None] & kmask[None, :],
                            other=0).to(tl.int32)
                # sign-extend the nibbles: ((v & 0xF) ^ 8) - 8 maps 0..15 to 0..7, -8..-1
                a_lo = (((a & 0xF) ^ 8) - 8).to(tl.int8)
                a_hi = ((((a >> 4) & 0xF) ^ 8) - 8).to(tl.int8)
                w_lo = (((w & 0xF) ^ 8) - 8).to(tl.int8)
                w_hi = ((((w >> 4) & 0xF) ^ 8) - 8).to(tl.int8)
                # sum_k a_k w_k over a byte pair = lo * lo + hi * hi: no interleaving needed
                acc += tl.dot(a_lo, tl.trans(w_lo), out_dtype=tl.int32)
                acc += tl.dot(a_hi, tl.trans(w_hi), out_dtype=tl.int32)
            omask = rmask[:, None] & cmask[None, :]
            if EPILOGUE:
                ra = tl.load(ra_ptr + rows, mask=rmask, other=0)
                rw = tl.load(rw_ptr + cols, mask=cmask, other=0)
                sa = tl.load(sa_ptr + rows, mask=rmask, other=0.0).to(tl.float64)
                sw = tl.load(sw_ptr + cols, mask=cmask, other=0.0).to(tl.float64)
                total = (2 * acc + ra[:, None] + rw[None, :] + half_k).to(tl.float64)
                out = total * 0.5 * sa[:, None] * sw[None, :]  # the reference's operations, same order
                tl.store(out_ptr + rows[:, None] * N + cols[None, :], out.to(tl.float32), mask=omask)
            else:
                tl.store(out_ptr + rows[:, None] * N + cols[None, :], acc, mask=omask)

        def _int4_gemm_triton(packed_a: torch.Tensor, packed_w: torch.Tensor, row_sum_a: torch.Tensor | None,
                              row_sum_w: torch.Tensor | None, step_a: torch.Tensor | None,
                              step_w: torch.Tensor | None) -> torch.Tensor:
            a, w = packed_a.contiguous(), packed_w.contiguous()
            m, n, k_half = a.shape[0], w.shape[0], a.shape[1]
            epilogue = step_a is not None
            out = torch.empty((m, n), dtype=torch.float32 if epilogue else torch.int32, device=a.device)
            if m and n:
                bm, bn, bk = GEMM_BLOCKS
                if epilogue:
                    assert row_sum_a is not None and row_sum_w is not None and step_a is not None and step_w is not None
                    extra = (row_sum_a.to(torch.int32).contiguous(), row_sum_w.to(torch.int32).contiguous(),
                             step_a.float().contiguous(), step_w.float().contiguous())
                else:
                    zero = torch.zeros(1, dtype=torch.int32, device=a.device)
                    extra = (zero, zero, zero.float(), zero.float())
                grid = (triton.cdiv(m, bm), triton.cdiv(n, bn))
                _int4_gemm_tiles[grid](a, w, *extra, out, m, n, k_half, k_half, a.stride(0), w.stride(0),
                                       BLOCK_M=bm, BLOCK_N=bn, BLOCK_K=bk, EPILOGUE=epilogue)
            elif epilogue is False:
                out.zero_()
            return out

        def _find_scale_triton(x: torch.Tensor, alpha: float, levels: int) -> torch.Tensor:
            x = x.contiguous()
            out = torch.empty(x.shape[0], dtype=torch.float32, device=x.device)
            if x.shape[0]:
                block = min(1024, triton.next_power_of_2(max(x.shape[1], 1)))
                _find_scale_rows[(x.shape[0],)](x, out, x.stride(0), x.shape[1], float(alpha), EPS,
                                                float(levels - 1), BLOCK=block)
            return out

        def _quantize_int4_triton(x: torch.Tensor, step: torch.Tensor) -> PackedInt4:
            x = x.contiguous()
            m, k = x.shape
            packed = torch.empty((m, k // 2), dtype=torch.uint8, device=x.device)
            sums = torch.empty(m, dtype=torch.int32, device=x.device)
            if m:
                block = min(512, triton.next_power_of_2(max(k // 2, 1)))
                _quantize_int4_rows[(m,)](x, step.float().contiguous(), packed, sums, x.stride(0), k // 2,
                                          BLOCK=block)
            return PackedInt4(packed, sums)

        def _epilogue_triton(acc: torch.Tensor, row_sum_a: torch.Tensor, row_sum_w: torch.Tensor,
                             step_a: torch.Tensor, step_w: torch.Tensor, k: int) -> torch.Tensor:
            acc = acc.contiguous()
            m, n = acc.shape
            out = torch.empty((m, n), dtype=torch.float32, device=acc.device)
            if m and n:
                grid = (triton.cdiv(m, 32), triton.cdiv(n, 32))
                _epilogue_tiles[grid](acc, row_sum_a.contiguous(), row_sum_w.contiguous(),
                                      step_a.float().contiguous(), step_w.float().contiguous(), out, m, n, k // 2,
                                      BLOCK_M=32, BLOCK_N=32)
            return out


find_scale_kernel = Kernel("quest.find_scale", reference=_find_scale_torch, triton=_find_scale_triton,
                           supports=_float_rows)
quantize_int4_kernel = Kernel("quest.quantize_int4", reference=_quantize_int4_torch, triton=_quantize_int4_triton,
                              supports=_float_rows)
epilogue_kernel = Kernel("quest.dequant_epilogue", reference=_epilogue_torch, triton=_epilogue_triton)


def _int4_gemm_torch(packed_a: torch.Tensor, packed_w: torch.Tensor, row_sum_a: torch.Tensor | None,
                     row_sum_w: torch.Tensor | None, step_a: torch.Tensor | None,
                     step_w: torch.Tensor | None) -> torch.Tensor:
    acc = int_matmul(unpack_int4(packed_a), unpack_int4(packed_w))
    if step_a is None:
        return acc
    assert row_sum_a is not None and row_sum_w is not None and step_w is not None  # given together with step_a
    return _epilogue_torch(acc, row_sum_a.to(torch.int32), row_sum_w.to(torch.int32), step_a, step_w,
                           2 * packed_a.shape[1])


int4_gemm_kernel = Kernel("quest.int4_gemm", reference=_int4_gemm_torch, triton=_int4_gemm_triton)


# ---------------------------------------------------------------- public functions


def find_scale(x: torch.Tensor, *, bits: int | str = 4, backend: str | None = None) -> torch.Tensor:
    """Per-row QuEST grid step of ``x`` (shape ``(M, K)``) -> float32 ``(M,)``.

    ``step = 2 (alpha_bits * rms + 1e-8) / (levels - 1)`` with ``rms = sqrt(mean(x^2))`` over the row.
    """
    _as_rows(x, "x")
    spec = grid_spec(bits)
    return find_scale_kernel(x, spec.alpha, spec.levels, backend=backend)


def quantize_int4(x: torch.Tensor, step: torch.Tensor, *, backend: str | None = None) -> PackedInt4:
    """INT4 codes ``clamp(floor(x / step), -8, 7)`` of ``x`` (``(M, K)``, ``K`` even), packed, with row sums."""
    _as_rows(x, "x")
    if x.shape[1] % 2:
        raise ValueError(f"K must be even to pack two INT4 codes per byte, got K={x.shape[1]}")
    if step.shape != (x.shape[0],):
        raise ValueError(f"step must have shape ({x.shape[0]},) (one per row), got {tuple(step.shape)}")
    return quantize_int4_kernel(x, step, backend=backend)


def unpack_int4(packed: torch.Tensor) -> torch.Tensor:
    """Inverse of the packing: uint8 ``(M, K // 2)`` -> int8 codes ``(M, K)`` in [-8, 7]."""
    if packed.dtype != torch.uint8:
        raise TypeError(f"packed must be uint8, got {packed.dtype}")
    b = packed.to(torch.int16)
    lo, hi = b & 0xF, b >> 4
    codes = torch.stack((lo, hi), dim=-1).reshape(*packed.shape[:-1], 2 * packed.shape[-1])
    return torch.where(codes >= 8, codes - 16, codes).to(torch.int8)


def dequantize_int4(packed: PackedInt4 | torch.Tensor, step: torch.Tensor) -> torch.Tensor:
    """Grid values ``(q + 1/2) * step`` (float32, ``(M, K)``) of packed codes."""
    data = packed.packed if isinstance(packed, PackedInt4) else packed
    return (unpack_int4(data).to(torch.float32) + 0.5) * step.float().unsqueeze(-1)


def int_matmul(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """``a @ b.T`` for integer codes ``a`` ``(M, K)`` and ``b`` ``(N, K)`` -> exact int32 ``(M, N)``.

    CPU: int32 matmul. CUDA: ``torch._int_mm`` on int8 where its shape rules allow, else a float64
    product (exact for INT4 codes while K < 2**45).
    """
    if a.ndim != 2 or b.ndim != 2 or a.shape[1] != b.shape[1]:
        raise ValueError(f"need (M, K) and (N, K) with the same K, got {tuple(a.shape)} and {tuple(b.shape)}")
    if a.device.type == "cuda":
        m, k = a.shape
        if m > 16 and k % 8 == 0 and b.shape[0] % 8 == 0:
            try:
                return torch._int_mm(a.to(torch.int8).contiguous(), b.to(torch.int8).t())
            except RuntimeError:  # shape/layout rules of _int_mm differ across torch versions and GPUs
                pass
        return (a.double() @ b.double().t()).round().to(torch.int32)
    return a.to(torch.int32) @ b.to(torch.int32).t()


def _check_packed(packed_a: torch.Tensor, packed_w: torch.Tensor) -> None:
    for name, t in (("packed_a", packed_a), ("packed_w", packed_w)):
        if t.dtype != torch.uint8 or t.ndim != 2:
            raise ValueError(f"{name} must be a 2-D uint8 tensor of packed INT4 codes, got {t.dtype} {tuple(t.shape)}")
    if packed_a.shape[1] != packed_w.shape[1]:
        raise ValueError(f"packed_a {tuple(packed_a.shape)} and packed_w {tuple(packed_w.shape)} must have the same "
                         "number of bytes per row (K / 2)")


def int4_matmul(packed_a: torch.Tensor, packed_w: torch.Tensor, *, backend: str | None = None) -> torch.Tensor:
    """Exact int32 ``A @ W^T`` of packed INT4 codes: uint8 ``(M, K/2)`` and ``(N, K/2)`` -> ``(M, N)``.

    Examples
    --------
    >>> import torch
    >>> from quest.kernels import find_scale, int4_matmul, quantize_int4, unpack_int4
    >>> x = torch.randn(3, 8, generator=torch.Generator().manual_seed(0))
    >>> codes = quantize_int4(x, find_scale(x)).packed
    >>> q = unpack_int4(codes).int()
    >>> torch.equal(int4_matmul(codes, codes, backend="torch"), q @ q.T)
    True
    """
    _check_packed(packed_a, packed_w)
    return int4_gemm_kernel(packed_a, packed_w, None, None, None, None, backend=backend)


def int4_gemm(a: PackedInt4, step_a: torch.Tensor, w: PackedInt4, step_w: torch.Tensor, *,
              backend: str | None = None) -> torch.Tensor:
    """Float32 ``(M, N)`` product of the dequantised INT4 operands ``a`` (``(M, K)``) and ``w`` (``(N, K)``).

    Equals ``dequant_epilogue(int4_matmul(a, w), ...)``: the integer GEMM with the epilogue fused, on
    packed operands. Both backends give bit-identical results.
    """
    _check_packed(a.packed, w.packed)
    m, n = a.packed.shape[0], w.packed.shape[0]
    for name, t, size in (("a.row_sum", a.row_sum, m), ("step_a", step_a, m), ("w.row_sum", w.row_sum, n),
                          ("step_w", step_w, n)):
        if t.shape != (size,):
            raise ValueError(f"{name} must have shape ({size},), got {tuple(t.shape)}")
    return int4_gemm_kernel(a.packed, w.packed, a.row_sum, w.row_sum, step_a, step_w, backend=backend)


def dequant_epilogue(acc: torch.Tensor, row_sum_a: torch.Tensor, row_sum_w: torch.Tensor, step_a: torch.Tensor,
                     step_w: torch.Tensor, k: int, *, backend: str | None = None) -> torch.Tensor:
    """Float32 ``(M, N)`` product of the dequantised operands from the int32 accumulator ``acc = qa @ qw^T``."""
    if acc.dtype != torch.int32 or acc.ndim != 2:
        raise ValueError(f"acc must be a 2-D int32 tensor, got {acc.dtype} {tuple(acc.shape)}")
    m, n = acc.shape
    for name, t, size in (("row_sum_a", row_sum_a, m), ("step_a", step_a, m), ("row_sum_w", row_sum_w, n),
                          ("step_w", step_w, n)):
        if t.shape != (size,):
            raise ValueError(f"{name} must have shape ({size},), got {tuple(t.shape)}")
    if k % 2:
        raise ValueError(f"K must be even, got {k}")
    return epilogue_kernel(acc, row_sum_a.to(torch.int32), row_sum_w.to(torch.int32), step_a, step_w, k,
                           backend=backend)
