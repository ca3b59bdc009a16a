"""Foundation Molecular Grammar: foundation-model-guided motif trees induce an interpretable probabilistic molecular grammar.

The public API is listed in ``__all__``.
"""

import importlib
from importlib.metadata import PackageNotFoundError, version
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # static imports for type checkers and the API docs; at run time __getattr__ loads them
    from fmg.chem import canonical_smiles
    from fmg.data import DATASETS, LOCAL_DATASETS, load_dataset, load_hopv, load_ptc, load_smiles
    from fmg.decomposition import Decomposition, decompose
    from fmg.grammar import Derivation, Grammar, Rule, SampleResult
    from fmg.judges import HeuristicChemJudge, MMFMJudge, MolecularJudge, MotifView, OpenAICompatibleJudge, ReplayJudge
    from fmg.metrics import Metrics, chamfer_distance, diversity, evaluate, membership
    from fmg.model import FMG
    from fmg.retro import RetroPlanner, Route
    from fmg.tournament import bradley_terry

#: public name -> its module, loaded on first access (PEP 562): ``import fmg`` and ``python -m fmg --help``
#: skip RDKit and networkx (~0.8 s).
_LAZY = {
    "canonical_smiles": "fmg.chem",
    "DATASETS": "fmg.data",
    "LOCAL_DATASETS": "fmg.data",
    "load_dataset": "fmg.data",
    "load_hopv": "fmg.data",
    "load_ptc": "fmg.data",
    "load_smiles": "fmg.data",
    "Decomposition": "fmg.decomposition",
    "decompose": "fmg.decomposition",
    "Derivation": "fmg.grammar",
    "Grammar": "fmg.grammar",
    "Rule": "fmg.grammar",
    "SampleResult": "fmg.grammar",
    "HeuristicChemJudge": "fmg.judges",
    "MMFMJudge": "fmg.judges",
    "MolecularJudge": "fmg.judges",
    "MotifView": "fmg.judges",
    "OpenAICompatibleJudge": "fmg.judges",
    "ReplayJudge": "fmg.judges",
    "Metrics": "fmg.metrics",
    "chamfer_distance": "fmg.metrics",
    "diversity": "fmg.metrics",
    "evaluate": "fmg.metrics",
    "membership": "fmg.metrics",
    "FMG": "fmg.model",
    "RetroPlanner": "fmg.retro",
    "Route": "fmg.retro",
    "bradley_terry": "fmg.tournament",
}

try:
    __version__ = version("fmg-grammar")
except PackageNotFoundError:  # source tree without install
    __version__ = "0.0.0"

__all__ = ["DATASETS", "Decomposition", "Derivation", "FMG", "Grammar", "HeuristicChemJudge", "LOCAL_DATASETS",
           "MMFMJudge", "Metrics", "MolecularJudge", "MotifView", "OpenAICompatibleJudge", "ReplayJudge",
           "RetroPlanner", "Route", "Rule", "SampleResult", "__version__", "bradley_terry", "canonical_smiles",
           "chamfer_distance", "decompose", "diversity", "evaluate", "load_dataset", "load_hopv", "load_ptc",
           "load_smiles", "membership"]


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        value = getattr(importlib.import_module(_LAZY[name]), name)
        globals()[name] = value  # later lookups skip this function
        return value
    raise AttributeError(f"module 'fmg' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_LAZY))
