"""Layer-wise relevance propagation for equivariant graph networks (EquiGX) with geometric attributions and explanation benchmarks.

The public API is listed in ``__all__``; nothing heavy is imported here.
"""

from importlib.metadata import PackageNotFoundError, version

from equigx.method import BootstrapInterval, bootstrap_mean

try:
    __version__ = version("equigx")
except PackageNotFoundError:  # source tree without install
    __version__ = "0.0.0"

__all__ = ["BootstrapInterval", "__version__", "bootstrap_mean"]
