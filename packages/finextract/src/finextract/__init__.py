"""FineXtract: auditing extraction of fine-tuning data from personalised diffusion models"""

from importlib.metadata import PackageNotFoundError, version

try:
    __version__ = version("finextract")
except PackageNotFoundError:  # source tree without install
    __version__ = "0.0.0"

__all__ = ["__version__"]
