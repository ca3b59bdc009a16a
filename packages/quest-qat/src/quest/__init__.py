"""QuEST quantization-aware training and packed INT4 inference (Panferov et al., ICML 2025).

Hadamard rotation, MSE-optimal Gaussian grids and trust gradients; :func:`quantize_` with a
:class:`QuestConfig` is the entry point.

>>> import torch
>>> from quest import QuestConfig, quantize_, convert_
>>> model = torch.nn.Sequential(torch.nn.Linear(128, 256), torch.nn.ReLU(), torch.nn.Linear(256, 128))
>>> _ = quantize_(model, QuestConfig(weight_bits=4, act_bits=4))
>>> report = convert_(model)
>>> report.layers
['0', '2']
"""

from importlib import import_module
from importlib.metadata import PackageNotFoundError, version
from typing import TYPE_CHECKING, Any

# The API loads on first use (torch is imported then), so `python -m quest --help` stays fast.
_HOME = {
    "ConversionReport": "api", "convert_": "api", "default_filter": "api", "quantize_": "api",
    "GRIDS": "grids", "OPTIMAL_GAUSSIAN_SCALES": "grids", "SUPPORTED_BITS": "grids", "Codebook": "grids",
    "GridSpec": "grids", "codebook_mse": "grids", "fp4_codebook": "grids", "gaussian_mse": "grids",
    "grid_for": "grids", "grid_spec": "grids", "lloyd_max_codebook": "grids", "optimal_gaussian_scale": "grids",
    "block_hadamard": "hadamard", "hadamard_matrix": "hadamard",
    "Int4Linear": "layers", "QuestConfig": "layers", "QuestLinear": "layers",
    "METHODS": "quantizers", "ClipSTEQuantizer": "quantizers", "LSQQuantizer": "quantizers",
    "PACTQuantizer": "quantizers", "STEQuantizer": "quantizers", "TrustQuantizer": "quantizers",
    "make_quantizer": "quantizers",
}

if TYPE_CHECKING:
    from quest.api import ConversionReport, convert_, default_filter, quantize_
    from quest.grids import (
        GRIDS,
        OPTIMAL_GAUSSIAN_SCALES,
        SUPPORTED_BITS,
        Codebook,
        GridSpec,
        codebook_mse,
        fp4_codebook,
        gaussian_mse,
        grid_for,
        grid_spec,
        lloyd_max_codebook,
        optimal_gaussian_scale,
    )
    from quest.hadamard import block_hadamard, hadamard_matrix
    from quest.layers import Int4Linear, QuestConfig, QuestLinear
    from quest.quantizers import (
        METHODS,
        ClipSTEQuantizer,
        LSQQuantizer,
        PACTQuantizer,
        STEQuantizer,
        TrustQuantizer,
        make_quantizer,
    )


def __getattr__(name: str) -> Any:
    if name in _HOME:
        value = getattr(import_module(f"quest.{_HOME[name]}"), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'quest' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(__all__)


try:
    __version__ = version("quest-qat")
except PackageNotFoundError:  # source tree without install
    __version__ = "0.0.0"

__all__ = [
    "GRIDS",
    "METHODS",
    "OPTIMAL_GAUSSIAN_SCALES",
    "SUPPORTED_BITS",
    "ClipSTEQuantizer",
    "Codebook",
    "ConversionReport",
    "GridSpec",
    "Int4Linear",
    "LSQQuantizer",
    "PACTQuantizer",
    "QuestConfig",
    "QuestLinear",
    "STEQuantizer",
    "TrustQuantizer",
    "__version__",
    "block_hadamard",
    "codebook_mse",
    "convert_",
    "default_filter",
    "fp4_codebook",
    "gaussian_mse",
    "grid_for",
    "grid_spec",
    "hadamard_matrix",
    "lloyd_max_codebook",
    "make_quantizer",
    "optimal_gaussian_scale",
    "quantize_",
]
