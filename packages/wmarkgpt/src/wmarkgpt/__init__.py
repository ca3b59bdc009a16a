"""WMarkGPT: watermarked-image understanding without the original image (mPLUG-Owl2-style model, exact evaluation metrics, data generators, three-stage training).

The public API is listed in ``__all__``; nothing heavy is imported here.
"""

from importlib.metadata import PackageNotFoundError, version

from wmarkgpt.method import BootstrapInterval, bootstrap_mean

try:
    __version__ = version("wmarkgpt")
except PackageNotFoundError:  # source tree without install
    __version__ = "0.0.0"

__all__ = ["BootstrapInterval", "__version__", "bootstrap_mean"]
