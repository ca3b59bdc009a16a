"""FineXtract: audit whether a fine-tuned diffusion model leaks its fine-tuning images.

Model guidance from a pretrained to a fine-tuned noise predictor (:class:`ModelGuidanceSampler`), the CFG
baseline (:class:`CFGSampler`), clique clustering of generations (:func:`cluster_extract`) and the AS / A-ESR
metrics (:func:`extraction_metrics`). Heavy imports (diffusers, peft, networkx) happen on first use.
"""

import importlib
from importlib.metadata import PackageNotFoundError, version
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from finextract.cluster import (
        ClusterResult,
        SSCDFeatures,
        ThresholdStep,
        clique_separation,
        cluster_extract,
        extract_features,
        pixel_features,
    )
    from finextract.denoisers import Denoiser, FunctionDenoiser, LatentUNet, PixelUNet, as_denoiser, without_adapters
    from finextract.guidance import CFGSampler, ModelGuidanceSampler, SampleResult, ddim_step, guided_noise
    from finextract.images import ImageSet, load_images
    from finextract.lora import add_lora, load_lora, save_lora
    from finextract.metrics import ExtractionMetrics, extraction_metrics

#: public name -> the module that defines it; loaded on first access (PEP 562), so that ``import finextract``
#: and ``python -m finextract --help`` load no torch.
_LAZY = {
    "CFGSampler": "finextract.guidance",
    "ClusterResult": "finextract.cluster",
    "Denoiser": "finextract.denoisers",
    "ExtractionMetrics": "finextract.metrics",
    "FunctionDenoiser": "finextract.denoisers",
    "ImageSet": "finextract.images",
    "LatentUNet": "finextract.denoisers",
    "ModelGuidanceSampler": "finextract.guidance",
    "PixelUNet": "finextract.denoisers",
    "SSCDFeatures": "finextract.cluster",
    "SampleResult": "finextract.guidance",
    "ThresholdStep": "finextract.cluster",
    "add_lora": "finextract.lora",
    "as_denoiser": "finextract.denoisers",
    "clique_separation": "finextract.cluster",
    "cluster_extract": "finextract.cluster",
    "ddim_step": "finextract.guidance",
    "extract_features": "finextract.cluster",
    "extraction_metrics": "finextract.metrics",
    "guided_noise": "finextract.guidance",
    "load_images": "finextract.images",
    "load_lora": "finextract.lora",
    "pixel_features": "finextract.cluster",
    "save_lora": "finextract.lora",
    "without_adapters": "finextract.denoisers",
}

try:
    __version__ = version("finextract")
except PackageNotFoundError:  # source tree without install
    __version__ = "0.0.0"

__all__ = [
    "CFGSampler",
    "ClusterResult",
    "Denoiser",
    "ExtractionMetrics",
    "FunctionDenoiser",
    "ImageSet",
    "LatentUNet",
    "ModelGuidanceSampler",
    "PixelUNet",
    "SSCDFeatures",
    "SampleResult",
    "ThresholdStep",
    "__version__",
    "add_lora",
    "as_denoiser",
    "clique_separation",
    "cluster_extract",
    "ddim_step",
    "extract_features",
    "extraction_metrics",
    "guided_noise",
    "load_images",
    "load_lora",
    "pixel_features",
    "save_lora",
    "without_adapters",
]


def __getattr__(name: str) -> object:
    """Import the module that defines ``name`` on first access."""
    if name in _LAZY:
        value = getattr(importlib.import_module(_LAZY[name]), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'finextract' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_LAZY))
