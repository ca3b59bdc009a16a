"""Red-team harness measuring whether combinations of individually safe models complete flagged tasks, with decomposition strategies, monitors and uplift statistics.

The public API is listed in ``__all__``; nothing heavy is imported here.
"""

from importlib.metadata import PackageNotFoundError, version

from combo_redteam.method import BootstrapInterval, bootstrap_mean

try:
    __version__ = version("combo-redteam")
except PackageNotFoundError:  # source tree without install
    __version__ = "0.0.0"

__all__ = ["BootstrapInterval", "__version__", "bootstrap_mean"]
