"""The optimal (minimum-trace) multivariate Gaussian covariance for data-specific indistinguishability.

Given outcome differences s_1..s_n in R^d (rows of ``differences``) and budgets eps_i, DSI adds
Gaussian noise N(0, Sigma) chosen to solve

    minimise  tr(Sigma)   subject to   s_i^T Sigma^{-1} s_i <= eps_i  for every i,

the least expected squared noise norm under which every difference has Mahalanobis norm within its
budget. The dual is max_{mu >= 0} 2 tr((S diag(mu) S^T)^{1/2}) - eps^T mu with S = [s_1 .. s_n] and
Sigma(mu) = (S diag(mu) S^T)^{1/2}; the gradient in mu_i is s_i^T Sigma^{-1} s_i - eps_i and the duality
gap is -mu^T grad. Everything is solved in the span of the differences (rank r <= n), in float64,
so the d x d covariance is never formed.
"""

from __future__ import annotations

import logging
import math
from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np
from icml25_shared.random import check_random_state
from icml25_shared.validation import Interval, Options, check_params

from dsi._validation import _CHUNK_ROWS, check_budgets, check_differences, check_positive, gram

__all__ = ["IsotropicCovariance", "OptimalCovariance", "isotropic_covariance", "optimal_covariance"]

log = logging.getLogger(__name__)

Method = Literal["mirror-ascent", "sdp"]
_METHODS = ("mirror-ascent", "sdp")
Residual = Literal["noise", "raise"]
_RESIDUAL = ("noise", "raise")
# float64 differences up to this many entries are decomposed by an SVD, larger ones through the Gram matrix.
_SVD_MAX_ENTRIES = 1 << 24
# Newton refinement needs an (n, r^2) array; beyond this many entries the solver stays first-order.
_NEWTON_MAX_ENTRIES = 4_000_000


