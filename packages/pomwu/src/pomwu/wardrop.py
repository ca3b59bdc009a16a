"""Wardrop (user) equilibrium of a routing game by Frank-Wolfe on the Beckmann potential.

The equilibrium is computed over each agent's candidate path set (path-restricted traffic
assignment): with every simple path available this is the classical Wardrop equilibrium.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass

import numpy as np

from pomwu.games import RoutingGame

__all__ = ["WardropResult", "wardrop_equilibrium"]


@dataclass(frozen=True)
class WardropResult:
    """Frank-Wolfe output.

    path_flows : (n_agents, max_actions) flow of each agent on each of its paths (sums to its demand). Frank-Wolfe
        converges in link flows; the path split it accumulates is one decomposition of them and can keep small
        flows on costlier paths (on Sioux Falls at gap 1e-4, paths up to 32% dearer than the best), so use
        ``link_flows`` for equilibrium comparisons
    link_flows : (n_links,) equilibrium link flows
    link_costs : (n_links,) link travel times at equilibrium
    relative_gap : (total cost - shortest-path cost) / total cost at the returned flows (>= 0)
    beckmann : value of the Beckmann potential (minimised)
    n_iter : Frank-Wolfe iterations run
    converged : relative_gap <= tol
    """

    path_flows: np.ndarray
    link_flows: np.ndarray
    link_costs: np.ndarray
    relative_gap: float
    beckmann: float
    n_iter: int
    converged: bool


def _all_or_nothing(game: RoutingGame, path_costs: np.ndarray) -> np.ndarray:
    best = np.argmin(np.where(game.mask, path_costs, np.inf), axis=1)
    out = np.zeros(game.mask.shape)
    out[np.arange(game.n_agents), best] = game.demands
    return out


def wardrop_equilibrium(
    game: RoutingGame, context: int = 0, *, tol: float = 1e-6, max_iter: int = 5000, line_search_iter: int = 60
) -> WardropResult:
    """Frank-Wolfe with exact (bisection) line search for the path-restricted Wardrop equilibrium.

    Parameters
    ----------
    game : RoutingGame
    context : int
        Which capacity vector of ``game`` to use.
    tol : float
        Stop when the relative gap falls below ``tol``.
    max_iter : int
        Iteration cap (``converged`` is False when it is reached first).
    """
    if not tol > 0 or max_iter < 1:
        raise ValueError(f"need tol > 0 and max_iter >= 1, got tol={tol}, max_iter={max_iter}")
    cap = game._capacity(context)
    net = game.network

    def costs(x: np.ndarray) -> np.ndarray:
        return net.link_costs(x, cap)

    def relative_gap(x: np.ndarray) -> tuple[float, np.ndarray]:
        t = costs(x)
        pc = game.path_costs(t)
        total = float(x @ t)
        shortest = float(np.sum(np.min(np.where(game.mask, pc, np.inf), axis=1) * game.demands))
        return ((total - shortest) / total if total > 0 else 0.0), pc

    f = _all_or_nothing(game, game.path_costs(costs(np.zeros(net.n_links))))
    x = game.path_flows_to_link_flows(f)
    n_iter = 0
    gap, pc = relative_gap(x)
    while gap > tol and n_iter < max_iter:
        n_iter += 1
        y_path = _all_or_nothing(game, pc)
        y = game.path_flows_to_link_flows(y_path)
        d = y - x
        lo, hi = 0.0, 1.0
        if float(costs(x + d) @ d) <= 0:  # potential still decreasing at the far end
            alpha = 1.0
        else:
            for _ in range(line_search_iter):
                mid = 0.5 * (lo + hi)
                if float(costs(x + mid * d) @ d) > 0:
                    hi = mid
                else:
                    lo = mid
            alpha = 0.5 * (lo + hi)
        f = f + alpha * (y_path - f)
        x = x + alpha * d
        gap, pc = relative_gap(x)
    if gap > tol:
        warnings.warn(
            f"Frank-Wolfe stopped after max_iter={max_iter} iterations at relative gap {gap:.2e} > tol={tol:g}",
            RuntimeWarning,
            stacklevel=2,
        )
    return WardropResult(
        path_flows=f,
        link_flows=x,
        link_costs=costs(x),
        relative_gap=float(max(gap, 0.0)),
        beckmann=float(net.link_cost_integrals(x, cap).sum()),
        n_iter=n_iter,
        converged=bool(gap <= tol),
    )
