"""FineXtract: audit whether a fine-tuned diffusion model leaks its fine-tuning images.

Model guidance from a pretrained to a fine-tuned noise predictor (:class:`ModelGuidanceSampler`), the CFG
baseline (:class:`CFGSampler`), clique clustering of generations (:func:`cluster_extract`) and the AS / A-ESR
metrics (:func:`extraction_metrics`). Heavy imports (diffusers, peft, networkx) happen on first use.
"""

from importlib.metadata import PackageNotFoundError, version

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
