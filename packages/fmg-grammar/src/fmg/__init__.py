"""Foundation Molecular Grammar: foundation-model-guided motif trees induce an interpretable probabilistic molecular grammar.

The public API is listed in ``__all__``; nothing heavy is imported here.
"""

from importlib.metadata import PackageNotFoundError, version

from fmg.method import BootstrapInterval, bootstrap_mean

try:
    __version__ = version("fmg-grammar")
except PackageNotFoundError:  # source tree without install
    __version__ = "0.0.0"

__all__ = ["BootstrapInterval", "__version__", "bootstrap_mean"]
