"""Train-test overlap between training corpora and test sets: HELM's n-gram metrics and developers' methodologies in one streaming pass.

The public API is listed in ``__all__``; nothing heavy is imported here.
"""

from importlib.metadata import PackageNotFoundError, version

from train_test_overlap.data import Instance, TestSet, iter_documents, load_helm_scenarios
from train_test_overlap.index import PARTS, CorpusStats, OverlapCounts, OverlapIndex, ShardCounts, file_partitions
from train_test_overlap.metrics import InstanceMetrics, helm_metric_records, metrics
from train_test_overlap.neardup import NearDuplicate, near_duplicates
from train_test_overlap.presets import PRESETS, Preset, PresetResult, evaluate_presets, get_preset
from train_test_overlap.registry import Disclosure, load_registry
from train_test_overlap.report import OverlapReport
from train_test_overlap.sketch import CorpusSketch
from train_test_overlap.tokenizers import HelmTokenizer, JanitorTokenizer, WhitespaceTokenizer, get_tokenizer

try:
    __version__ = version("train-test-overlap")
except PackageNotFoundError:  # source tree without install
    __version__ = "0.0.0"

__all__ = ["PARTS", "PRESETS", "CorpusSketch", "CorpusStats", "Disclosure", "HelmTokenizer", "Instance", "InstanceMetrics", "JanitorTokenizer",
           "NearDuplicate", "OverlapCounts", "OverlapIndex", "OverlapReport", "Preset", "PresetResult", "ShardCounts", "TestSet",
           "WhitespaceTokenizer", "__version__", "evaluate_presets", "file_partitions", "get_preset", "get_tokenizer", "helm_metric_records",
           "iter_documents", "load_helm_scenarios", "load_registry", "metrics", "near_duplicates"]
