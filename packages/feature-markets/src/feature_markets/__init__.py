"""Strategic classification when the classifier induces a market for features"""

from importlib.metadata import PackageNotFoundError, version

try:
    __version__ = version("feature-markets")
except PackageNotFoundError:  # source tree without install
    __version__ = "0.0.0"

__all__ = ["__version__"]
