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
from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np
from icml25_shared.random import UNSET, check_random_state, renamed_seed

from dsi._validation import _CHUNK_ROWS, check_budgets, check_differences, check_positive, gram

__all__ = ["IsotropicCovariance", "OptimalCovariance", "isotropic_covariance", "optimal_covariance"]

log = logging.getLogger(__name__)

Method = Literal["mirror-ascent", "sdp"]
_METHODS = ("mirror-ascent", "sdp")
# Newton refinement needs an (n, r^2) array; beyond this many entries the solver stays first-order.
_NEWTON_MAX_ENTRIES = 4_000_000


@dataclass(frozen=True)
class OptimalCovariance:
    """The DSI covariance Sigma = A A^T with A = differences^T @ coefficients (d x r, never stored).

    Attributes
    ----------
    coefficients : numpy.ndarray of shape (n, r)
        The noise factor is ``differences.T @ coefficients``.
    reduced_covariance : numpy.ndarray of shape (r, r)
        Sigma in the orthonormal basis of span(differences).
    trace : float
        tr(Sigma), the expected squared norm of one noise draw.
    dual : numpy.ndarray of shape (n,)
        Lagrange multipliers mu (zero for slack constraints).
    dual_objective : float
        The dual value at ``dual``, a certified lower bound on the optimal trace.
    mahalanobis : numpy.ndarray of shape (n,)
        s_i^T Sigma^{-1} s_i for every difference.
    budgets : numpy.ndarray of shape (n,)
        The budgets eps_i that ``mahalanobis`` must not exceed.
    kkt_residual : float
        max_i min(|g_i|, mu_i) / eps_i with g_i = mahalanobis_i - eps_i (the reference's test).
    duality_gap : float
        (trace - dual_objective) / dual_objective, a certificate of relative suboptimality.
    iterations : int
        Solver iterations (mirror-ascent steps plus Newton steps, or the SDP solver's).
    converged : bool
        Whether ``duality_gap <= tol`` was reached.
    rank : int
        r, the dimension of the span of the differences that was kept.
    dim : int
        d, the ambient dimension.
    method : str
        "mirror-ascent" or "sdp".
    feasibility_scale : float
        Factor (>= 1) applied to the solver's Sigma so every constraint holds exactly.
    residual_norm : float
        max_i of the norm of s_i outside the kept span (singular values below ``rank_tol * max``); that
        component gets no noise, so it is reported (0 for exactly low-rank input).
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

    def sample(self, random_state: Any = None, size: int | None = None, *, rng: Any = UNSET) -> np.ndarray:
        """Draw noise from N(0, Sigma).

        Parameters
        ----------
        random_state : None, int or numpy.random.Generator, optional
            Source of the draws (a Generator is advanced).
        size : int, optional
            Number of independent draws.
        rng : optional
            Deprecated name of ``random_state``.

        Returns
        -------
        numpy.ndarray
            float64 of shape (d,), or (size, d) with ``size``.
        """
        gen = check_random_state(renamed_seed(random_state, rng, owner="OptimalCovariance.sample", old="rng"))
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

    def sample(self, random_state: Any = None, size: int | None = None, *, rng: Any = UNSET) -> np.ndarray:
        """Draw noise from N(0, sigma^2 I_d).

        Parameters
        ----------
        random_state : None, int or numpy.random.Generator, optional
            Source of the draws (a Generator is advanced).
        size : int, optional
            Number of independent draws.
        rng : optional
            Deprecated name of ``random_state``.

        Returns
        -------
        numpy.ndarray
            float64 of shape (d,), or (size, d) with ``size``.
        """
        gen = check_random_state(renamed_seed(random_state, rng, owner="IsotropicCovariance.sample", old="rng"))
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


def _span(g: np.ndarray, rank_tol: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Eigen-decompose the Gram matrix.

    Return the kept singular values s (r,), right vectors V (n, r) and
    the norm of each difference's component outside the kept span (n,).
    """
    lam, vec = np.linalg.eigh(g)
    lam = np.clip(lam, 0.0, None)
    sv = np.sqrt(lam)
    keep = sv > rank_tol * sv[-1]
    residual = np.sqrt(np.clip((vec[:, ~keep] ** 2) @ lam[~keep], 0.0, None))
    return sv[keep], vec[:, keep], residual


