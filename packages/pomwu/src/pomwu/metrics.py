"""Regret, duality gap and equilibrium values."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

__all__ = ["RegretTracker", "RegretSummary", "zero_sum_value", "duality_gap"]


@dataclass(frozen=True)
class RegretSummary:
    """Per-agent regrets after ``rounds`` rounds (arrays of shape ``(n_agents,)``).

    contextual : regret against the best fixed action *per true context*
        ``sum_t <x_t, l_t> - sum_z min_a sum_{t: z_t = z} l_t[a]``
    external : regret against the best single fixed action ``sum_t <x_t, l_t> - min_a sum_t l_t[a]``
    expected_loss : ``sum_t <x_t, l_t>``
    """

    contextual: np.ndarray
    external: np.ndarray
    expected_loss: np.ndarray
    rounds: int


class RegretTracker:
    """Accumulates expected losses and per-context loss sums online (memory O(n_contexts * n_agents * K)).

    Parameters
    ----------
    n_contexts : int
    mask : bool array (n_agents, max_actions)
        Which actions exist (padded entries are excluded from the comparator).
    """

    def __init__(self, n_contexts: int, mask: np.ndarray) -> None:
        self.mask = np.asarray(mask, dtype=bool)
        self.n_contexts = int(n_contexts)
        self.per_context = np.zeros((self.n_contexts, *self.mask.shape))
        self.expected = np.zeros(self.mask.shape[0])
        self.rounds = 0

    def add(self, strategies: np.ndarray, losses: np.ndarray, true_context: int) -> None:
        """Record one round: strategies and loss vectors ``(n_agents, max_actions)``."""
        if not 0 <= true_context < self.n_contexts:
            raise ValueError(f"context {true_context} is outside the declared set {{0, ..., {self.n_contexts - 1}}}")
        losses = np.where(self.mask, losses, 0.0)
        self.expected += np.einsum("jk,jk->j", strategies, losses)
        self.per_context[true_context] += losses
        self.rounds += 1

    def summary(self) -> RegretSummary:
        """Contextual and external regret of every agent so far."""
        big = np.where(self.mask, 0.0, np.inf)
        best_ctx = np.min(self.per_context + big, axis=2).sum(axis=0)
        best_ext = np.min(self.per_context.sum(axis=0) + big, axis=1)
        return RegretSummary(
            contextual=self.expected - best_ctx,
            external=self.expected - best_ext,
            expected_loss=self.expected.copy(),
            rounds=self.rounds,
        )


def zero_sum_value(losses: np.ndarray) -> float:
    """Value ``min_x max_y x^T A y`` of the zero-sum game where the row player pays ``A`` (n, m).

    Solved as a linear program with scipy's HiGHS.
    """
    from scipy.optimize import linprog

    a = np.asarray(losses, dtype=np.float64)
    if a.ndim != 2:
        raise ValueError(f"losses must be a 2-D matrix, got shape {a.shape}")
    n, m = a.shape
    # variables (x_1..x_n, v): minimise v s.t. A^T x <= v, sum x = 1, x >= 0
    c = np.r_[np.zeros(n), 1.0]
    a_ub = np.c_[a.T, -np.ones(m)]
    a_eq = np.r_[np.ones(n), 0.0][None, :]
    res = linprog(
        c, A_ub=a_ub, b_ub=np.zeros(m), A_eq=a_eq, b_eq=[1.0], bounds=[(0, None)] * n + [(None, None)], method="highs"
    )
    if not res.success:
        raise RuntimeError(f"linear program failed: {res.message}")
    return float(res.x[-1])


def duality_gap(losses: np.ndarray, x: np.ndarray, y: np.ndarray) -> float:
    """``max_j (x^T A)_j - min_i (A y)_i`` for the zero-sum game where the row player pays ``A``.

    Non-negative; zero exactly at a Nash equilibrium ``(x, y)``.
    """
    a = np.asarray(losses, dtype=np.float64)
    return float(np.max(x @ a) - np.min(a @ y))
