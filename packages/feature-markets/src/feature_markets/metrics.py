"""Social and accuracy metrics of a classifier in its feature market."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from feature_markets.market import MarketOutcome

__all__ = ["MarketReport", "burden", "market_report", "welfare"]


def welfare(outcome: MarketOutcome, budgets: np.ndarray) -> float:
    """Mean user welfare: ``b_i 1{classified +1 after the market} - cost_i``.

    A user values a positive classification at their budget (their willingness to pay) and pays
    ``price * distance`` when they buy features. This is the paper's stated definition
    (``b 1{h(x')=1} - c(x, x')``); the official code's expression differs in the cost term.

    Parameters
    ----------
    outcome : MarketOutcome
        The market's outcome.
    budgets : numpy.ndarray of shape (m,)
        The users' budgets.

    Returns
    -------
    float
        Mean welfare per user (budget units).
    """
    return float(np.mean(np.where(outcome.predictions > 0, budgets, 0.0) - outcome.costs))


def burden(outcome: MarketOutcome, y: np.ndarray) -> float:
    """Mean cost the classifier imposes on qualified users who cannot afford to cross.

    Per user: ``price * distance`` for a truly positive user classified negative after the market, 0
    otherwise.

    Parameters
    ----------
    outcome : MarketOutcome
        The market's outcome.
    y : array-like of shape (m,)
        True labels in {-1, +1}.

    Returns
    -------
    float
        Mean burden per user (budget units).
    """
    stuck = (np.asarray(y) > 0) & (outcome.predictions < 0)
    # Only stuck users count; with no purchasable weight their distance is infinite and price 0.
    cost = outcome.market.price * outcome.market.distance[stuck] if outcome.market.price > 0 else 0.0
    return float(np.sum(cost) / stuck.shape[0])


@dataclass(frozen=True)
class MarketReport:
    """A classifier's accuracy and social outcomes in its market.

    Accuracy before the market, after it at the anticipated price (short term) and at the
    re-optimised price (long term), plus the prices, the share of movers, welfare and burden.
    """

    accuracy_before: float
    accuracy_short: float
    accuracy_long: float
    price_short: float
    price_long: float
    share_of_movers: float
    welfare: float
    burden: float


def market_report(model, X, y, budgets) -> MarketReport:
    """Evaluate a fitted model from :mod:`feature_markets.models` on (X, y, budgets).

    Short term: users trade at the price the model was trained for (``model.price_``); long term:
    sellers re-price for this model on this population.

    Parameters
    ----------
    model : estimator
        A fitted classifier from :mod:`feature_markets.models`.
    X : array-like of shape (m, d)
        Non-negative features.
    y : array-like of shape (m,)
        True labels (in the encoding the model was fitted on).
    budgets : array-like of shape (m,)
        Strictly positive budgets.

    Returns
    -------
    MarketReport
        Accuracies, prices, movers, welfare and burden.
    """
    y = np.asarray(y)
    signs = np.where(y == model.classes_[1], 1, -1)
    before = np.where(model.decision_function(X, budgets) >= 0, 1, -1)
    short = model.market_outcome(X, budgets, price=model.price_)
    long = model.market_outcome(X, budgets)
    return MarketReport(
        accuracy_before=float(np.mean(before == signs)),
        accuracy_short=float(np.mean(short.predictions == signs)),
        accuracy_long=float(np.mean(long.predictions == signs)),
        price_short=float(model.price_),
        price_long=float(long.market.price),
        share_of_movers=long.market.share_of_movers,
        welfare=welfare(long, budgets),
        burden=burden(long, signs),
    )
