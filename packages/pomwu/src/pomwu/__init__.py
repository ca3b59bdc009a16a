"""Prediction-aware optimistic multiplicative weights (POMWU) in time-varying games.

Capitaine, Boursier, Moulines, Jordan, Durmus, "Prediction-aware Learning in Multi-agent
Systems", ICML 2025. Entry point: :class:`POMWU`; baselines :class:`Hedge`,
:class:`OptimisticHedge`, :class:`ContextualHedge`; games in :mod:`pomwu.games`; repeated play in
:mod:`pomwu.simulate`; Wardrop equilibria in :mod:`pomwu.wardrop`.
"""

from importlib.metadata import PackageNotFoundError, version

from pomwu.games import (
    MatrixGame,
    RoutingGame,
    RoutingNetwork,
    context_capacities,
    load_sioux_falls,
    load_sioux_falls_demands,
    random_zero_sum_games,
    read_network_csv,
    read_od_matrix,
)
from pomwu.learners import POMWU, ContextualHedge, Hedge, MultiplicativeWeights, OptimisticHedge
from pomwu.metrics import RegretSummary, RegretTracker, duality_gap, zero_sum_value
from pomwu.predictors import (
    CovariateModel,
    NoisyOracle,
    OnlineLogisticRegression,
    OracleContext,
    SGDContextPredictor,
    make_covariates,
)
from pomwu.simulate import MatrixGameRun, RoutingRun, play_matrix_game, play_routing_game, predict_contexts
from pomwu.wardrop import WardropResult, wardrop_equilibrium

try:
    __version__ = version("pomwu")
except PackageNotFoundError:  # source tree without install
    __version__ = "0.0.0"

__all__ = [
    "__version__",
    "POMWU",
    "Hedge",
    "OptimisticHedge",
    "ContextualHedge",
    "MultiplicativeWeights",
    "OracleContext",
    "NoisyOracle",
    "OnlineLogisticRegression",
    "SGDContextPredictor",
    "CovariateModel",
    "make_covariates",
    "MatrixGame",
    "random_zero_sum_games",
    "RoutingNetwork",
    "RoutingGame",
    "read_network_csv",
    "read_od_matrix",
    "load_sioux_falls",
    "load_sioux_falls_demands",
    "context_capacities",
    "RegretTracker",
    "RegretSummary",
    "zero_sum_value",
    "duality_gap",
    "predict_contexts",
    "play_matrix_game",
    "MatrixGameRun",
    "play_routing_game",
    "RoutingRun",
    "wardrop_equilibrium",
    "WardropResult",
]
