"""Train-test overlap between training corpora and test sets: HELM's n-gram metrics and every developer's methodology in one streaming pass.

The public API is listed in ``__all__``; nothing heavy is imported here.
"""

from importlib.metadata import PackageNotFoundError, version

from train_test_overlap.method import BootstrapInterval, bootstrap_mean

try:
    __version__ = version("train-test-overlap")
except PackageNotFoundError:  # source tree without install
    __version__ = "0.0.0"

__all__ = ["BootstrapInterval", "__version__", "bootstrap_mean"]
