"""Data-specific indistinguishability: the optimal multivariate Gaussian mechanism and private training"""

from importlib.metadata import PackageNotFoundError, version

try:
    __version__ = version("dsi")
except PackageNotFoundError:  # source tree without install
    __version__ = "0.0.0"

__all__ = ["__version__"]
