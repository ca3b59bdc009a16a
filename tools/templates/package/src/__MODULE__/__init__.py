"""__SUMMARY__"""

from importlib.metadata import PackageNotFoundError, version

try:
    __version__ = version("__DIST__")
except PackageNotFoundError:  # source tree without install
    __version__ = "0.0.0"

__all__ = ["__version__"]
