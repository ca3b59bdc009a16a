"""Differentiable market price (torch), for training classifiers that anticipate the market.

The exact price sorts budgets per unit distance and takes an argmax of revenue; both steps are
relaxed: SoftSort (Prillo & Eisenschlos, 2020) with temperature ``tau_sort`` replaces the sort (on
``u / b`` divided by its minimum, so that temperature is scale-free), and a softmax with inverse
temperature ``tau_softmax`` over revenue (in budget units, as in the paper) replaces the argmax. ``hard=True`` gives the
exact price in the forward pass with the soft gradient (straight-through).
"""

from __future__ import annotations

import torch

__all__ = ["soft_sort_matrix", "soft_market_price"]


def soft_sort_matrix(values: torch.Tensor, tau: float, *, power: float = 1.0) -> torch.Tensor:
    """Row-stochastic (m, m) matrix ``P`` with ``P @ values`` ~ ``values`` sorted ascending.

    ``P_ij = softmax_j(-|sort(values)_i - values_j|^power / tau)``; as ``tau -> 0`` it tends to the
    permutation matrix.

    Parameters
    ----------
    values : torch.Tensor of shape (m,)
        Values to sort.
    tau : float
        Temperature (positive).
    power : float, default 1.0
        Exponent of the distance.

    Returns
    -------
    torch.Tensor of shape (m, m)
        The row-stochastic matrix.
    """
    ordered = torch.sort(values).values
    gaps = (ordered[:, None] - values[None, :]).abs().pow(power)
    return torch.softmax(-gaps / tau, dim=-1)


def _revenue_curve(permutation: torch.Tensor, per_unit: torch.Tensor, distance: torch.Tensor):
    """Candidate prices (descending) and their revenue from a (soft) ascending sort of ``u / b``."""
    candidates = 1.0 / (permutation @ per_unit)
    return candidates, candidates * torch.cumsum(permutation @ distance, dim=0)


def soft_market_price(
    w: torch.Tensor,
    bias: torch.Tensor | float,
    X: torch.Tensor,
    budgets: torch.Tensor,
    *,
    tau_sort: float = 0.1,
    tau_softmax: float = 2.0,
    hard: bool = False,
    power: float = 1.0,
    normalize_revenue: bool = False,
) -> torch.Tensor:
    """Smooth approximation of :func:`feature_markets.market_price`'s price (a 0-d tensor).

    ``w`` (d,), ``bias`` scalar, ``X`` (m, d), ``budgets`` (m,). Gradients flow to ``w`` and ``bias``.
    Memory is O(m^2) for the soft sort: use minibatches of a few thousand users at most.
    ``normalize_revenue=True`` divides revenue by its (detached) maximum before the softmax, making
    ``tau_softmax`` independent of the budgets' units (what :class:`MarketAwareClassifier` trains with).

    Parameters
    ----------
    w : torch.Tensor of shape (d,)
        Weights.
    bias : torch.Tensor or float
        Intercept.
    X : torch.Tensor of shape (m, d)
        Non-negative features.
    budgets : torch.Tensor of shape (m,)
        Strictly positive budgets.
    tau_sort : float, default 0.1
        SoftSort temperature.
    tau_softmax : float, default 2.0
        Inverse temperature of the softmax over revenue.
    hard : bool, default False
        Exact price forward, soft gradient backward (straight-through).
    power : float, default 1.0
        Exponent of SoftSort's distance.
    normalize_revenue : bool, default False
        Divide revenue by its detached maximum before the softmax.

    Returns
    -------
    torch.Tensor
        The price, a 0-d tensor attached to the graph.
    """
    if tau_sort <= 0 or tau_softmax <= 0:
        raise ValueError(f"temperatures must be positive, got tau_sort={tau_sort}, tau_softmax={tau_softmax}")
    scores = X @ w + bias
    distance_all = torch.relu(-scores) / torch.linalg.vector_norm(w)
    negative = (scores < 0).detach()
    if not bool(negative.any()):
        return scores.sum() * 0.0  # nobody to sell to: price 0, still attached to the graph
    distance = distance_all[negative]
    per_unit = distance / budgets[negative]  # u / b: ascending order = descending budget per unit
    scaled = per_unit / per_unit.min().detach()  # scale-free temperature
    soft = soft_sort_matrix(scaled, tau_sort, power=power)
    candidates, revenue = _revenue_curve(soft, per_unit, distance)
    scale = revenue.max().detach() if normalize_revenue else 1.0
    weights = torch.softmax(tau_softmax * revenue / scale, dim=0)
    price = (weights * candidates).sum()
    if not hard:
        return price
    with torch.no_grad():
        exact = torch.zeros_like(soft)
        exact[torch.arange(per_unit.shape[0]), torch.argsort(per_unit)] = 1.0
    hard_candidates, hard_revenue = _revenue_curve(exact, per_unit, distance)
    hard_price = hard_candidates[torch.argmax(hard_revenue)]
    return price + (hard_price - price).detach()
