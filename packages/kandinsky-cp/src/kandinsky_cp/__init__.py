"""Kandinsky conformal prediction: coverage over overlapping, fractional, covariate-and-label groups"""

from importlib.metadata import PackageNotFoundError, version

try:
    __version__ = version("kandinsky-cp")
except PackageNotFoundError:  # source tree without install
    __version__ = "0.0.0"

__all__ = ["__version__"]
