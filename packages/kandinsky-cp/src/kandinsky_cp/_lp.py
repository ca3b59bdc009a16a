"""The weighted quantile-regression linear program (Algorithm 1 of the paper).

Primal: minimise over beta in R^d
    sum_i rho_tau(S_i - Phi_i beta) - tau * c^T beta + eps * t^T beta,
where rho_tau is the pinball loss, c >= 0 is the feature vector of "phantom" points with an infinite
score (c = 0: plain split quantile regression; c = Phi(x_test): the augmented fit of Gibbs et al.) and the
tiny eps * t^T beta term picks the lowest thresholds when the optimum is not unique (the order statistic
split conformal uses). The dual has n bounded variables and d equality rows:
    maximise S^T eta  subject to  Phi^T eta = eps * t - tau * c,  tau - 1 <= eta_i <= tau.

Solving: HiGHS (dual simplex) on standardised scores (S - Phi v) / s, which leaves the optimal basis
unchanged (S -> S - Phi v shifts beta by v; a positive scale s scales it), gives a starting vertex. The
vertex is then re-solved exactly on d interpolated calibration points in the original units (so special
cases return calibration scores bit for bit) and its optimality conditions are checked exactly: the basic
duals eta_B = Phi_B^{-T} (eps t - tau c - Phi_N^T eta_N) must lie in [tau - 1, tau], with eta_N fixed by
the signs of the residuals. When they do not (HiGHS' tolerances hide near-tied scores), an exact
active-set descent (Barrodale-Roberts pivots with a weighted-median line search) moves to the optimal
vertex. The same descent, warm-started from the calibration fit, solves the augmented LPs of ``exact=True``.
"""

from __future__ import annotations

import logging
import math
from dataclasses import dataclass

import numpy as np

logger = logging.getLogger(__name__)

_TIE_EPS = 1e-5
# Optimality tolerance on the dual variables (dimensionless: they live in [tau - 1, tau]).
_ETA_TOL = 1e-9
# The phantoms' stand-in for +infinity, in standardised score units.
_CAP = 1e6


class InfeasibleQuantileLP(ValueError):
    """The quantile-regression LP is unbounded: some group has too little calibration weight."""


@dataclass(frozen=True)
class QuantileLPResult:
    """Solution of the weighted quantile-regression LP.

    beta: (d,) coefficients; the threshold of a point is ``Phi(x, y) @ beta``.
    duals: (n,) dual variables eta_i in [tau - 1, tau]; interior values mark interpolated points.
    objective: optimal value of the primal (pinball loss minus the phantom term).
    n_interpolated: number of calibration points with S_i == Phi_i beta after polishing.
    basis: indices of the rows the thresholds interpolate (one per independent column).
    columns: indices of a maximal set of linearly independent columns of Phi (beta is 0 elsewhere).
    center, scale: the standardisation (S - Phi center) / scale used for HiGHS.
    n_pivots: active-set pivots after the HiGHS start (0 when HiGHS' vertex was optimal).
    """

    beta: np.ndarray
    duals: np.ndarray
    objective: float
    n_interpolated: int
    basis: np.ndarray
    columns: np.ndarray
    center: np.ndarray
    scale: float
    n_pivots: int = 0


def independent_columns(phi: np.ndarray) -> np.ndarray:
    """Sorted indices of a maximal set of linearly independent columns (QR with column pivoting)."""
    if phi.shape[1] == 0 or phi.shape[0] == 0:
        return np.arange(0)
    import scipy.linalg  # on first use: `import kandinsky_cp` stays light

    _, r, piv = scipy.linalg.qr(phi, mode="economic", pivoting=True)
    diag = np.abs(np.diag(r))
    if diag.size == 0 or diag[0] == 0:
        return np.arange(0)
    rank = int(np.sum(diag > diag[0] * max(phi.shape) * 1e-12))
    return np.sort(piv[:rank])


def standardise(phi: np.ndarray, scores: np.ndarray) -> tuple[np.ndarray, float]:
    """Center v (least squares of the scores on Phi) and scale s (mean |residual|) of the scores."""
    v = np.linalg.lstsq(phi, scores, rcond=None)[0] if phi.shape[1] else np.zeros(0)
    resid = scores - phi @ v
    s = float(np.mean(np.abs(resid))) if resid.size else 0.0
    if not (np.isfinite(s) and s > 0):
        s = float(np.max(np.abs(resid), initial=0.0))
    if not (np.isfinite(s) and s > 0):
        s = 1.0
    return v, s


def _highs_dual(phi: np.ndarray, scores: np.ndarray, tau: float, rhs: np.ndarray):
    # HiGHS presolve costs ~1 s on this box-constrained dual and gains nothing: off.
    from scipy.optimize import linprog

    res = linprog(-scores, A_eq=phi.T, b_eq=rhs, bounds=(tau - 1.0, tau), method="highs",
                  options={"presolve": False, "primal_feasibility_tolerance": 1e-10,
                           "dual_feasibility_tolerance": 1e-10})
    if res.status == 2:
        raise InfeasibleQuantileLP("the quantile-regression LP is unbounded for this calibration set")
    if res.status != 0:
        raise RuntimeError(f"HiGHS failed on the quantile-regression LP: {res.message}")
    return -np.asarray(res.eqlin.marginals, dtype=float), np.asarray(res.x, dtype=float)


