"""Foundation Molecular Grammar: foundation-model-guided motif trees induce an interpretable probabilistic molecular grammar.

The public API is listed in ``__all__``.
"""

from importlib.metadata import PackageNotFoundError, version

from fmg.chem import canonical_smiles
from fmg.data import DATASETS, load_dataset, load_smiles
from fmg.decompose import Decomposition, decompose
from fmg.grammar import Derivation, Grammar, Rule, SampleResult
from fmg.judges import HeuristicChemJudge, MMFMJudge, MolecularJudge, MotifView, OpenAICompatibleJudge, ReplayJudge
from fmg.metrics import Metrics, diversity, evaluate, membership
from fmg.model import FMG
from fmg.tournament import bradley_terry

try:
    __version__ = version("fmg-grammar")
except PackageNotFoundError:  # source tree without install
    __version__ = "0.0.0"

__all__ = ["DATASETS", "FMG", "Decomposition", "Derivation", "Grammar", "HeuristicChemJudge", "MMFMJudge", "Metrics",
           "MolecularJudge", "MotifView", "OpenAICompatibleJudge", "ReplayJudge", "Rule", "SampleResult", "__version__",
           "bradley_terry", "canonical_smiles", "decompose", "diversity", "evaluate", "load_dataset", "load_smiles",
           "membership"]
