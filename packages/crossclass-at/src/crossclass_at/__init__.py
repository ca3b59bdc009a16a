"""Class-wise feature attribution and the cross-class score (CAS) across adversarial training, with PGD-AT, TRADES and soft labels.

The public API is listed in ``__all__``; nothing heavy is imported here.
"""

from importlib.metadata import PackageNotFoundError, version

from crossclass_at.method import BootstrapInterval, bootstrap_mean

try:
    __version__ = version("crossclass-at")
except PackageNotFoundError:  # source tree without install
    __version__ = "0.0.0"

__all__ = ["BootstrapInterval", "__version__", "bootstrap_mean"]
