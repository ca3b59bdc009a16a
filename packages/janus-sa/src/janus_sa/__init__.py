"""Janus: dual-server verifiable multi-round secure aggregation for federated learning"""

from importlib.metadata import PackageNotFoundError, version

try:
    __version__ = version("janus-sa")
except PackageNotFoundError:  # source tree without install
    __version__ = "0.0.0"

__all__ = ["__version__"]
