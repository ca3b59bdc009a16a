"""Ridge regression risk and CorrGCV cross-validation under correlated samples.

Atanasov, Zavatone-Veth & Pehlevan, "Risk and cross validation in ridge regression with correlated
samples", ICML 2025 (arXiv 2408.04607).
"""

from importlib.metadata import PackageNotFoundError, version
from typing import TYPE_CHECKING

from corrgcv.correlation import (
    FAMILIES,
    Correlation,
    ExponentialCorrelation,
    NearestNeighbourCorrelation,
    PowerLawCorrelation,
    k_eigenvalues,
    lag1_autocorrelation,
)
from corrgcv.estimate import estimate_correlation, estimate_correlation_from_features, estimate_noise_correlation
from corrgcv.gcv import CVPath, RidgeSpectrum, corrgcv, gcv, loo, solve_kappa_tilde
from corrgcv.simulate import (
    LinearProblem,
    RiskSimulation,
    correlated_factor,
    power_law_problem,
    simulate_horizon_risk,
    simulate_risk,
)
from corrgcv.theory import DeterministicEquivalent, deterministic_equivalent, horizon_factor, test_point_factor

if TYPE_CHECKING:  # static import for type checkers and the API docs; at run time __getattr__ loads it
    from corrgcv.estimator import RidgeCorrGCV

try:
    __version__ = version("corrgcv")
except PackageNotFoundError:  # source tree without install
    __version__ = "0.0.0"

__all__ = [
    "__version__",
    "CVPath",
    "Correlation",
    "DeterministicEquivalent",
    "ExponentialCorrelation",
    "FAMILIES",
    "LinearProblem",
    "NearestNeighbourCorrelation",
    "PowerLawCorrelation",
    "RidgeCorrGCV",
    "RidgeSpectrum",
    "RiskSimulation",
    "correlated_factor",
    "corrgcv",
    "deterministic_equivalent",
    "estimate_correlation",
    "estimate_correlation_from_features",
    "estimate_noise_correlation",
    "gcv",
    "horizon_factor",
    "k_eigenvalues",
    "lag1_autocorrelation",
    "loo",
    "power_law_problem",
    "simulate_horizon_risk",
    "simulate_risk",
    "solve_kappa_tilde",
    "test_point_factor",
]


def __getattr__(name: str) -> object:
    """Load the scikit-learn estimator on first use, so that ``import corrgcv`` and ``--help`` skip scikit-learn."""
    if name == "RidgeCorrGCV":
        from corrgcv.estimator import RidgeCorrGCV

        return RidgeCorrGCV
    raise AttributeError(f"module 'corrgcv' has no attribute {name!r}")
