"""Choose between a Triton kernel and its pure-torch reference, once per call.

Triton runs where it can: a CUDA tensor with triton installed, or any tensor when
``TRITON_INTERPRET=1`` is set (the CPU interpreter; float32/float16 only). Everything else runs the
torch reference. Tests and users override the choice with :func:`use_backend` or the
``QUEST_KERNEL_BACKEND`` environment variable (``torch`` or ``triton``).

The override is a plain module-level flag (not a ``ContextVar``), so ``torch.compile`` traces a
kernel call without a graph break: dynamo guards on the flag's value and recompiles when
:func:`use_backend` changes it. The flag is process-wide: threads share it.
"""

from __future__ import annotations

import contextlib
import importlib.util
import os
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

__all__ = ["BACKENDS", "ENV_VAR", "Kernel", "triton_available", "triton_interpret", "use_backend", "selected_backend"]

BACKENDS = ("torch", "triton")
ENV_VAR = "QUEST_KERNEL_BACKEND"
_forced: str | None = None  # set by use_backend; a plain global that torch.compile can guard on
_TRITON_IMPORTABLE = importlib.util.find_spec("triton") is not None


def triton_interpret() -> bool:
    """True when Triton's CPU interpreter is switched on (must be set before kernels are defined)."""
    return os.environ.get("TRITON_INTERPRET", "0") == "1"


def _triton_importable() -> bool:
    return _TRITON_IMPORTABLE


def triton_available(device_type: str | None = None) -> bool:
    """Whether a Triton kernel can run for tensors on ``device_type`` ("cuda", "cpu" or None=any)."""
    if not _triton_importable():
        return False
    if triton_interpret():
        return True
    return device_type == "cuda" or (device_type is None and _cuda_available())


def _cuda_available() -> bool:
    import torch

    return torch.cuda.is_available()


@contextlib.contextmanager
def use_backend(backend: str | None) -> Iterator[None]:
    """Force every kernel call inside the block onto ``backend`` ("torch", "triton", or None = auto).

    Process-wide (a module-level flag, restored on exit, nestable); a compiled function that was
    traced under another setting recompiles.
    """
    global _forced
    if backend is not None and backend not in BACKENDS:
        raise ValueError(f"backend must be one of {BACKENDS} or None, got {backend!r}")
    previous, _forced = _forced, backend
    try:
        yield
    finally:
        _forced = previous


def selected_backend() -> str | None:
    """The forced backend (context manager first, then the environment variable), or None for auto."""
    if _forced is not None:
        return _forced
    env = os.environ.get(ENV_VAR, "").strip().lower() or None
    if env is not None and env not in BACKENDS:
        raise ValueError(f"{ENV_VAR} must be one of {BACKENDS}, got {env!r}")
    return env


@dataclass(frozen=True)
class Kernel:
    """A named operation with a torch reference and an optional Triton implementation.

    ``supports(tensor) -> bool`` says whether the Triton path handles an input (dtype, size); an
    unsupported input runs the reference unless Triton was forced, which raises instead.
    """

    name: str
    reference: Callable[..., Any]
    triton: Callable[..., Any] | None = None
    supports: Callable[[Any], bool] = lambda tensor: True

    def backend_for(self, tensor: Any, backend: str | None = None) -> str:
        """The backend a call on ``tensor`` will use."""
        choice = backend if backend is not None else selected_backend()
        if choice is not None and choice not in BACKENDS:
            raise ValueError(f"backend must be one of {BACKENDS} or None, got {choice!r}")
        if choice == "torch":
            return "torch"
        device_type = getattr(getattr(tensor, "device", None), "type", "cpu")
        runnable = self.triton is not None and triton_available(device_type) and self.supports(tensor)
        if choice == "triton" and not runnable:
            raise RuntimeError(
                f"kernel {self.name!r} was forced onto triton but cannot run there for a "
                f"{getattr(tensor, 'dtype', type(tensor))} tensor on {device_type} "
                f"(needs triton installed and a CUDA device or TRITON_INTERPRET=1, and a supported input)"
            )
        return "triton" if runnable else "torch"

    def __call__(self, tensor: Any, *args: Any, backend: str | None = None, **kwargs: Any) -> Any:
        """Run the implementation :meth:`backend_for` picks on ``tensor`` and the other arguments."""
        use_triton = self.backend_for(tensor, backend) == "triton" and self.triton is not None
        impl = self.triton if use_triton and self.triton is not None else self.reference
        return impl(tensor, *args, **kwargs)