@dataclass(frozen=True)
class OptimalCovariance:
    """The DSI covariance Sigma = A A^T with A = differences^T @ coefficients (d x r, never stored).

    Attributes
    ----------
    coefficients : numpy.ndarray of shape (n, r) or (n, r + m)
        The noise factor is ``differences.T @ coefficients`` (m extra columns carry the noise on the
        left-out part).
    reduced_covariance : numpy.ndarray of shape (r, r)
        Sigma in the orthonormal basis of the kept span (without the left-out part's noise).
    trace : float
        tr(Sigma), the expected squared norm of one noise draw.
    dual : numpy.ndarray of shape (n,)
        Lagrange multipliers mu (zero for slack constraints).
    dual_objective : float
        The dual value at ``dual``, a certified lower bound on the optimal trace.
    mahalanobis : numpy.ndarray of shape (n,)
        s_i^T Sigma^+ s_i for every difference, on the full vector (an upper bound where the left-out
        part is rank deficient).
    budgets : numpy.ndarray of shape (n,)
        The budgets eps_i that ``mahalanobis`` must not exceed.
    kkt_residual : float
        max_i min(|g_i|, mu_i) / eps_i with g_i = mahalanobis_i - eps_i (the reference's test).
    duality_gap : float
        (trace - dual_objective) / dual_objective, a certificate of relative suboptimality (it includes
        the noise on the part of the differences outside the kept span).
    iterations : int
        Solver iterations (mirror-ascent steps plus Newton steps, or the SDP solver's).
    converged : bool
        Whether the certified gap on the kept span reached ``tol`` (``duality_gap`` minus the left-out
        part's share; the two are equal when nothing is left out).
    rank : int
        r, the dimension of the span of the differences that was kept.
    dim : int
        d, the ambient dimension.
    method : str
        "mirror-ascent" or "sdp".
    feasibility_scale : float
        Factor (>= 1) applied to the solver's Sigma so every constraint holds exactly (it includes the
        1 / (1 - residual_share) reserve).
    residual_norm : float
        max_i of the norm of s_i outside the kept span (singular values below ``rank_tol * max``).
    residual_trace : float
        The part of ``trace`` added on that left-out part (0 when nothing was left out).
    residual_share : float
        theta, the share of every budget reserved for the left-out part; ``mahalanobis`` is the full-vector
        loss, kept part plus left-out part.
    differences : numpy.ndarray of shape (n, d)
        The differences (as given, float32 or float64).
    basis_coefficients : numpy.ndarray of shape (n, r)
        ``differences.T @ basis_coefficients`` is an orthonormal basis of the span.
    """

    coefficients: np.ndarray
    reduced_covariance: np.ndarray
    trace: float
    dual: np.ndarray
    dual_objective: float
    mahalanobis: np.ndarray
    budgets: np.ndarray
    kkt_residual: float
    duality_gap: float
    iterations: int
    converged: bool
    rank: int
    dim: int
    method: str
    feasibility_scale: float
    residual_norm: float
    residual_trace: float
    residual_share: float
    differences: np.ndarray = field(repr=False)
    basis_coefficients: np.ndarray = field(repr=False)

    @property
    def max_eigenvalue(self) -> float:
        """Largest noise variance along any direction (the reference's sqrt-max-eigenvalue, squared)."""
        return float(np.linalg.eigvalsh(self.reduced_covariance)[-1])

    def factor(self) -> np.ndarray:
        """(d, r) float64 matrix A with Sigma = A A^T."""
        return _rmatmul(self.differences, self.coefficients)

    def basis(self) -> np.ndarray:
        """(d, r) orthonormal basis of the span of the differences."""
        return _rmatmul(self.differences, self.basis_coefficients)

    def covariance(self, *, max_dim: int = 20_000) -> np.ndarray:
        """The dense (d, d) covariance; refused above ``max_dim`` to keep large d rank-reduced."""
        if self.dim > max_dim:
            raise ValueError(
                f"the dense covariance would be {self.dim}x{self.dim}; use factor() or sample() "
                f"instead, or raise max_dim (currently {max_dim})"
            )
        a = self.factor()
        return a @ a.T

    def sample(self, random_state: Any = None, size: int | None = None) -> np.ndarray:
        """Draw noise from N(0, Sigma).

        Parameters
        ----------
        random_state : None, int or numpy.random.Generator, optional
            Source of the draws (a Generator is advanced).
        size : int, optional
            Number of independent draws.

        Returns
        -------
        numpy.ndarray
            float64 of shape (d,), or (size, d) with ``size``.
        """
        gen = check_random_state(random_state)
        r = self.coefficients.shape[1]
        z = gen.standard_normal(r if size is None else (r, size))
        out = _rmatmul(self.differences, self.coefficients @ z)
        return out if size is None else out.T


@dataclass(frozen=True)
class IsotropicCovariance:
    """The isotropic baseline sigma^2 I with sigma^2 = max_i ||s_i||^2 / eps_i.

    Attributes
    ----------
    variance : float
        sigma^2.
    dim : int
        d, the ambient dimension.
    rank : int
        r, the dimension of span(differences).
    trace : float
        d sigma^2, the noise an isotropic mechanism adds in R^d (what DP-SGD does).
    span_trace : float
        r sigma^2, the same noise restricted to span(differences) (the reference code's comparison).
    mahalanobis : numpy.ndarray of shape (n,)
        s_i^T Sigma^{-1} s_i for every difference.
    budgets : numpy.ndarray of shape (n,)
        The budgets eps_i.
    """

    variance: float
    dim: int
    rank: int
    trace: float
    span_trace: float
    mahalanobis: np.ndarray
    budgets: np.ndarray

    def sample(self, random_state: Any = None, size: int | None = None) -> np.ndarray:
        """Draw noise from N(0, sigma^2 I_d).

        Parameters
        ----------
        random_state : None, int or numpy.random.Generator, optional
            Source of the draws (a Generator is advanced).
        size : int, optional
            Number of independent draws.

        Returns
        -------
        numpy.ndarray
            float64 of shape (d,), or (size, d) with ``size``.
        """
        gen = check_random_state(random_state)
        shape = self.dim if size is None else (size, self.dim)
        return np.sqrt(self.variance) * gen.standard_normal(shape)


def _rmatmul(diffs: np.ndarray, coef: np.ndarray) -> np.ndarray:
    """diffs.T @ coef in float64, in column chunks so a float32 diffs is not copied whole."""
    if diffs.dtype == np.float64:
        return diffs.T @ coef
    d = diffs.shape[1]
    out = np.empty((d,) + coef.shape[1:])
    for start in range(0, d, _CHUNK_ROWS):
        out[start : start + _CHUNK_ROWS] = np.asarray(diffs[:, start : start + _CHUNK_ROWS], dtype=np.float64).T @ coef
    return out


