"""Foundation Molecular Grammar: foundation-model-guided motif trees induce an interpretable probabilistic molecular grammar.

The public API is listed in ``__all__``.
"""

from importlib.metadata import PackageNotFoundError, version

from fmg.chem import canonical_smiles
from fmg.data import DATASETS, LOCAL_DATASETS, load_dataset, load_hopv, load_ptc, load_smiles
from fmg.decompose import Decomposition, decompose
from fmg.grammar import Derivation, Grammar, Rule, SampleResult
from fmg.judges import HeuristicChemJudge, MMFMJudge, MolecularJudge, MotifView, OpenAICompatibleJudge, ReplayJudge
from fmg.metrics import Metrics, chamfer_distance, diversity, evaluate, membership
from fmg.model import FMG
from fmg.retro import RetroPlanner, Route
from fmg.tournament import bradley_terry

try:
    __version__ = version("fmg-grammar")
except PackageNotFoundError:  # source tree without install
    __version__ = "0.0.0"

__all__ = ["DATASETS", "Decomposition", "Derivation", "FMG", "Grammar", "HeuristicChemJudge", "LOCAL_DATASETS",
           "MMFMJudge", "Metrics", "MolecularJudge", "MotifView", "OpenAICompatibleJudge", "ReplayJudge",
           "RetroPlanner", "Route", "Rule", "SampleResult", "__version__", "bradley_terry", "canonical_smiles",
           "chamfer_distance", "decompose", "diversity", "evaluate", "load_dataset", "load_hopv", "load_ptc",
           "load_smiles", "membership"]
