"""The market a linear classifier induces, solved exactly.

Users have non-negative features ``x``, a budget ``b > 0`` and may only buy feature increments
``delta >= 0``. With the classifier ``h(x) = sign(w.x + bias)`` the sellers' equilibrium prices are
proportional to the weights, ``p = rho * w / ||w||``, so a user at geometric distance ``u`` from the
boundary pays ``rho * u`` to cross (Sommer et al., ICML 2025). Revenue maximisation over the scalar
``rho`` is one-dimensional: sort the budgets per unit distance ``b / u`` in descending order; the
``k``-th candidate earns ``(b/u)_(k) * sum_{j<=k} u_(j)``. Sorting makes it O(m log m).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

__all__ = [
    "MarketOutcome",
    "MarketPrice",
    "market_price",
    "market_price_from_scores",
    "simulate_from_scores",
    "simulate_market",
]


@dataclass(frozen=True)
class MarketPrice:
    """Equilibrium of the feature market for one population.

    Attributes
    ----------
    price : float
        ``rho``: the cost per unit of geometric distance (budget units).
    movers : numpy.ndarray of shape (m,), bool
        Users who buy features and cross.
    revenue : float
        ``price`` times the sum of the movers' distances.
    distance : numpy.ndarray of shape (m,)
        Each user's distance to the boundary (0 for users already positive).
    budget_per_unit : numpy.ndarray of shape (m,)
        ``b / u`` (inf where ``u == 0``).
    """

    price: float
    movers: np.ndarray
    revenue: float
    distance: np.ndarray
    budget_per_unit: np.ndarray

    @property
    def share_of_movers(self) -> float:
        """Share of users who buy features and cross (0 for an empty population)."""
        return float(self.movers.mean()) if self.movers.size else 0.0


@dataclass(frozen=True)
class MarketOutcome:
    """Features and predictions after users trade at ``market.price``.

    Attributes
    ----------
    market : MarketPrice
        The price and who moves.
    X_after : numpy.ndarray of shape (m, d)
        Features after purchases.
    predictions : numpy.ndarray of shape (m,)
        Predictions in {-1, +1} after the market.
    costs : numpy.ndarray of shape (m,)
        What each user paid.
    """

    market: MarketPrice
    X_after: np.ndarray
    predictions: np.ndarray
    costs: np.ndarray


def _check_inputs(w, bias, X, budgets) -> tuple[np.ndarray, float, np.ndarray, np.ndarray]:
    w = np.asarray(w, dtype=np.float64)
    X = np.asarray(X, dtype=np.float64)
    budgets = np.asarray(budgets, dtype=np.float64)
    if w.ndim != 1:
        raise ValueError(f"w must be a 1-D weight vector, got shape {w.shape}")
    if X.ndim != 2 or X.shape[1] != w.shape[0]:
        raise ValueError(f"X must have shape (m, {w.shape[0]}) to match w, got {X.shape}")
    if budgets.shape != (X.shape[0],):
        raise ValueError(f"budgets must have shape ({X.shape[0]},), one per user, got {budgets.shape}")
    if not np.all(np.isfinite(w)) or not np.any(w != 0):
        raise ValueError("w must be finite and not all zero: a zero weight vector induces no market")
    # min/max reductions (NaN fails both comparisons) keep validation to two passes over each array
    if X.size and not (X.min() >= 0 and np.isfinite(X.max())):
        raise ValueError("features must be finite and non-negative (users buy non-negative increments)")
    if budgets.size and not (budgets.min() > 0 and np.isfinite(budgets.max())):
        raise ValueError("budgets must be finite and strictly positive")
    if not np.isfinite(bias):
        raise ValueError(f"bias must be finite, got {bias}")
    return w, float(bias), X, budgets


def market_price(w, bias: float, X, budgets) -> MarketPrice:
    """Exact revenue-maximising price of the market induced by ``sign(w.x + bias)``.

    O(m log m): one sort of the budgets per unit distance and a scan.

    Parameters
    ----------
    w : array-like of shape (d,)
        Weights (finite, not all zero).
    bias : float
        Intercept.
    X : array-like of shape (m, d)
        Non-negative features.
    budgets : array-like of shape (m,)
        Strictly positive budgets.

    Returns
    -------
    MarketPrice
        Price, movers, revenue, distances.

    Examples
    --------
    >>> import numpy as np
    >>> from feature_markets import market_price
    >>> X = np.array([[0.0], [0.5], [1.0]])
    >>> result = market_price(np.array([1.0]), -0.75, X, budgets=np.array([1.0, 3.0, 1.0]))
    >>> result.price, result.movers.tolist()
    (12.0, [False, True, False])
    """
    w, bias, X, budgets = _check_inputs(w, bias, X, budgets)
    return _market(X @ w + bias, w, budgets)


def _market(scores: np.ndarray, w: np.ndarray, budgets: np.ndarray) -> MarketPrice:
    if not np.any(w > 0):  # only increments can be bought: nobody can raise their score
        distance = np.where(scores < 0, np.inf, 0.0)
        return MarketPrice(0.0, np.zeros(scores.shape[0], dtype=bool), 0.0, distance, np.zeros_like(distance))
    return market_price_from_scores(scores, float(np.linalg.norm(w)), budgets)


def market_price_from_scores(scores, weight_norm: float, budgets) -> MarketPrice:
    """The same equilibrium from precomputed scores ``w.x + bias`` and ``||w||``.

    Lets classifiers whose score has a non-purchasable part (e.g. the budget as a feature) reuse the
    solver: only the purchasable weights' norm enters the distance.

    Parameters
    ----------
    scores : array-like of shape (m,)
        ``w.x + bias`` per user.
    weight_norm : float
        Norm of the purchasable weights (positive).
    budgets : array-like of shape (m,)
        Strictly positive budgets.

    Returns
    -------
    MarketPrice
        Price, movers, revenue, distances.
    """
    scores = np.asarray(scores, dtype=np.float64)
    budgets = np.asarray(budgets, dtype=np.float64)
    distance = np.maximum(-scores, 0.0) / weight_norm
    with np.errstate(divide="ignore"):
        budget_per_unit = np.where(distance > 0, budgets / np.where(distance > 0, distance, 1.0), np.inf)
    negative = np.flatnonzero(distance > 0)
    if negative.size == 0:
        return MarketPrice(0.0, np.zeros(scores.shape[0], dtype=bool), 0.0, distance, budget_per_unit)
    order = negative[np.argsort(-budget_per_unit[negative], kind="stable")]
    candidates = budget_per_unit[order]
    revenue = candidates * np.cumsum(distance[order])
    # Ties in b/u share one price: the last index of a tie group collects all of them.
    best = int(np.argmax(revenue))
    price = float(candidates[best])
    movers = budget_per_unit >= price
    movers &= distance > 0
    return MarketPrice(price, movers, float(price * distance[movers].sum()), distance, budget_per_unit)


def simulate_market(w, bias: float, X, budgets, *, price: float | None = None) -> MarketOutcome:
    """Let users trade: movers buy the cheapest increment that reaches the boundary.

    ``price``: a fixed ``rho`` (short term, before sellers re-price); None uses the equilibrium
    price of this population (long term). Movers buy along the positive weights,
    ``delta = u ||w|| / ||w+||^2 * w+``, which raises the score by exactly ``u ||w||`` at cost ``rho u``.

    Parameters
    ----------
    w : array-like of shape (d,)
        Weights (finite, not all zero).
    bias : float
        Intercept.
    X : array-like of shape (m, d)
        Non-negative features.
    budgets : array-like of shape (m,)
        Strictly positive budgets.
    price : float, optional
        Fixed price; None for the equilibrium price.

    Returns
    -------
    MarketOutcome
        Features after purchases, predictions, costs.
    """
    w, bias, X, budgets = _check_inputs(w, bias, X, budgets)
    return simulate_from_scores(X @ w + bias, w, X, budgets, price=price)


def simulate_from_scores(scores, w, X, budgets, *, price: float | None = None) -> MarketOutcome:
    """Run :func:`simulate_market` for precomputed scores whose purchasable weights are ``w``.

    Parameters
    ----------
    scores : array-like of shape (m,)
        Scores per user.
    w : numpy.ndarray of shape (d,)
        Purchasable weights.
    X : numpy.ndarray of shape (m, d)
        Non-negative features.
    budgets : numpy.ndarray of shape (m,)
        Strictly positive budgets.
    price : float, optional
        Fixed price; None for the equilibrium price.

    Returns
    -------
    MarketOutcome
        Features after purchases, predictions, costs.
    """
    norm = float(np.linalg.norm(w))
    market = _market(scores, w, budgets)
    if price is not None:
        if not np.isfinite(price) or price < 0:
            raise ValueError(f"price must be a finite non-negative number, got {price}")
        movers = (market.distance > 0) & np.isfinite(market.distance) & (market.budget_per_unit >= price)
        market = MarketPrice(
            float(price), movers, float(price * market.distance[movers].sum()), market.distance, market.budget_per_unit
        )
    positive_part = np.maximum(w, 0.0)
    step = np.where(market.movers, market.distance, 0.0) * norm / max(float(positive_part @ positive_part), 1e-300)
    X_after = X + step[:, None] * positive_part[None, :]
    predictions = np.where((scores >= 0) | market.movers, 1, -1)
    costs = np.zeros(scores.shape[0])
    costs[market.movers] = market.price * market.distance[market.movers]
    return MarketOutcome(market=market, X_after=X_after, predictions=predictions, costs=costs)