def _pick_basis(phi: np.ndarray, resid: np.ndarray, duals: np.ndarray | None, tau: float) -> np.ndarray | None:
    """Pick d linearly independent rows, the smallest |residual| first (HiGHS' interior duals break ties)."""
    d = phi.shape[1]
    key = np.abs(resid)
    if duals is not None:
        interior = (duals > tau - 1 + 1e-9) & (duals < tau - 1e-9)
        key = key + np.where(interior, 0.0, 1e-300)
    order = np.argsort(key, kind="stable")
    chosen: list[int] = []
    q = np.zeros((d, 0))
    for i in order[: max(200, 8 * d + 32)]:
        row = phi[i]
        rest = row - q @ (q.T @ row)
        norm = float(np.linalg.norm(rest))
        if norm > 1e-9 * max(1.0, float(np.linalg.norm(row))):
            q = np.column_stack([q, rest / norm])
            chosen.append(int(i))
            if len(chosen) == d:
                return np.array(chosen)
    return None


def _partition_basis(phi: np.ndarray, scores: np.ndarray, tau: float) -> np.ndarray | None:
    """For disjoint 0/1 groups (every row in exactly one): the row of each group's ceil(n_j tau)-th score.

    That vertex is optimal for the plain quantile LP; the exact check in :func:`_active_set` confirms it.
    Returns None for any other design.
    """
    nonzero = phi != 0
    if not (np.all(nonzero.sum(axis=1) == 1) and np.all(phi[nonzero] == 1.0)):
        return None
    group = np.argmax(phi, axis=1)
    basis = np.empty(phi.shape[1], dtype=int)
    for j in range(phi.shape[1]):
        rows = np.flatnonzero(group == j)
        if rows.size == 0:
            return None
        k = max(1, math.ceil(round(tau * rows.size, 9)))
        basis[j] = rows[np.argsort(scores[rows], kind="stable")[k - 1]]
    return basis


def _active_set(phi: np.ndarray, scores: np.ndarray, tau: float, g0: np.ndarray, basis: np.ndarray,
                eta_hint: np.ndarray | None, max_iter: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, int]:
    """Exact descent from the vertex interpolating ``basis`` to an optimal vertex of the primal.

    g0 = eps * t - tau * c (the gradient of the linear terms). Returns (beta, eta, basis, pivots).
    Raises InfeasibleQuantileLP when a descent direction has no breakpoint (the primal is unbounded).
    """
    n, d = phi.shape
    basis = np.array(basis, dtype=int)
    beta = np.linalg.solve(phi[basis], scores[basis])
    resid = scores - phi @ beta
    eta = np.where(resid > 0, tau, tau - 1.0)
    zero = resid == 0
    if eta_hint is not None and zero.any():
        eta[zero] = np.where(eta_hint[zero] >= tau - 0.5, tau, tau - 1.0)
    in_basis = np.zeros(n, dtype=bool)
    for it in range(max_iter + 1):
        in_basis[:] = False
        in_basis[basis] = True
        eta_n = np.where(in_basis, 0.0, eta)
        phi_b = phi[basis]
        eta_b = np.linalg.solve(phi_b.T, g0 - phi.T @ eta_n)
        low = (tau - 1.0 - _ETA_TOL) - eta_b
        high = eta_b - (tau + _ETA_TOL)
        viol = np.maximum(low, high)
        if viol.max(initial=-1.0) <= 0:
            eta[basis] = eta_b
            return beta, eta, basis, it
        if it == max_iter:
            logger.warning("quantile LP: active-set descent stopped after %d pivots (max dual violation %.3g)",
                           it, float(viol.max()))
            eta[basis] = np.clip(eta_b, tau - 1.0, tau)
            return beta, eta, basis, it
        # most violated basic dual; Bland's rule (first violated) after many pivots, against cycling
        j = int(np.argmax(viol)) if it < 10 * d + 50 else int(np.flatnonzero(viol > 0)[0])
        sgn = 1.0 if low[j] > 0 else -1.0  # +1: raise row j's threshold (its residual turns negative)
        slope = (eta_b[j] + 1.0 - tau) if sgn > 0 else (tau - eta_b[j])
        e = np.zeros(d)
        e[j] = sgn
        delta = np.linalg.solve(phi_b, e)
        a = phi @ delta
        above = eta >= tau - 0.5
        cross = ~in_basis & (((above) & (a > 0)) | ((~above) & (a < 0)))
        idx = np.flatnonzero(cross)
        if idx.size == 0:
            raise InfeasibleQuantileLP("the quantile-regression LP is unbounded for this calibration set")
        steps = np.maximum(resid[idx] / a[idx], 0.0)
        order = np.lexsort((idx, steps))
        cum = slope + np.cumsum(np.abs(a[idx[order]]))
        k = int(np.searchsorted(cum >= 0, True)) if np.any(cum >= 0) else -1
        if k < 0:
            raise InfeasibleQuantileLP("the quantile-regression LP is unbounded for this calibration set")
        flipped = idx[order[:k]]
        enter = int(idx[order[k]])
        eta[flipped] = np.where(eta[flipped] >= tau - 0.5, tau - 1.0, tau)
        leave = int(basis[j])
        eta[leave] = tau - 1.0 if sgn > 0 else tau
        basis[j] = enter
        beta = np.linalg.solve(phi[basis], scores[basis])
        resid = scores - phi @ beta
        resid[basis] = 0.0
    raise AssertionError("unreachable")  # pragma: no cover


