"""Ridge regression risk and CorrGCV cross-validation under correlated samples"""

from importlib.metadata import PackageNotFoundError, version

try:
    __version__ = version("corrgcv")
except PackageNotFoundError:  # source tree without install
    __version__ = "0.0.0"

__all__ = ["__version__"]