class _Dual:
    """The dual f(mu) and its derivatives on reduced coordinates C (r x n)."""

    def __init__(self, c: np.ndarray, budgets: np.ndarray) -> None:
        self.c = c
        self.eps = budgets

    def evaluate(self, mu: np.ndarray) -> dict[str, Any] | None:
        m = (self.c * mu) @ self.c.T
        w, u = np.linalg.eigh(0.5 * (m + m.T))
        if w[0] <= 1e-15 * w[-1]:
            return None  # Sigma(mu) singular on the span: f = -inf
        sw = np.sqrt(w)
        b = u.T @ self.c
        q = np.sum(b * b / sw[:, None], axis=0)
        tr = float(sw.sum())
        return {"mu": mu, "q": q, "trace": tr, "f": 2.0 * tr - float(self.eps @ mu), "sw": sw, "u": u, "b": b}

    @staticmethod
    def hessian(state: dict[str, Any]) -> np.ndarray:
        """d^2 f / dmu_i dmu_j = -sum_kl a_ik a_il b_jk b_jl / (sqrt(w_k) + sqrt(w_l)), a = b / sqrt(w)."""
        sw, b = state["sw"], state["b"]
        a = b / sw[:, None]
        kern = 1.0 / (sw[:, None] + sw[None, :])
        n = b.shape[1]
        va = (a.T[:, :, None] * a.T[:, None, :]).reshape(n, -1)
        vb = (b.T[:, :, None] * b.T[:, None, :]).reshape(n, -1)
        h = -(va * kern.ravel()) @ vb.T
        return 0.5 * (h + h.T)


def _certificate(state: dict[str, Any], eps: np.ndarray) -> tuple[float, float]:
    """(feasibility scale t >= 1, certified relative gap of t * Sigma against the dual bound)."""
    t = max(1.0, float(np.max(state["q"] / eps)))
    return t, (t * state["trace"] - state["f"]) / abs(state["f"])


def _mirror_step(dual: _Dual, state: dict[str, Any], eta: float) -> tuple[dict[str, Any], float] | None:
    """One exponentiated-gradient step mu <- mu exp(eta (m_i / eps_i - 1)) with backtracking; None on stall."""
    h = state["q"] / dual.eps - 1.0
    while eta >= 1e-30:
        cand = dual.evaluate(state["mu"] * np.exp(np.clip(eta * h, -50.0, 50.0)))
        if cand is not None and cand["f"] > state["f"]:
            return cand, min(eta * 1.5, 1e6)
        eta *= 0.5
    return None