def solve_quantile_lp(phi: np.ndarray, scores: np.ndarray, tau: float,
                      phantom: np.ndarray | None = None,
                      tie_direction: np.ndarray | None = None, *,
                      cap_rows: np.ndarray | None = None,
                      start: QuantileLPResult | None = None,
                      max_iter: int | None = None) -> QuantileLPResult:
    """Weighted quantile regression of ``scores`` on ``phi`` at level ``tau``.

    phi: (n, d) nonnegative group weights; scores: (n,); tau in (0, 1); phantom: (d,) or None, the features
    of a point with score +infinity (the augmented fit).
    tie_direction: (d,) vector whose product with beta is minimised over the optimal set when it is not
    a single point (default: the calibration thresholds' sum, i.e. the lowest thresholds).
    cap_rows: (m, d) extra rows whose score is a large finite stand-in for +infinity (``_CAP`` in
    standardised units); they are appended after the n calibration rows in ``basis`` and ``duals``.
    start: a previous result on the same calibration rows (same ``columns``): skip HiGHS and descend from
    its vertex (warm start).
    Raises InfeasibleQuantileLP when the primal is unbounded (too little weight in some direction).
    """
    phi = np.ascontiguousarray(phi, dtype=float)
    scores = np.ascontiguousarray(scores, dtype=float)
    d = phi.shape[1]
    c = np.zeros(d) if phantom is None else np.asarray(phantom, dtype=float)
    tie = phi.sum(axis=0) if tie_direction is None else np.asarray(tie_direction, dtype=float)
    tie = tie / max(float(np.max(np.abs(tie))), 1e-300)
    if start is not None:
        cols, v, s = start.columns, start.center, start.scale
    else:
        cols = independent_columns(phi)
        v_red, s = standardise(phi[:, cols], scores)
        v = np.zeros(d)
        v[cols] = v_red
    p = phi[:, cols]
    rhs = _TIE_EPS * tie[cols] - tau * c[cols]
    if cap_rows is not None and len(cap_rows):
        rows = np.asarray(cap_rows, dtype=float)
        cap_std = _CAP * (1.0 + float(np.max(np.abs((scores - phi @ v) / s), initial=0.0)))
        p = np.vstack([p, rows[:, cols]])
        scores = np.concatenate([scores, s * cap_std + rows @ v])
    if max_iter is None:
        max_iter = 20 * len(cols) + 2000
    eta_hint = None
    partition = _partition_basis(p, scores, tau) if start is None and not np.any(c) else None
    if start is not None:
        basis = start.basis
    elif partition is not None:
        basis = partition  # disjoint indicator groups: each group's order statistic, no HiGHS needed
    else:
        z = (scores - (phi if cap_rows is None or not len(cap_rows) else np.vstack([phi, cap_rows])) @ v) / s
        beta_std, eta_hint = _highs_dual(p, z, tau, rhs)
        picked = _pick_basis(p, z - p @ beta_std, eta_hint, tau)
        if picked is None:  # no interpolating vertex found: keep HiGHS' solution
            beta = np.zeros(d)
            beta[cols] = s * beta_std + v[cols]
            resid = scores - p @ beta[cols]
            n_int = int(np.sum(np.abs(resid) <= 1e-9 * s))
            return QuantileLPResult(beta=beta, duals=eta_hint, objective=float(eta_hint @ scores), n_interpolated=n_int,
                                    basis=np.arange(0), columns=cols, center=v, scale=s)
        basis = picked
    beta_red, eta, basis, pivots = _active_set(p, scores, tau, rhs, basis, eta_hint, max_iter)
    if pivots:
        logger.debug("quantile LP: %d active-set pivots after the start vertex", pivots)
    beta = np.zeros(d)
    beta[cols] = beta_red
    resid = scores - p @ beta_red
    mag = np.abs(scores) + np.abs(p) @ np.abs(beta_red)
    n_int = int(np.sum(np.abs(resid) <= 8 * np.finfo(float).eps * mag))
    objective = float(np.sum(np.where(resid > 0, tau * resid, (tau - 1.0) * resid)) - tau * (c @ beta))
    return QuantileLPResult(beta=beta, duals=eta, objective=objective, n_interpolated=n_int, basis=basis,
                            columns=cols, center=v, scale=s, n_pivots=pivots)
