"""Looped transformers with timestep modulation (TMLT) as ``transformers`` models.

``LoopedConfig`` / ``LoopedForCausalLM`` (registered with the Auto classes), the paper's task suites
(:mod:`looped_transformers.tasks`) and a training loop (:mod:`looped_transformers.train`).
"""

from importlib.metadata import PackageNotFoundError, version

from looped_transformers.modeling import (
    BLOCKS,
    TIMESTEPS,
    LoopedCausalLMOutput,
    LoopedConfig,
    LoopedForCausalLM,
    LoopedModel,
    LoopedModelOutput,
    timestep_embedding,
    tmlt_extra_parameters,
)

try:
    __version__ = version("looped-transformers")
except PackageNotFoundError:  # source tree without install
    __version__ = "0.0.0"

__all__ = [
    "BLOCKS",
    "TIMESTEPS",
    "LoopedCausalLMOutput",
    "LoopedConfig",
    "LoopedForCausalLM",
    "LoopedModel",
    "LoopedModelOutput",
    "__version__",
    "timestep_embedding",
    "tmlt_extra_parameters",
]
