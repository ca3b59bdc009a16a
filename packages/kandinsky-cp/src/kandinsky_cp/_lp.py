"""The weighted quantile-regression linear program (Algorithm 1 of the paper), solved with HiGHS.

Primal: minimise over beta in R^d
    sum_i rho_tau(S_i - Phi_i beta) - tau * c^T beta,
where rho_tau is the pinball loss and c >= 0 is the feature vector of "phantom" points with an infinite
score (c = 0: plain split quantile regression; c = Phi(x_test): the augmented fit of Gibbs et al.).
We solve the dual, which has n bounded variables and only d equality rows:
    maximise S^T eta  subject to  Phi^T eta = -tau * c,  tau - 1 <= eta_i <= tau,
and read beta off the equality multipliers. The solution is then snapped onto the d calibration points
it interpolates, so special cases return calibration scores bit for bit.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy.optimize import linprog

_TIE_EPS = 1e-5


class InfeasibleQuantileLP(ValueError):
    """The quantile-regression LP is unbounded: some group has too little calibration weight."""


@dataclass(frozen=True)
class QuantileLPResult:
    """Solution of the weighted quantile-regression LP.

    beta: (d,) coefficients; the threshold of a point is ``Phi(x, y) @ beta``.
    duals: (n,) dual variables eta_i in [tau - 1, tau]; interior values mark interpolated points.
    objective: optimal value of the primal (pinball loss minus the phantom term).
    n_interpolated: number of calibration points with S_i == Phi_i beta after polishing.
    """

    beta: np.ndarray
    duals: np.ndarray
    objective: float
    n_interpolated: int


def _solve_dual(phi: np.ndarray, scores: np.ndarray, tau: float, phantom: np.ndarray, tie: np.ndarray):
    # The tie term adds _TIE_EPS * tie^T beta to the primal: among optimal betas (an interval when the
    # problem is degenerate, e.g. an intercept with n * tau an integer) it picks the lowest thresholds,
    # the order statistic split conformal uses. It is far above HiGHS' 1e-7 feasibility tolerance and far
    # below the gaps between dual vertices of indicator designs (multiples of 1/(weights)).
    # HiGHS presolve costs ~1 s on this box-constrained dual and gains nothing: off.
    res = linprog(-scores, A_eq=phi.T, b_eq=_TIE_EPS * tie - tau * phantom, bounds=(tau - 1.0, tau),
                  method="highs", options={"presolve": False})
    if res.status == 2:
        raise InfeasibleQuantileLP("the quantile-regression LP is unbounded for this calibration set")
    if res.status != 0:
        raise RuntimeError(f"HiGHS failed on the quantile-regression LP: {res.message}")
    beta = -np.asarray(res.eqlin.marginals, dtype=float)
    return beta, np.asarray(res.x, dtype=float), float(-res.fun)


def _independent_rows(sub: np.ndarray, d: int) -> np.ndarray | None:
    """Indices of d linearly independent rows of ``sub`` (greedy, in order), or None."""
    chosen: list[int] = []
    for i in range(sub.shape[0]):
        if np.linalg.matrix_rank(sub[chosen + [i]]) == len(chosen) + 1:
            chosen.append(i)
            if len(chosen) == d:
                return np.array(chosen)
    return None


def _polish(phi: np.ndarray, scores: np.ndarray, beta: np.ndarray) -> tuple[np.ndarray, int]:
    """Re-solve beta exactly on d calibration points the LP interpolates (a vertex has d of them).

    A square solve (LU) returns the calibration scores themselves for indicator designs, bit for bit.
    """
    d = phi.shape[1]
    scale = max(1.0, float(np.max(np.abs(scores))) if scores.size else 1.0)
    resid = scores - phi @ beta
    order = np.argsort(np.abs(resid), kind="stable")
    for tol in (1e-10, 1e-8, 1e-6):
        rows = order[np.abs(resid[order]) <= tol * scale]
        if rows.size < d:
            continue
        rows = rows[: 4 * d + 16]  # many ties: the first few candidates suffice
        pick = _independent_rows(phi[rows], d)
        if pick is None:
            continue
        basis = rows[pick]
        exact = np.linalg.solve(phi[basis], scores[basis])
        if np.max(np.abs(phi[rows] @ exact - scores[rows])) <= 10 * tol * scale:
            return exact, int(np.sum(np.abs(scores - phi @ exact) <= 1e-12 * scale))
    return beta, int(np.sum(np.abs(resid) <= 1e-9 * scale))


def solve_quantile_lp(phi: np.ndarray, scores: np.ndarray, tau: float,
                      phantom: np.ndarray | None = None,
                      tie_direction: np.ndarray | None = None) -> QuantileLPResult:
    """Weighted quantile regression of ``scores`` on ``phi`` at level ``tau`` (one LP, HiGHS).

    phi: (n, d) nonnegative group weights; scores: (n,); tau in (0, 1); phantom: (d,) or None.
    tie_direction: (d,) vector whose product with beta is minimised over the optimal set when it is not
    a single point (default: the calibration thresholds' sum, i.e. the lowest thresholds).
    Raises InfeasibleQuantileLP when the primal is unbounded (too little weight in some direction).
    """
    phi = np.ascontiguousarray(phi, dtype=float)
    scores = np.ascontiguousarray(scores, dtype=float)
    d = phi.shape[1]
    c = np.zeros(d) if phantom is None else np.asarray(phantom, dtype=float)
    tie = phi.sum(axis=0) if tie_direction is None else np.asarray(tie_direction, dtype=float)
    tie = tie / max(float(np.max(np.abs(tie))), 1e-300)
    beta, duals, best = _solve_dual(phi, scores, tau, c, tie)
    beta, n_interp = _polish(phi, scores, beta)
    return QuantileLPResult(beta=beta, duals=duals, objective=best, n_interpolated=n_interp)
