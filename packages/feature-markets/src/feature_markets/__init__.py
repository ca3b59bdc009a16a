"""Strategic classification when the classifier induces a market for features (Sommer et al., ICML 2025).

The entry point is :class:`MarketAwareClassifier` (MASC), a scikit-learn classifier trained for the
market its own weights create; :func:`market_price` solves that market exactly.
"""

from importlib.metadata import PackageNotFoundError, version
from typing import TYPE_CHECKING

from feature_markets.datasets import MarketData, adult_csv, breast_cancer_proxy, make_market_data
from feature_markets.market import MarketOutcome, MarketPrice, market_price, simulate_market
from feature_markets.metrics import MarketReport, burden, market_report, welfare

if TYPE_CHECKING:  # static imports for type checkers and the API docs; at run time __getattr__ loads them
    from feature_markets.models import (
        BudgetFeatureClassifier,
        FixedPriceStrategicClassifier,
        MarketAwareClassifier,
        MarketLineSearchClassifier,
        NaiveClassifier,
    )
    from feature_markets.soft import soft_market_price

try:
    __version__ = version("feature-markets")
except PackageNotFoundError:  # source tree without install
    __version__ = "0.0.0"

__all__ = [
    "BudgetFeatureClassifier",
    "FixedPriceStrategicClassifier",
    "MarketAwareClassifier",
    "MarketData",
    "MarketLineSearchClassifier",
    "MarketOutcome",
    "MarketPrice",
    "MarketReport",
    "NaiveClassifier",
    "__version__",
    "adult_csv",
    "breast_cancer_proxy",
    "burden",
    "make_market_data",
    "market_price",
    "market_report",
    "simulate_market",
    "soft_market_price",
    "welfare",
]

_MODELS = ("BudgetFeatureClassifier", "FixedPriceStrategicClassifier", "MarketAwareClassifier",
           "MarketLineSearchClassifier", "NaiveClassifier")


def __getattr__(name: str) -> object:
    """Load the classifiers (torch, scikit-learn) on first use, so ``--help`` and the market solver stay light."""
    if name in _MODELS:
        from feature_markets import models

        return getattr(models, name)
    if name == "soft_market_price":
        from feature_markets.soft import soft_market_price

        return soft_market_price
    raise AttributeError(f"module 'feature_markets' has no attribute {name!r}")
