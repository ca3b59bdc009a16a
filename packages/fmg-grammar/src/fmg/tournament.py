"""Bradley-Terry strengths from pairwise comparisons (tournaments between candidate decompositions)."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

__all__ = ["bradley_terry"]


def bradley_terry(n_items: int, comparisons: Sequence[tuple[int, int]], *, alpha: float = 0.0,
                  tol: float = 1e-12, max_iter: int = 10_000) -> np.ndarray:
    """Maximum-likelihood Bradley-Terry log-strengths (Hunter's MM iterations), centred to mean 0.

    Parameters
    ----------
    n_items : int
        Number of candidates.
    comparisons : sequence of (winner, loser)
        Outcomes of the pairwise comparisons.
    alpha : float, default 0.0
        Regularisation: ``alpha`` virtual wins of every item over every other, needed when
        some item never wins or loses.
    tol : float, default 1e-12
        Stop when the largest change of a log-strength is below this.
    max_iter : int, default 10000
        Iteration cap.

    Returns
    -------
    numpy.ndarray, shape (n_items,)
        Log-strengths ``theta`` with ``P(i beats j) = 1 / (1 + exp(theta_j - theta_i))``, mean 0 (the
        normalisation of ``choix.ilsr_pairwise`` and ``choix.mm_pairwise``).

    Examples
    --------
    >>> from fmg.tournament import bradley_terry
    >>> theta = bradley_terry(2, [(0, 1), (0, 1), (1, 0)])
    >>> round(float(theta[0] - theta[1]), 6)  # log(2 / 1)
    0.693147
    """
    if isinstance(n_items, bool) or not isinstance(n_items, int) or n_items < 1:
        raise ValueError(f"n_items must be a positive int, got {n_items!r}")
    wins = np.full((n_items, n_items), float(alpha))
    np.fill_diagonal(wins, 0.0)
    for k, (w, loser) in enumerate(comparisons):
        if not (0 <= w < n_items and 0 <= loser < n_items) or w == loser:
            raise ValueError(f"comparison {k} {(w, loser)!r}: expected two distinct items in [0, {n_items - 1}]")
        wins[w, loser] += 1.0
    games = wins + wins.T
    total_wins = wins.sum(axis=1)
    if np.any(total_wins == 0) and n_items > 1:
        raise ValueError("an item never wins: the maximum-likelihood estimate does not exist; set alpha > 0")
    p = np.ones(n_items) / n_items
    for _ in range(max_iter):
        denom = (games / (p[:, None] + p[None, :])).sum(axis=1)
        new = total_wins / denom
        new /= new.sum()
        if np.max(np.abs(np.log(new) - np.log(p))) < tol:
            p = new
            break
        p = new
    theta = np.log(p)
    return theta - theta.mean()
