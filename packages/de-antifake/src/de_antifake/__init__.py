"""Stress-testing voice-cloning protections: protect, purify (diffusion + phoneme-guided refinement), clone and verify on one code path.

The public API is listed in ``__all__``; nothing heavy is imported here.
"""

from importlib.metadata import PackageNotFoundError, version

from de_antifake.method import BootstrapInterval, bootstrap_mean

try:
    __version__ = version("de-antifake")
except PackageNotFoundError:  # source tree without install
    __version__ = "0.0.0"

__all__ = ["BootstrapInterval", "__version__", "bootstrap_mean"]
