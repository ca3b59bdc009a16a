"""WMarkGPT: watermarked-image understanding without the original image.

The metrics and data generators need numpy, scipy, nltk, rouge and Pillow; the model, the analyzer and
the training loop need the ``model`` extra (torch, transformers, tokenizers, peft) and are imported
lazily on first use.
"""

from __future__ import annotations

from importlib import import_module
from importlib.metadata import PackageNotFoundError, version
from typing import TYPE_CHECKING, Any

from wmarkgpt.metrics import (
    CorrelationResult,
    EvaluationResult,
    LLMJudge,
    RubricJudge,
    bleu1,
    clean_text,
    correlation,
    evaluate_answers,
    rouge_l,
    visibility_accuracy,
)
from wmarkgpt.scoring import VISIBILITY_LEVELS, predict_score

if TYPE_CHECKING:
    from wmarkgpt.analyzer import WatermarkAnalyzer, WatermarkReport
    from wmarkgpt.modeling import WMarkGPTConfig, WMarkGPTForCausalLM
    from wmarkgpt.training import train_curriculum, train_stage

try:
    __version__ = version("wmarkgpt")
except PackageNotFoundError:  # source tree without install
    __version__ = "0.0.0"

_LAZY = {"WatermarkAnalyzer": "wmarkgpt.analyzer", "WatermarkReport": "wmarkgpt.analyzer",
         "WMarkGPTConfig": "wmarkgpt.modeling", "WMarkGPTForCausalLM": "wmarkgpt.modeling",
         "train_curriculum": "wmarkgpt.training", "train_stage": "wmarkgpt.training"}

__all__ = [
    "VISIBILITY_LEVELS",
    "CorrelationResult",
    "EvaluationResult",
    "LLMJudge",
    "RubricJudge",
    "WMarkGPTConfig",
    "WMarkGPTForCausalLM",
    "WatermarkAnalyzer",
    "WatermarkReport",
    "__version__",
    "bleu1",
    "clean_text",
    "correlation",
    "evaluate_answers",
    "predict_score",
    "rouge_l",
    "train_curriculum",
    "train_stage",
    "visibility_accuracy",
]


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        try:
            module = import_module(_LAZY[name])
        except ModuleNotFoundError as error:  # the model, analyzer and trainer need torch and transformers
            raise ImportError(f"wmarkgpt.{name} needs {error.name}: pip install \"wmarkgpt[model]\"") from error
        return getattr(module, name)
    raise AttributeError(f"module 'wmarkgpt' has no attribute {name!r}")
