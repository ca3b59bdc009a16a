"""The paper's synthetic model: X = K^{1/2} Z Sigma^{1/2}, y = X w + sigma K^{1/2} xi.

Sigma is diagonal with a power-law spectrum eta_k = k^{-a}; the target has eta_k w_k^2 proportional to
k^{-(1 + 2 a r)} (source exponent r), normalised so that w^T Sigma w = 1. The generalisation error of
a fitted w_hat is (w_hat - w)^T Sigma (w_hat - w), exact for a test point independent of the
training rows; the out-of-sample risk adds sigma^2.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
from icml25_shared.random import check_random_state
from icml25_shared.validation import Interval, check_params

from corrgcv.correlation import Correlation, check_k_matrix

__all__ = [
    "REGIMES",
    "simulate_estimation",
    "LinearProblem",
    "RiskSimulation",
    "correlated_factor",
    "power_law_problem",
    "simulate_horizon_risk",
    "simulate_risk",
]


@dataclass(frozen=True)
class LinearProblem:
    """A Gaussian linear model in the eigenbasis of Sigma.

    Attributes
    ----------
        spectrum: (N,) eigenvalues of the feature covariance Sigma (diagonal in this basis).
        target: (N,) true weights w.
        noise_std: sigma, the noise standard deviation.
    """

    spectrum: np.ndarray
    target: np.ndarray
    noise_std: float

    @property
    def n_features(self) -> int:
        """Number of features N."""
        return self.spectrum.shape[0]

    def sample(
        self, n_samples: int, random_state: Any = None, *, K_factor: np.ndarray | None = None
    ) -> tuple[np.ndarray, np.ndarray]:
        """Draw a training set from the model.

        Parameters
        ----------
        n_samples : int
            Number of rows T.
        random_state : None, int or numpy Generator, optional
            Source of randomness (scikit-learn semantics; a Generator is used as is).
        K_factor : ndarray of shape (T, T), optional
            Any L with L L^T = K (e.g. from :func:`correlated_factor`); None draws independent rows.

        Returns
        -------
        X : ndarray of shape (T, N)
        y : ndarray of shape (T,)
        """
        rng = check_random_state(random_state)
        z = rng.standard_normal((n_samples, self.n_features)) * np.sqrt(self.spectrum)
        eps = self.noise_std * rng.standard_normal(n_samples)
        if K_factor is not None:
            z = K_factor @ z
            eps = K_factor @ eps
        return z, z @ self.target + eps

    def generalization_error(self, w_hat: np.ndarray) -> np.ndarray:
        """(w_hat - w)^T Sigma (w_hat - w) for w_hat of shape (N,) or (n_fits, N)."""
        diff = np.asarray(w_hat) - self.target
        return (diff**2) @ self.spectrum

    def out_of_sample_risk(self, w_hat: np.ndarray) -> np.ndarray:
        """Expected squared error on an independent test point: generalisation error + sigma^2."""
        return self.generalization_error(w_hat) + self.noise_std**2


def power_law_problem(
    n_features: int, *, capacity: float = 1.8, source: float = 0.3, noise_std: float = 0.05
) -> LinearProblem:
    """eta_k = k^{-capacity}, eta_k w_k^2 proportional to k^{-(1 + 2 capacity source)}, w^T Sigma w = 1."""
    check_params(
        {"n_features": n_features, "capacity": capacity, "source": source, "noise_std": noise_std},
        {"n_features": [Interval(int, 1, None)], "capacity": [Interval(float, 0, None, closed="neither")],
         "source": [Interval(float, None, None)], "noise_std": [Interval(float, 0, None)]},
        owner="power_law_problem",
    )
    k = np.arange(1, n_features + 1, dtype=float)
    eta = k**-capacity
    signal = k ** -(1.0 + 2.0 * capacity * source)
    w = np.sqrt(signal / eta)
    w /= np.sqrt(signal.sum())
    return LinearProblem(spectrum=eta, target=w, noise_std=float(noise_std))


def correlated_factor(K: Any, n_samples: int) -> np.ndarray:
    """A lower-triangular L with L L^T = K (Cholesky), for a Correlation or a (T, T) matrix."""
    mat = K.matrix(n_samples) if isinstance(K, Correlation) else check_k_matrix(np.asarray(K, float), n_samples)
    return np.linalg.cholesky(mat)


@dataclass(frozen=True)
class RiskSimulation:
    """Monte Carlo of the synthetic model; arrays are (n_seeds, n_alphas).

    Attributes
    ----------
        alphas: penalties (scikit-learn convention; lambda = alpha / n_samples).
        out_of_sample_risk: exact risk of each fit on an independent test point.
        corrgcv, gcv: the two estimates of that risk from the training data alone.
        in_sample_error: mean squared training residual.
    """

    alphas: np.ndarray
    n_samples: int
    out_of_sample_risk: np.ndarray
    corrgcv: np.ndarray
    gcv: np.ndarray
    in_sample_error: np.ndarray


def simulate_risk(
    problem: LinearProblem, correlation: Any, n_samples: int, alphas: Any, *, seeds: Any = range(10)
) -> RiskSimulation:
    """Draw one training set per seed, fit ridge on the penalty grid and record the true out-of-sample risk next to CorrGCV (with the true K) and GCV."""
    from corrgcv.correlation import k_eigenvalues
    from corrgcv.gcv import RidgeSpectrum, check_alphas

    a = check_alphas(alphas)
    factor = correlated_factor(correlation, n_samples)
    eigs = k_eigenvalues(correlation, n_samples)
    risk, cg, g, ein = [], [], [], []
    for seed in seeds:
        X, y = problem.sample(n_samples, np.random.default_rng(seed), K_factor=factor)
        spec = RidgeSpectrum.from_data(X, y)
        risk.append(problem.out_of_sample_risk(np.stack([spec.coef(alpha)[0] for alpha in a])))
        path = spec.corrgcv(a, eigs)
        cg.append(path.criterion)
        g.append(spec.gcv(a).criterion)
        ein.append(path.in_sample_error)
    return RiskSimulation(
        alphas=a,
        n_samples=n_samples,
        out_of_sample_risk=np.array(risk),
        corrgcv=np.array(cg),
        gcv=np.array(g),
        in_sample_error=np.array(ein),
    )


def simulate_horizon_risk(
    problem: LinearProblem,
    correlation: Correlation,
    n_samples: int,
    alpha: float,
    horizons: Any,
    *,
    seeds: Any = range(50),
) -> np.ndarray:
    """Mean over seeds of R(tau) / mean R(inf) for a test point ``tau`` steps after the training rows.

    Exact per training set: writing the test point's (x, noise) as a K-regression on the training
    rows plus an independent innovation, R(tau) = (1 - rho) R_out + (a^T r)^2 with a = K^{-1} c,
    rho = c^T a and r the training residual. Returns shape (n_horizons,).
    """
    from corrgcv.gcv import RidgeSpectrum

    taus = np.atleast_1d(np.asarray(horizons, dtype=float))
    K = correlation.matrix(n_samples)
    factor = np.linalg.cholesky(K)
    cross = np.stack([correlation.cross(n_samples, tau) for tau in taus])
    weights = np.linalg.solve(K, cross.T).T
    rho = (weights * cross).sum(axis=1)
    near, far = [], []
    for seed in seeds:
        X, y = problem.sample(n_samples, np.random.default_rng(seed), K_factor=factor)
        w, _ = RidgeSpectrum.from_data(X, y).coef(alpha)
        r_out = float(problem.out_of_sample_risk(w))
        near.append((1.0 - rho) * r_out + (weights @ (y - X @ w)) ** 2)
        far.append(r_out)
    return np.mean(near, axis=0) / np.mean(far)


REGIMES = ("matched", "mismatched", "x-only")


def simulate_estimation(
    problem: LinearProblem,
    correlation: Correlation,
    n_samples: int,
    alphas: Any,
    regime: str,
    *,
    rules: Any = ("both", "features", "residuals"),
    seeds: Any = range(10),
) -> dict[str, Any]:
    """Measure how well RidgeCorrGCV's estimated K chooses the penalty and estimates the risk.

    ``regime``: "matched" (rows of X and the noise share ``correlation``, the paper's model),
    "mismatched" (independent rows of X, correlated noise) or "x-only" (correlated rows of X, white
    noise). Fits without intercept. Returns, per rule in ``rules`` and for "gcv": arrays over seeds of
    ``ratio`` (criterion / true out-of-sample risk at the chosen penalty), ``excess`` (risk there / the
    seed's smallest risk on the grid) and ``index`` (chosen grid index); ``xi`` (the estimated
    parameter per rule and seed); ``oracle_index`` (argmin of the seed-mean risk).
    """
    from corrgcv.estimator import RidgeCorrGCV
    from corrgcv.gcv import RidgeSpectrum, check_alphas

    if regime not in REGIMES:
        raise ValueError(f"regime must be one of {REGIMES}, got {regime!r}")
    a = check_alphas(alphas)
    factor = correlated_factor(correlation, n_samples)
    names = (*rules, "gcv")
    out: dict[str, dict[str, list[float]]] = {n: {"ratio": [], "excess": [], "index": []} for n in names}
    xis: dict[str, list[float]] = {r: [] for r in rules}
    risks = []
    for seed in seeds:
        rng = np.random.default_rng(seed)
        z = rng.standard_normal((n_samples, problem.n_features)) * np.sqrt(problem.spectrum)
        e = rng.standard_normal(n_samples)
        if regime in ("matched", "x-only"):
            z = factor @ z
        eps = problem.noise_std * (e if regime == "x-only" else factor @ e)
        X, y = z, z @ problem.target + eps
        spec = RidgeSpectrum.from_data(X, y)
        risk = problem.out_of_sample_risk(np.stack([spec.coef(alpha)[0] for alpha in a]))
        risks.append(risk)
        paths = {"gcv": spec.gcv(a)}
        for rule in rules:
            model = RidgeCorrGCV(alphas=a, correlation=correlation.name, estimate=rule, fit_intercept=False)
            model.fit(X, y)
            paths[rule] = model.cv_path_
            fitted = model.correlation_
            if fitted is None:  # a family name was given, so a family is always fitted
                raise RuntimeError(f"{rule}: no correlation family was fitted")
            xis[rule].append(fitted.parameter)
        for name, path in paths.items():
            i = path.best_index
            out[name]["ratio"].append(float(path.criterion[i] / risk[i]))
            out[name]["excess"].append(float(risk[i] / risk.min()))
            out[name]["index"].append(i)
    result: dict[str, Any] = {n: {k: np.array(v) for k, v in d.items()} for n, d in out.items()}
    result["xi"] = {r: np.array(v) for r, v in xis.items()}
    result["oracle_index"] = int(np.argmin(np.mean(risks, axis=0)))
    return result