def _span(diffs: np.ndarray, rank_tol: float) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """A rank-revealing decomposition diffs = V diag(s) Q^T (Q never formed).

    The eigendecomposition of the (streamed) Gram matrix resolves singular values to ~1e-8 of the largest
    (eigenvalues below n * 2.2e-16 of the largest are rounding and set to 0); when a kept singular value
    falls below 1e-4 of the largest or some are left out, float64 inputs up to ``_SVD_MAX_ENTRIES``
    entries are decomposed again by an SVD of the differences (accurate to ~1e-16 of the largest). Returns the kept singular values s (r,), their left vectors
    V (n, r), and the dropped squared singular values (m,) with their left vectors (n, m); a singular
    value is kept when it exceeds ``rank_tol`` times the largest.
    """
    n, d = diffs.shape
    lam, vec = np.linalg.eigh(gram(diffs))
    lam, vec = lam[::-1], vec[:, ::-1]
    lam = np.where(lam > n * np.finfo(np.float64).eps * lam[0], lam, 0.0)  # below that, Gram rounding
    sv = np.sqrt(lam)
    keep = sv > rank_tol * sv[0]
    # the Gram matrix resolves singular values to ~1e-8 of the largest: when one below 1e-4 of it is
    # kept, or some are left out, float64 input is decomposed again by an SVD
    small = sv[keep][-1] < 1e-4 * sv[0] or not keep.all()
    if small and diffs.dtype == np.float64 and n * d <= _SVD_MAX_ENTRIES:
        vec, sv, _ = np.linalg.svd(diffs, full_matrices=False)
        lam = sv**2
        keep = sv > rank_tol * sv[0]
    return sv[keep], vec[:, keep], lam[~keep], vec[:, ~keep]


class _Dual:
    """The dual f(mu) = 2 ||C diag(sqrt(mu))||_* - eps^T mu and its derivatives on coordinates C (r x n).

    f is evaluated through an SVD of B = C diag(sqrt(mu)) = U diag(s) V^T, never through
    M = B B^T, whose condition number is the square of Sigma(mu) = U diag(s) U^T's. f(mu) is a valid
    lower bound on the optimal trace for every mu >= 0 (singular Sigma(mu) included).
    """

    def __init__(self, c: np.ndarray, budgets: np.ndarray) -> None:
        self.c = c
        self.eps = budgets

    def evaluate(self, mu: np.ndarray) -> dict[str, Any]:
        root = np.sqrt(mu)
        u, s, vt = np.linalg.svd(self.c * root, full_matrices=False)
        tr = float(s.sum())
        # q_i = c_i^T Sigma^{-1} c_i = [V diag(s) V^T]_ii / mu_i (the exact gradient of the computed f);
        # with mu_i = 0 it is read from U directly (inf when c_i leaves the range of Sigma)
        pos = mu > 0
        b = np.empty_like(self.c)
        b[:, pos] = s[:, None] * vt[:, pos] / root[pos]
        b[:, ~pos] = u.T @ self.c[:, ~pos]
        with np.errstate(divide="ignore", invalid="ignore"):
            q = np.where(pos, np.sum(s[:, None] * vt**2, axis=0) / np.where(pos, mu, 1.0), 0.0)
            if not pos.all():
                q[~pos] = np.sum(b[:, ~pos] ** 2 / s[:, None], axis=0)
        return {"mu": mu, "q": q, "trace": tr, "f": 2.0 * tr - float(self.eps @ mu), "sw": s, "u": u, "b": b}

    @staticmethod
    def hessian(state: dict[str, Any]) -> np.ndarray:
        """d^2 f / dmu_i dmu_j = -sum_kl a_ik a_il b_jk b_jl / (s_k + s_l), a = b / s."""
        sw, b = state["sw"], state["b"]
        with np.errstate(divide="ignore", invalid="ignore"):
            a = np.nan_to_num(b / sw[:, None], nan=0.0, posinf=0.0, neginf=0.0)
            kern = np.nan_to_num(1.0 / (sw[:, None] + sw[None, :]), posinf=0.0)
        n = b.shape[1]
        va = (a.T[:, :, None] * a.T[:, None, :]).reshape(n, -1)
        vb = (b.T[:, :, None] * b.T[:, None, :]).reshape(n, -1)
        h = -(va * kern.ravel()) @ vb.T
        return 0.5 * (h + h.T)


