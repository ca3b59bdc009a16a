"""Kernels with a Triton implementation and a pure-torch reference (needs ``icml25-shared[torch]``).

>>> import torch
>>> from icml25_shared.kernels import hadamard_transform
>>> hadamard_transform(torch.ones(1, 4), normalize=False)
tensor([[4., 0., 0., 0.]])
"""

from icml25_shared.kernels.dispatch import (
    BACKENDS,
    Kernel,
    selected_backend,
    triton_available,
    triton_interpret,
    use_backend,
)
from icml25_shared.kernels.hadamard import hadamard_reference, hadamard_transform

__all__ = [
    "BACKENDS",
    "Kernel",
    "hadamard_reference",
    "hadamard_transform",
    "selected_backend",
    "triton_available",
    "triton_interpret",
    "use_backend",
]
