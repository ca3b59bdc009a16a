"""Looped transformers with timestep modulation (TMLT) as transformers models.

The public API is listed in ``__all__``; nothing heavy is imported here.
"""

from importlib.metadata import PackageNotFoundError, version

from looped_transformers.method import BootstrapInterval, bootstrap_mean

try:
    __version__ = version("looped-transformers")
except PackageNotFoundError:  # source tree without install
    __version__ = "0.0.0"

__all__ = ["BootstrapInterval", "__version__", "bootstrap_mean"]