def _mahalanobis(u: np.ndarray, s: np.ndarray, c: np.ndarray) -> np.ndarray:
    """c_i^T Sigma^{-1} c_i for Sigma = U diag(s) U^T, through the whitened coordinates diag(s)^-1/2 U^T c."""
    with np.errstate(divide="ignore", invalid="ignore"):
        white = (u.T @ c) / np.sqrt(s)[:, None]
        q = np.sum(white**2, axis=0)
    return np.where(np.isnan(q), np.inf, q)


def _certificate(dual: _Dual, state: dict[str, Any]) -> float:
    """Certified relative gap of t * Sigma(mu) against the dual bound f(mu), t the feasibility scale."""
    t = max(1.0, float(np.max(_mahalanobis(state["u"], state["sw"], dual.c) / dual.eps)))
    return (t * state["trace"] - state["f"]) / abs(state["f"])


def _mirror_step(dual: _Dual, state: dict[str, Any], eta: float) -> tuple[dict[str, Any], float] | None:
    """One exponentiated-gradient step mu <- mu exp(eta (m_i / eps_i - 1)) with backtracking; None on stall."""
    h = state["q"] / dual.eps - 1.0
    while eta >= 1e-30:
        cand = dual.evaluate(state["mu"] * np.exp(np.clip(eta * h, -50.0, 50.0)))
        if cand["f"] > state["f"]:
            return cand, min(eta * 1.5, 1e6)
        eta *= 0.5
    return None


def _newton_step(dual: _Dual, state: dict[str, Any]) -> dict[str, Any] | None:
    """Take a Newton step on the multipliers of constraints that are not clearly slack.

    (Their own multipliers decay geometrically), with backtracking; None when no ascent is found. The
    system is solved in the scaled variables mu_i * x_i (a diagonal preconditioner), with a ridge that
    keeps the (negative semidefinite) Hessian's Cholesky factorisation defined.
    """
    eps, mu, f = dual.eps, state["mu"], state["f"]
    g = state["q"] - eps
    slack = g < -1e-3 * eps
    free = ~slack
    if not free.any():
        return None
    k = int(free.sum())
    scale = mu[free]
    hess = -dual.hessian(state)[np.ix_(free, free)] * scale[:, None] * scale[None, :]
    rhs = g[free] * scale
    ridge = 1e-14 * max(float(np.trace(hess)), 1e-300) / k
    step = None
    for _ in range(8):
        try:
            chol = np.linalg.cholesky(hess + ridge * np.eye(k))
        except np.linalg.LinAlgError:
            ridge *= 100.0
            continue
        step = scale * np.linalg.solve(chol.T, np.linalg.solve(chol, rhs))
        break
    if step is None or not np.all(np.isfinite(step)):
        return None
    alpha = 1.0
    while alpha >= 1e-12:
        new_mu = mu.copy()
        new_mu[free] = np.maximum(mu[free] + alpha * step, 0.1 * mu[free])
        new_mu[slack] = mu[slack] * 0.1**alpha
        cand = dual.evaluate(new_mu)
        if cand["f"] >= f and not np.array_equal(new_mu, mu):
            return cand
        alpha *= 0.5
    return None


