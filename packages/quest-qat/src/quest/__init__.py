"""QuEST quantization-aware training with Hadamard, MSE-optimal grids, trust gradients and INT4 kernels"""

from importlib.metadata import PackageNotFoundError, version

try:
    __version__ = version("quest-qat")
except PackageNotFoundError:  # source tree without install
    __version__ = "0.0.0"

__all__ = ["__version__"]
