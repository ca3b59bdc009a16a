"""Block-diagonal Hadamard rotation along the last dimension, differentiable on every backend.

``block_hadamard(x, block)`` multiplies each contiguous group of ``block`` features by the
orthonormal Sylvester Hadamard matrix ``H`` (``H H^T = I``, ``H = H^T``), i.e. ``x @ blockdiag(H, ...)``.
The transform is :func:`quest._kernels.hadamard_transform` (Triton where it can run, the
torch butterfly otherwise). The butterfly is elementwise, so a token's rotation does not depend on
the batch it sits in (a dense ``x @ H`` GEMM would change its rounding with the batch shape, which
flips quantization codes between data-parallel ranks and between fake-quant and INT4 runs). The
backward is the same rotation because ``H`` is symmetric and orthonormal.
"""

from __future__ import annotations

import torch

from quest._kernels import hadamard_transform

__all__ = ["block_hadamard", "check_block", "hadamard_matrix"]


def check_block(block: int) -> int:
    """Validate a Hadamard block size (a power of two >= 2) and return it."""
    if isinstance(block, bool) or not isinstance(block, int) or block < 2 or block & (block - 1):
        raise ValueError(f"block must be a power of two >= 2 (e.g. 64, 128), got {block!r}")
    return block


def _rotate(x: torch.Tensor, block: int) -> torch.Tensor:
    k = x.shape[-1]
    groups = x.reshape(*x.shape[:-1], k // block, block)
    return hadamard_transform(groups.contiguous()).reshape(x.shape)


class _BlockHadamard(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x: torch.Tensor, block: int) -> torch.Tensor:
        ctx.block = block
        return _rotate(x, block)

    @staticmethod
    def backward(ctx, grad: torch.Tensor):
        return _rotate(grad, ctx.block), None


def block_hadamard(x: torch.Tensor, block: int = 128) -> torch.Tensor:
    """Rotate ``x`` (shape ``(..., K)``) by ``blockdiag(H_block, ...)``; ``K`` must be a multiple of ``block``.

    The rotation is its own inverse, so ``block_hadamard(block_hadamard(x)) == x`` up to rounding.
    """
    check_block(block)
    k = x.shape[-1]
    if k % block:
        raise ValueError(f"the last dimension ({k}) must be a multiple of the Hadamard block ({block})")
    return _BlockHadamard.apply(x, block)


def hadamard_matrix(n: int, *, dtype: torch.dtype = torch.float64) -> torch.Tensor:
    """The orthonormal ``n x n`` Sylvester Hadamard matrix (``n`` a power of two)."""
    check_block(n)
    return hadamard_transform(torch.eye(n, dtype=dtype), backend="torch")