def _mirror_ascent(dual: _Dual, tol: float, max_iter: int) -> tuple[dict[str, Any], int, bool]:
    """Solve the dual by exponentiated-gradient ascent, then Newton steps.

    Exponentiated-gradient ascent on mu (the reference's mPGD) with adaptive step, then Newton steps
    on the constraints that are not clearly slack, which gives the SDP optimum to ~1e-8 where mirror
    ascent alone stalls on ill-conditioned differences.
    """
    eps = dual.eps
    n, r = dual.c.shape[1], dual.c.shape[0]
    mu = np.sum(dual.c**2, axis=0) / eps**2  # exact for orthogonal differences
    state = dual.evaluate(mu)
    eta = 1.0
    newton_ok = n * r * r <= _NEWTON_MAX_ENTRIES
    first_order_iters = 20 if newton_ok else max_iter
    stalled = {"mirror": False, "newton": not newton_ok}
    for it in range(max_iter):
        gap = _certificate(dual, state)
        if gap <= tol:
            return state, it, True
        use_newton = not stalled["newton"] and (it >= first_order_iters or stalled["mirror"])
        found: Any = _newton_step(dual, state) if use_newton else _mirror_step(dual, state, eta)
        if found is None:
            stalled["newton" if use_newton else "mirror"] = True
            if all(stalled.values()):
                return state, it, False
            if not use_newton:
                eta = 1.0
            continue
        if not use_newton:
            found, eta = found  # the mirror step also returns its next step size
            stalled["newton"] = not newton_ok  # progress: Newton may be retried after a stall
        else:
            stalled["mirror"] = False
        state = found
    return state, max_iter, _certificate(dual, state) <= tol


def _sdp(c: np.ndarray, eps: np.ndarray, tol: float) -> tuple[np.ndarray, np.ndarray, int]:
    """Solve min tr(S) s.t. [[S, c_i], [c_i^T, eps_i]] >= 0 with cvxpy; returns (S, mu, iterations).

    The SDP is posed in coordinates scaled half-way to white: with C = U diag(sv) W^T and
    D = diag(sqrt(sv * sv_max)), S = U D X D U^T, the constraints read [[X, w_i], [w_i^T, eps_i]] >= 0
    with w_i = D^-1 diag(sv) W^T e_i and the objective is sum_k D_kk^2 X_kk / sv_max^2 (on ill-conditioned
    C an interior-point solver otherwise stops early, and full whitening leaves the objective too flat).
    """
    try:
        import cvxpy as cp
    except ImportError as exc:  # pragma: no cover - depends on the environment
        raise ImportError("method='sdp' needs cvxpy; install it with `pip install dsi[sdp]`") from exc
    u, sv, wt = np.linalg.svd(c, full_matrices=False)
    dd = np.sqrt(sv * sv[0])  # half-way whitening: D^-1 c has condition sqrt(cond(C)), weights cond(C)
    wt = (sv / dd)[:, None] * wt
    weights = (dd / dd[0]) ** 2
    r, n = wt.shape
    x = cp.Variable((r, r), symmetric=True)
    cons = [cp.bmat([[x, wt[:, i : i + 1]], [wt[:, i : i + 1].T, np.array([[eps[i]]])]]) >> 0 for i in range(n)]
    prob = cp.Problem(cp.Minimize(weights @ cp.diag(x)), cons)
    solver = "CLARABEL" if "CLARABEL" in cp.installed_solvers() else None
    opts = {"tol_gap_abs": tol * 1e-5, "tol_gap_rel": tol * 1e-5, "tol_feas": tol * 1e-5} if solver else {}
    prob.solve(solver=solver, **opts)
    if prob.status not in ("optimal", "optimal_inaccurate"):
        raise RuntimeError(f"cvxpy could not solve the SDP: status {prob.status}")
    # the multiplier of constraint i is the corner of its LMI's dual, in units of the scaled objective
    mu = dd[0] ** 2 * np.array([float(con.dual_value[-1, -1]) for con in cons])
    xv = np.asarray(x.value, dtype=np.float64)
    sigma = (u * dd) @ (0.5 * (xv + xv.T)) @ (u * dd).T
    iters = prob.solver_stats.num_iters or 0
    return sigma, np.clip(mu, 0.0, None), int(iters)


