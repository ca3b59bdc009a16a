"""Assess public participation in an AI system on the four-tier Right-to-AI model.

The public API is listed in ``__all__``; nothing heavy is imported here.
"""

from importlib.metadata import PackageNotFoundError, version

from right_to_ai.method import BootstrapInterval, bootstrap_mean

try:
    __version__ = version("right-to-ai")
except PackageNotFoundError:  # source tree without install
    __version__ = "0.0.0"

__all__ = ["BootstrapInterval", "__version__", "bootstrap_mean"]
