"""Data-specific indistinguishability: the optimal multivariate Gaussian mechanism and private training."""

from importlib.metadata import PackageNotFoundError, version

from dsi.accounting import (
    DEFAULT_ORDERS,
    REFERENCE_MULTIPLIERS,
    compose,
    delta_from_gdp,
    epsilon_from_gdp,
    epsilon_from_rdp,
    epsilon_from_rho,
    epsilon_from_sigma,
    gdp_mu,
    gdp_mu_from_epsilon,
    rdp_subsampled_gaussian,
    renyi_divergence,
    rho_from_epsilon,
    rho_from_sigma,
    sigma_from_epsilon,
    sigma_from_rho,
    tradeoff_power,
)
from dsi.covariance import IsotropicCovariance, OptimalCovariance, isotropic_covariance, optimal_covariance
from dsi.mechanism import Mechanism
from dsi.training import DSITrainer, RoundRecord

try:
    __version__ = version("dsi")
except PackageNotFoundError:  # source tree without install
    __version__ = "0.0.0"

__all__ = [
    "DEFAULT_ORDERS",
    "REFERENCE_MULTIPLIERS",
    "IsotropicCovariance",
    "DSITrainer",
    "Mechanism",
    "OptimalCovariance",
    "RoundRecord",
    "__version__",
    "compose",
    "delta_from_gdp",
    "epsilon_from_gdp",
    "epsilon_from_rdp",
    "epsilon_from_rho",
    "epsilon_from_sigma",
    "gdp_mu",
    "gdp_mu_from_epsilon",
    "isotropic_covariance",
    "optimal_covariance",
    "rdp_subsampled_gaussian",
    "renyi_divergence",
    "rho_from_epsilon",
    "rho_from_sigma",
    "sigma_from_epsilon",
    "sigma_from_rho",
    "tradeoff_power",
]