def _newton_step(dual: _Dual, state: dict[str, Any]) -> dict[str, Any] | None:
    """Take a Newton step on the multipliers of constraints that are not clearly slack.

    (Their own multipliers decay geometrically), with backtracking; None when no ascent is found.
    """
    eps, mu, f = dual.eps, state["mu"], state["f"]
    g = state["q"] - eps
    slack = g < -1e-3 * eps
    free = ~slack
    if not free.any():
        return None
    hess = dual.hessian(state)[np.ix_(free, free)]
    ridge = 1e-13 * max(float(np.trace(-hess)), 1e-300) / max(int(free.sum()), 1)
    try:
        step = np.linalg.solve(hess - ridge * np.eye(int(free.sum())), -g[free])
    except np.linalg.LinAlgError:
        return None
    alpha = 1.0
    while alpha >= 1e-12:
        new_mu = mu.copy()
        new_mu[free] = np.maximum(mu[free] + alpha * step, 0.1 * mu[free])
        new_mu[slack] = mu[slack] * 0.1**alpha
        cand = dual.evaluate(new_mu)
        if cand is not None and cand["f"] >= f and not np.array_equal(new_mu, mu):
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
    if state is None:  # only possible for badly scaled inputs; a uniform start spans C
        state = dual.evaluate(np.full(n, float(np.mean(mu))))
    eta = 1.0
    newton_ok = n * r * r <= _NEWTON_MAX_ENTRIES
    first_order_iters = 20 if newton_ok else max_iter
    stalled = {"mirror": False, "newton": not newton_ok}
    for it in range(max_iter):
        _, gap = _certificate(state, eps)
        if gap <= tol:
            return state, it, True
        use_newton = not stalled["newton"] and (it >= first_order_iters or stalled["mirror"])
        cand = _newton_step(dual, state) if use_newton else _mirror_step(dual, state, eta)
        if cand is None:
            stalled["newton" if use_newton else "mirror"] = True
            if all(stalled.values()):
                return state, it, False
            if not use_newton:
                eta = 1.0
            continue
        if not use_newton:
            cand, eta = cand
            stalled["newton"] = not newton_ok  # progress: Newton may be retried after a stall
        state = cand
    _, gap = _certificate(state, eps)
    return state, max_iter, gap <= tol


def _sdp(c: np.ndarray, eps: np.ndarray, tol: float) -> tuple[np.ndarray, np.ndarray, int]:
    """Solve min tr(S) s.t. [[S, c_i], [c_i^T, eps_i]] >= 0 with cvxpy; returns (S, mu, iterations)."""
    try:
        import cvxpy as cp
    except ImportError as exc:  # pragma: no cover - depends on the environment
        raise ImportError("method='sdp' needs cvxpy; install it with `pip install dsi[sdp]`") from exc
    r, n = c.shape
    s = cp.Variable((r, r), symmetric=True)
    cons = [cp.bmat([[s, c[:, i : i + 1]], [c[:, i : i + 1].T, np.array([[eps[i]]])]]) >> 0 for i in range(n)]
    prob = cp.Problem(cp.Minimize(cp.trace(s)), cons)
    solver = "CLARABEL" if "CLARABEL" in cp.installed_solvers() else None
    opts = {"tol_gap_abs": tol * 1e-3, "tol_gap_rel": tol * 1e-3, "tol_feas": tol * 1e-3} if solver else {}
    prob.solve(solver=solver, **opts)
    if prob.status not in ("optimal", "optimal_inaccurate"):
        raise RuntimeError(f"cvxpy could not solve the SDP: status {prob.status}")
    mu = np.array([float(con.dual_value[-1, -1]) for con in cons])
    iters = prob.solver_stats.num_iters or 0
    return np.asarray(s.value, dtype=np.float64), np.clip(mu, 0.0, None), int(iters)


