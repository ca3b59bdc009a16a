"""Looped transformers with timestep modulation (TMLT) as ``transformers`` models.

``LoopedConfig`` / ``LoopedForCausalLM`` (registered with the Auto classes), the paper's task suites
(:mod:`looped_transformers.tasks`) and a training loop (:mod:`looped_transformers.train`).
"""

import sys
from importlib.metadata import PackageNotFoundError, version
from typing import Any

_MODELING_NAMES = ("BLOCKS", "TIMESTEPS", "LoopedCausalLMOutput", "LoopedConfig", "LoopedForCausalLM", "LoopedModel",
                   "LoopedModelOutput", "timestep_embedding", "tmlt_extra_parameters")


def _started_as_own_command() -> bool:
    """Whether this process is ``python -m looped_transformers ...``, where only our own command runs.

    There the model module (torch and transformers, ~3 s) loads when a command needs it, so ``--help`` is
    fast. Anywhere else importing the package registers the model with transformers' Auto classes at once,
    so that ``AutoModel.from_pretrained`` finds it after a bare ``import looped_transformers``.
    """
    argv = list(getattr(sys, "orig_argv", []))
    if "-m" not in argv:
        return False
    target = argv[argv.index("-m") + 1: argv.index("-m") + 2]
    return target in (["looped_transformers"], ["looped_transformers.__main__"])


def __getattr__(name: str) -> Any:
    if name in _MODELING_NAMES:
        from looped_transformers import modeling

        return getattr(modeling, name)
    raise AttributeError(f"module 'looped_transformers' has no attribute {name!r}")


if not _started_as_own_command():
    from looped_transformers.modeling import (  # noqa: F401 - the public names; registers the Auto classes
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
