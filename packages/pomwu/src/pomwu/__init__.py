"""Prediction-aware optimistic multiplicative weights in time-varying games"""

from importlib.metadata import PackageNotFoundError, version

try:
    __version__ = version("pomwu")
except PackageNotFoundError:  # source tree without install
    __version__ = "0.0.0"

__all__ = ["__version__"]