def optimal_covariance(
    differences: Any,
    budgets: Any = 1.0,
    *,
    method: Method = "mirror-ascent",
    tol: float = 1e-5,
    max_iter: int = 1000,
    rank_tol: float = 1e-6,
    residual: Residual = "noise",
) -> OptimalCovariance:
    """The minimum-trace Gaussian covariance under which s_i^T Sigma^+ s_i <= budgets_i for every i.

    Parameters
    ----------
    differences : array-like or torch.Tensor of shape (n, d) or (d,)
        One outcome difference F(D) - F(D_i) per row, non-zero and finite. float32 input is read in
        float64 chunks, never copied whole.
    budgets : float or array-like of shape (n,), default 1.0
        Positive squared-Mahalanobis budgets eps_i. With noise multiplier c the Renyi divergence of pair i
        is alpha * eps_i / (2 c^2) (see :mod:`dsi.accounting`).
    method : {"mirror-ascent", "sdp"}, default "mirror-ascent"
        Exponentiated-gradient ascent on the dual as in the paper's code, refined by Newton steps; or
        cvxpy's SDP solver (an independent check for small problems; needs the ``sdp`` extra).
    tol : float, default 1e-5
        Target certified relative duality gap.
    max_iter : int, default 1000
        Iteration cap for mirror ascent.
    rank_tol : float, default 1e-6
        Singular values of the differences below ``rank_tol * max`` are left out of the optimised span
        (the paper's code uses 1e-3). The part of each difference they carry is reported in
        ``residual_norm`` and, with ``residual="noise"``, gets its own noise (see ``residual``).
    residual : {"noise", "raise"}, default "noise"
        "noise": add Gaussian noise gamma * R R^T on the left-out part R of the differences, with a share
        theta of every budget reserved for it (theta minimises the total trace), so that the loss of
        every pair on the full vector meets its budget. "raise": raise a ValueError when a difference has
        a part above rounding level (``max(n, d) * 2.2e-16 * max`` singular value) outside the span.

    Returns
    -------
    OptimalCovariance
        Its Sigma is scaled (``feasibility_scale``) so that every constraint holds on the full vectors.

    Examples
    --------
    Orthogonal differences of norms 1 and 2 get variance ||s_i||^2 along each, trace 5, where isotropic
    noise with the same guarantee needs 2 * max ||s_i||^2 = 8:

    >>> import numpy as np
    >>> from dsi import isotropic_covariance, optimal_covariance
    >>> diffs = np.array([[1.0, 0.0], [0.0, 2.0]])
    >>> cov = optimal_covariance(diffs)
    >>> round(cov.trace, 6), isotropic_covariance(diffs).trace
    (5.0, 8.0)
    >>> bool(cov.mahalanobis.max() <= 1.0), cov.converged
    (True, True)
    """
    check_params(
        {"method": method, "residual": residual, "tol": tol, "rank_tol": rank_tol, "max_iter": max_iter},
        {"method": [Options(str, set(_METHODS))], "residual": [Options(str, set(_RESIDUAL))],
         "tol": [Interval(float, 0, math.inf, closed="neither")],
         "rank_tol": [Interval(float, 0, math.inf, closed="neither")], "max_iter": [Interval(int, 1, None)]},
        owner="optimal_covariance",
    )
    tol, rank_tol = float(tol), float(rank_tol)
    diffs = check_differences(differences)
    n, d = diffs.shape
    eps = check_budgets(budgets, n)
    sv, vec, lam_out, vec_out = _span(diffs, rank_tol)
    residual_sq = (vec_out**2) @ lam_out  # squared norm of each difference outside the kept span
    floor = max(n, d) * np.finfo(np.float64).eps * sv[0]
    if residual == "raise" and lam_out.size and np.sqrt(lam_out.max()) > floor:
        bad = np.flatnonzero(np.sqrt(residual_sq) > floor)[:5].tolist()
        raise ValueError(
            f"differences rows {bad} have a part of norm up to {np.sqrt(residual_sq.max()):.3g} outside the "
            f"span kept at rank_tol={rank_tol:g} (rank {len(sv)} of {min(n, d)}); lower rank_tol or use "
            "residual='noise' to cover it with its own noise"
        )
    c = sv[:, None] * vec.T  # (r, n): coordinates of each difference in the orthonormal span basis
    basis_coef = vec / sv  # (n, r): basis = diffs.T @ basis_coef
    dual = _Dual(c, eps)

    if method == "mirror-ascent":
        state, iters, _ = _mirror_ascent(dual, tol, int(max_iter))
        mu, u, s, dual_obj = state["mu"], state["u"], state["sw"], state["f"]
    else:
        sigma_sdp, mu, iters = _sdp(c, eps, tol)
        # primal recovery from the SDP's multipliers (Sigma(mu) = (C diag(mu) C^T)^1/2), or the SDP's
        # own Sigma, whichever certified-feasible trace is smaller
        state = dual.evaluate(mu)
        s_sdp, u_sdp = np.linalg.eigh(0.5 * (sigma_sdp + sigma_sdp.T))
        cands = [(state["u"], state["sw"])]
        if s_sdp[0] > 0:
            cands.append((u_sdp, s_sdp))
        u, s = min(cands, key=lambda us: max(1.0, float(np.max(_mahalanobis(us[0], us[1], c) / eps))) * us[1].sum())
        dual_obj = state["f"]
    if np.any(s <= 0):  # Sigma singular on the span (only on badly scaled input): lift it minimally
        s = np.clip(s, 1e-15 * s.max(), None)
    q = _mahalanobis(u, s, c)  # whitened, on the Sigma actually returned
    t = max(1.0, float(np.max(q / eps)))
    kept_trace = t * float(s.sum())
    kept_gap = (kept_trace - dual_obj) / abs(dual_obj)

    theta, gamma, res_trace = 0.0, 0.0, 0.0
    lev = np.zeros(n)
    if lam_out.size and lam_out.sum() > 0:
        # residual noise gamma * R R^T, R = diffs^T vec_out diag(1) (the left-out part): pair i's loss on it is
        # at most lev_i / gamma with lev_i = ||vec_out[i]||^2; reserve theta * eps_i for it
        lev = np.sum(vec_out**2, axis=1)
        big_l = float(np.max(lev / eps))
        ratio = np.sqrt(big_l * float(lam_out.sum()) / kept_trace)
        theta = ratio / (1.0 + ratio)
        gamma = big_l / theta
        res_trace = gamma * float(lam_out.sum())
    scale = t / (1.0 - theta)
    s = scale * s
    mahal = q / scale + (lev / gamma if gamma > 0 else 0.0)
    trace = float(s.sum()) + res_trace
    gap = (trace - dual_obj) / abs(dual_obj)
    converged = kept_gap <= (tol if method == "mirror-ascent" else max(tol, 1e-6))
    sigma_red = (u * s) @ u.T
    chol = u * np.sqrt(s)  # (r, r) with chol @ chol.T = sigma_red
    coef = basis_coef @ chol
    if gamma > 0:
        coef = np.hstack([coef, np.sqrt(gamma) * vec_out])
    kkt = float(np.max(np.minimum(np.abs(q - eps), mu) / eps))
    if not converged:
        log.warning(
            "optimal_covariance(%s) stopped after %d iterations with certified gap %.3g > tol %.3g",
            method,
            iters,
            kept_gap,
            tol,
        )
    return OptimalCovariance(
        coefficients=coef,
        reduced_covariance=sigma_red,
        trace=trace,
        dual=mu,
        dual_objective=float(dual_obj),
        mahalanobis=mahal,
        budgets=eps,
        kkt_residual=kkt,
        duality_gap=float(gap),
        iterations=int(iters),
        converged=bool(converged),
        rank=int(len(sv)),
        dim=int(d),
        method=method,
        feasibility_scale=float(scale),
        residual_norm=float(np.sqrt(residual_sq.max(initial=0.0))),
        residual_trace=float(res_trace),
        residual_share=float(theta),
        differences=diffs,
        basis_coefficients=basis_coef,
    )


def isotropic_covariance(differences: Any, budgets: Any = 1.0, *, rank_tol: float = 1e-6) -> IsotropicCovariance:
    """The isotropic baseline: the smallest sigma^2 with ||s_i||^2 / sigma^2 <= budgets_i for all i."""
    rank_tol = check_positive(rank_tol, name="rank_tol")
    diffs = check_differences(differences)
    n, d = diffs.shape
    eps = check_budgets(budgets, n)
    g = gram(diffs)
    sq = np.diag(g).copy()
    var = float(np.max(sq / eps))
    rank = len(_span(diffs, rank_tol)[0])  # residual irrelevant: isotropic noise covers every direction
    return IsotropicCovariance(
        variance=var,
        dim=int(d),
        rank=int(rank),
        trace=d * var,
        span_trace=rank * var,
        mahalanobis=sq / var,
        budgets=eps,
    )
