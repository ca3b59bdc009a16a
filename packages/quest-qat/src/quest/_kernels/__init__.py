"""Kernels with a Triton implementation and a pure-torch reference, and the dispatcher that picks one.

>>> import torch
>>> from quest._kernels import hadamard_transform
>>> hadamard_transform(torch.ones(1, 4), normalize=False)
tensor([[4., 0., 0., 0.]])
"""

from quest._kernels.dispatch import (
    BACKENDS,
    ENV_VAR,
    Kernel,
    selected_backend,
    triton_available,
    triton_interpret,
    use_backend,
)
from quest._kernels.hadamard import hadamard_reference, hadamard_transform

__all__ = [
    "BACKENDS",
    "ENV_VAR",
    "Kernel",
    "hadamard_reference",
    "hadamard_transform",
    "selected_backend",
    "triton_available",
    "triton_interpret",
    "use_backend",
]