def optimal_covariance(
    differences: Any,
    budgets: Any = 1.0,
    *,
    method: Method = "mirror-ascent",
    tol: float = 1e-5,
    max_iter: int = 1000,
    rank_tol: float = 1e-5,
) -> OptimalCovariance:
    """The minimum-trace Gaussian covariance under which s_i^T Sigma^{-1} s_i <= budgets_i for every i.

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
    rank_tol : float, default 1e-5
        Singular values of the differences below ``rank_tol * max`` are treated as zero (the paper's code
        uses 1e-3); the part of each difference they carry is reported in ``residual_norm``.

    Returns
    -------
    OptimalCovariance
        Its Sigma is scaled (``feasibility_scale``) so that every constraint holds.

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
    if method not in _METHODS:
        raise ValueError(f"method must be one of {_METHODS}, got {method!r}")
    tol = check_positive(tol, name="tol")
    rank_tol = check_positive(rank_tol, name="rank_tol")
    if isinstance(max_iter, bool) or not isinstance(max_iter, (int, np.integer)) or max_iter < 1:
        raise ValueError(f"max_iter must be a positive int, got {max_iter!r}")
    diffs = check_differences(differences)
    n, d = diffs.shape
    eps = check_budgets(budgets, n)
    sv, vec, residual = _span(gram(diffs), rank_tol)
    c = sv[:, None] * vec.T  # (r, n): coordinates of each difference in the orthonormal span basis
    basis_coef = vec / sv  # (n, r): basis = diffs.T @ basis_coef
    dual = _Dual(c, eps)

    if method == "mirror-ascent":
        state, iters, converged = _mirror_ascent(dual, tol, int(max_iter))
        t, gap = _certificate(state, eps)
        mu = state["mu"]
        sigma_red = (state["u"] * state["sw"]) @ state["u"].T
        dual_obj = state["f"]
    else:
        sigma_red, mu, iters = _sdp(c, eps, tol)
        sigma_red = 0.5 * (sigma_red + sigma_red.T)
        w = np.linalg.eigvalsh(sigma_red)
        if w[0] <= 0:  # interior-point output can sit on the PSD boundary; lift it minimally
            sigma_red = sigma_red + (abs(w[0]) + 1e-12 * w[-1]) * np.eye(len(w))
        q0 = np.einsum("ki,ki->i", c, np.linalg.solve(sigma_red, c))
        t = max(1.0, float(np.max(q0 / eps)))
        ev = dual.evaluate(mu) if np.all(mu > 0) else None
        dual_obj = ev["f"] if ev is not None else float(np.trace(sigma_red))
        gap = (t * float(np.trace(sigma_red)) - dual_obj) / abs(dual_obj)
        converged = gap <= max(tol, 1e-6)

    sigma_red = t * sigma_red
    w, u = np.linalg.eigh(sigma_red)
    w = np.clip(w, 0.0, None)
    chol = u * np.sqrt(w)  # (r, r) with chol @ chol.T = sigma_red
    q = np.einsum("ki,ki->i", c, np.linalg.solve(sigma_red, c))
    g = q - eps
    kkt = float(np.max(np.minimum(np.abs(g), mu) / eps))
    if not converged:
        log.warning(
            "optimal_covariance(%s) stopped after %d iterations with certified gap %.3g > tol %.3g",
            method,
            iters,
            gap,
            tol,
        )
    return OptimalCovariance(
        coefficients=basis_coef @ chol,
        reduced_covariance=sigma_red,
        trace=float(np.trace(sigma_red)),
        dual=mu,
        dual_objective=float(dual_obj),
        mahalanobis=q,
        budgets=eps,
        kkt_residual=kkt,
        duality_gap=float(gap),
        iterations=int(iters),
        converged=bool(converged),
        rank=int(len(sv)),
        dim=int(d),
        method=method,
        feasibility_scale=float(t),
        residual_norm=float(residual.max(initial=0.0)),
        differences=diffs,
        basis_coefficients=basis_coef,
    )


def isotropic_covariance(differences: Any, budgets: Any = 1.0, *, rank_tol: float = 1e-5) -> IsotropicCovariance:
    """The isotropic baseline: the smallest sigma^2 with ||s_i||^2 / sigma^2 <= budgets_i for all i."""
    rank_tol = check_positive(rank_tol, name="rank_tol")
    diffs = check_differences(differences)
    n, d = diffs.shape
    eps = check_budgets(budgets, n)
    g = gram(diffs)
    sq = np.diag(g).copy()
    var = float(np.max(sq / eps))
    rank = len(_span(g, rank_tol)[0])  # residual irrelevant: isotropic noise covers every direction
    return IsotropicCovariance(
        variance=var,
        dim=int(d),
        rank=int(rank),
        trace=d * var,
        span_trace=rank * var,
        mahalanobis=sq / var,
        budgets=eps,
    )
