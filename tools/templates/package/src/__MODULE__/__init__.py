"""__SUMMARY__.

The public API is listed in ``__all__``; nothing heavy is imported here.
"""

from importlib.metadata import PackageNotFoundError, version

from __MODULE__.method import BootstrapInterval, bootstrap_mean

try:
    __version__ = version("__DIST__")
except PackageNotFoundError:  # source tree without install
    __version__ = "0.0.0"

__all__ = ["BootstrapInterval", "__version__", "bootstrap_mean"]
