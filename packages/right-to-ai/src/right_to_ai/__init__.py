"""Assess public participation in an AI system on the four-tier Right-to-AI model.

The public API is listed in ``__all__``; nothing heavy is imported here.
"""

from importlib.metadata import PackageNotFoundError, version

from right_to_ai.assess import (
    AnswerError,
    Assessment,
    AssessmentWarning,
    DimensionScores,
    GateStatus,
    NextTransition,
    SimilarCase,
    assess,
    similar_cases,
)
from right_to_ai.data import DataValidationError, DataVersionError, RightToAIData, available_versions, load

try:
    __version__ = version("right-to-ai")
except PackageNotFoundError:  # source tree without install
    __version__ = "0.0.0"

__all__ = ["AnswerError", "Assessment", "AssessmentWarning", "DataValidationError", "DataVersionError",
           "DimensionScores", "GateStatus", "NextTransition", "RightToAIData", "SimilarCase", "__version__", "assess",
           "available_versions", "load", "similar_cases"]
