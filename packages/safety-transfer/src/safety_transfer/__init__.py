"""Activation-space mappers that carry steering interventions from a small language model to a larger one.

The public API is listed in ``__all__``; nothing heavy is imported here.
"""

from importlib.metadata import PackageNotFoundError, version

from safety_transfer.method import BootstrapInterval, bootstrap_mean

try:
    __version__ = version("safety-transfer")
except PackageNotFoundError:  # source tree without install
    __version__ = "0.0.0"

__all__ = ["BootstrapInterval", "__version__", "bootstrap_mean"]
