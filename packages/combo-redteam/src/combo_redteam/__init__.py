"""combo-redteam: run benign flagged tasks through single models and multi-model decompositions.

The public API is listed in ``__all__``; nothing heavy is imported here (``TransformersChatModel``
loads torch and transformers only when it is used).
"""

from __future__ import annotations

from importlib.metadata import PackageNotFoundError, version
from typing import TYPE_CHECKING, Any

from combo_redteam.extract import Extraction, extract_code, extract_number, extract_records, parse_subtasks
from combo_redteam.families import FAMILIES, FLAG_PATTERN
from combo_redteam.graders import Grader, JudgeGrader, RuleGrader
from combo_redteam.hosted import AnthropicMessagesModel, LiteLLMModel, RateLimiter
from combo_redteam.metrics import (
    McNemarResult,
    Uplift,
    auroc,
    clustered_paired,
    clustered_rate,
    mcnemar_exact,
    paired_difference_interval,
    wilson,
)
from combo_redteam.models import (
    DEFAULT_POLICY,
    ChatModel,
    Completion,
    LatencyModel,
    ModelError,
    ModelTimeoutError,
    RefusalDetector,
    StandInStrong,
    StandInWeak,
    Usage,
)
from combo_redteam.monitors import (
    PLACEMENTS,
    JudgeMonitor,
    Monitor,
    PolicyMonitor,
    SequentialMonitor,
    Verdict,
    related_request_score,
)
from combo_redteam.openai_compat import OpenAICompatibleModel
from combo_redteam.runner import EpisodeResult, RunResult, TooManyErrors, replay, run
from combo_redteam.strategies import (
    AutomatedDecomposition,
    ManualDecomposition,
    PlanStep,
    SingleModel,
    Strategy,
    strategy_from_spec,
)
from combo_redteam.tasks import TASK_SCHEMA, Grade, Task, TaskSuite, benign_suite, grade

if TYPE_CHECKING:
    from combo_redteam.transformers_model import TransformersChatModel

try:
    __version__ = version("combo-redteam")
except PackageNotFoundError:  # source tree without install
    __version__ = "0.0.0"


def __getattr__(name: str) -> Any:
    if name == "TransformersChatModel":
        from combo_redteam.transformers_model import TransformersChatModel

        return TransformersChatModel
    raise AttributeError(f"module 'combo_redteam' has no attribute {name!r}")


__all__ = [
    "AnthropicMessagesModel", "AutomatedDecomposition", "ChatModel", "Completion", "DEFAULT_POLICY", "EpisodeResult",
    "Extraction", "FAMILIES", "FLAG_PATTERN", "Grade", "Grader", "JudgeGrader", "JudgeMonitor", "LatencyModel",
    "LiteLLMModel", "ManualDecomposition", "McNemarResult", "ModelError", "ModelTimeoutError", "Monitor",
    "OpenAICompatibleModel", "PLACEMENTS", "PlanStep", "PolicyMonitor", "RateLimiter", "RefusalDetector", "RuleGrader",
    "RunResult", "SequentialMonitor", "SingleModel", "StandInStrong", "StandInWeak", "Strategy", "TASK_SCHEMA", "Task",
    "TaskSuite", "TooManyErrors", "TransformersChatModel", "Uplift", "Usage", "Verdict", "__version__", "auroc",
    "benign_suite", "clustered_paired", "clustered_rate", "extract_code", "extract_number", "extract_records", "grade",
    "mcnemar_exact", "paired_difference_interval", "parse_subtasks", "related_request_score", "replay", "run",
    "strategy_from_spec", "wilson",
]
