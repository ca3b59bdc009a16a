"""Fast Walsh-Hadamard transform along the last dimension (Sylvester/natural order).

``hadamard_transform(x)`` equals ``x @ scipy.linalg.hadamard(n).T / sqrt(n)`` (``H`` is symmetric, so
also ``(H @ x[..., None])[..., 0] / sqrt(n)``) with ``n = x.shape[-1]`` a power of two, in
O(n log n) operations: log2(n) butterfly stages. ``normalize=False`` drops the ``1/sqrt(n)``.
"""

from __future__ import annotations

import math

import torch

from quest._kernels.dispatch import Kernel, triton_available

__all__ = ["hadamard_reference", "hadamard_transform", "MAX_TRITON_N"]

MAX_TRITON_N = 1 << 14  # one row lives in registers; longer rows use the torch path


def _check_length(n: int) -> int:
    if n < 1 or n & (n - 1):
        raise ValueError(f"the last dimension must be a power of two (1, 2, 4, ...), got {n}")
    return n.bit_length() - 1


def hadamard_reference(x: torch.Tensor, normalize: bool = True) -> torch.Tensor:
    """Pure-torch butterfly transform; any float dtype and device."""
    n = x.shape[-1]
    log_n = _check_length(n)
    batch = x.shape[:-1]
    out = x.reshape(-1, n)
    h = 1
    for _ in range(log_n):
        pairs = out.view(-1, n // (2 * h), 2, h)
        out = torch.stack((pairs[:, :, 0] + pairs[:, :, 1], pairs[:, :, 0] - pairs[:, :, 1]), dim=2)
        out = out.view(-1, n)
        h *= 2
    if normalize:
        out = out * (1.0 / math.sqrt(n))
    return out.reshape(*batch, n)


_TRITON_DTYPES = {torch.float32, torch.float16}


def _triton_supports(x: torch.Tensor) -> bool:
    n = x.shape[-1]
    dtypes = _TRITON_DTYPES | ({torch.bfloat16} if x.device.type == "cuda" else set())
    return x.dtype in dtypes and 1 < n <= MAX_TRITON_N and n & (n - 1) == 0


_triton_impl = None
if triton_available(None) or triton_available("cuda"):
    try:
        import triton
        import triton.language as tl
    except ImportError:  # pragma: no cover - find_spec said yes but the import failed
        triton = None

    if triton is not None:

        @triton.jit
        def _fwht_rows(x_ptr, out_ptr, row_stride, scale, N: tl.constexpr, LOG_N: tl.constexpr):
            row = tl.program_id(0)
            offsets = tl.arange(0, N)
            x = tl.load(x_ptr + row * row_stride + offsets).to(tl.float32)
            for stage in tl.static_range(LOG_N):
                h: tl.constexpr = 1 << stage
                # (blocks, 2, h) -> pair element i with i + h inside each block of 2h
                x = tl.permute(tl.reshape(x, (N // (2 * h), 2, h)), (0, 2, 1))
                a, b = tl.split(x)
                x = tl.reshape(tl.permute(tl.join(a + b, a - b), (0, 2, 1)), (N,))
            tl.store(out_ptr + row * N + offsets, (x * scale).to(out_ptr.dtype.element_ty))

        def _triton_impl(x: torch.Tensor, normalize: bool = True) -> torch.Tensor:
            n = x.shape[-1]
            log_n = _check_length(n)
            rows = x.reshape(-1, n)
            if rows.stride(-1) != 1:
                rows = rows.contiguous()
            out = torch.empty((rows.shape[0], n), dtype=x.dtype, device=x.device)
            if rows.shape[0] > 0:
                scale = 1.0 / math.sqrt(n) if normalize else 1.0
                _fwht_rows[(rows.shape[0],)](rows, out, rows.stride(0), scale, N=n, LOG_N=log_n)
            return out.reshape(x.shape)


hadamard_kernel = Kernel("hadamard", reference=hadamard_reference, triton=_triton_impl, supports=_triton_supports)


def hadamard_transform(x: torch.Tensor, *, normalize: bool = True, backend: str | None = None) -> torch.Tensor:
    """Walsh-Hadamard transform of ``x`` along its last dimension (a power of two).

    ``normalize=True`` scales by ``1/sqrt(n)`` so the transform is orthonormal and its own inverse.
    ``backend``: "torch", "triton" or None (Triton where it can run, see :mod:`dispatch`).
    Returns a tensor of the same shape and dtype.
    """
    if not isinstance(x, torch.Tensor):
        raise TypeError(f"x must be a torch.Tensor, got {type(x).__name__}")
    if not x.is_floating_point():
        raise TypeError(f"x must be a floating-point tensor, got {x.dtype}")
    if x.ndim == 0:
        raise ValueError("x must have at least one dimension")
    _check_length(x.shape[-1])
    return hadamard_kernel(x, normalize=normalize, backend=backend)
