"""`Mechanism`: release an outcome plus calibrated DSI (or isotropic) Gaussian noise."""

from __future__ import annotations

from typing import Any, Literal

import numpy as np

from dsi._validation import as_numpy, check_delta, check_positive, check_steps
from dsi.accounting import epsilon_from_sigma, rho_from_sigma, sigma_from_epsilon
from dsi.covariance import IsotropicCovariance, OptimalCovariance, isotropic_covariance, optimal_covariance

__all__ = ["Mechanism", "calibrate_multiplier"]

NoiseKind = Literal["dsi", "isotropic"]
_NOISE = ("dsi", "isotropic")


def calibrate_multiplier(
    epsilon: float | None, noise_multiplier: float | None, delta: float, steps: int, accountant: str = "zcdp"
) -> float:
    """The per-release multiplier c from exactly one of a target epsilon or an explicit multiplier."""
    if (epsilon is None) == (noise_multiplier is None):
        raise ValueError(
            "give exactly one of epsilon (a target, calibrated at delta over steps releases) or "
            f"noise_multiplier; got epsilon={epsilon!r}, noise_multiplier={noise_multiplier!r}"
        )
    delta = check_delta(delta)
    steps = check_steps(steps)
    if noise_multiplier is not None:
        return check_positive(noise_multiplier, name="noise_multiplier")
    return sigma_from_epsilon(check_positive(epsilon, name="epsilon"), delta, steps=steps, accountant=accountant)


def noise_covariance(
    differences: Any, budgets: Any, noise: str, *, method: str = "mirror-ascent", tol: float = 1e-5
) -> OptimalCovariance | IsotropicCovariance:
    """The unit-multiplier covariance of the chosen noise kind for these differences."""
    if noise not in _NOISE:
        raise ValueError(f"noise must be one of {_NOISE}, got {noise!r}")
    if noise == "dsi":
        return optimal_covariance(differences, budgets, method=method, tol=tol)
    return isotropic_covariance(differences, budgets)


class Mechanism:
    """Add N(0, c^2 Sigma) to an outcome, Sigma fitted to the outcome differences that must be hidden.

    Threat model: an observer who knows everything except which of the datasets D, D_1, .., D_n produced
    the release (D_i = D with group i removed, or any counterfactual whose outcome difference is row i of
    ``differences``) cannot tell D from D_i better than a mu_i-GDP test, mu_i = sqrt(steps * m_i) / c with
    m_i = s_i^T Sigma^{-1} s_i <= budgets_i; in zCDP terms rho_i = steps * m_i / (2 c^2). Sigma is chosen
    from D (data-specific), as in the paper; it is not itself privatised.

    Args:
        epsilon: target epsilon at ``delta`` for a difference with budget 1 after ``steps`` releases
            (zCDP conversion, as in the paper's code). Give this or ``noise_multiplier``.
        delta: target delta in (0, 1).
        noise_multiplier: explicit c instead of ``epsilon``.
        steps: number of releases the budget is spread over (c = sigma_1 * sqrt(steps)).
        noise: "dsi" (optimal covariance) or "isotropic" (sigma^2 I with sigma^2 = max ||s_i||^2 / budget_i).
        method: solver for "dsi" ("mirror-ascent" or "sdp").
        tol: solver tolerance (certified relative duality gap).
        seed: seed of the noise generator; the sequence of privatize calls is reproducible.
        accountant: "zcdp" (the paper's conversion, eps = rho + 2 sqrt(rho ln(1/delta))) or "gdp" (the exact
            Gaussian-DP conversion, which needs less noise for the same (epsilon, delta)).

    Fitted attributes: ``covariance_``, ``noise_multiplier_``, ``rho_`` (per difference, all steps),
    ``epsilon_`` (per difference, at ``delta``), ``noise_trace_`` (c^2 tr Sigma per release).
    """

    def __init__(
        self,
        *,
        epsilon: float | None = None,
        delta: float = 1e-5,
        noise_multiplier: float | None = None,
        steps: int = 1,
        noise: NoiseKind = "dsi",
        method: str = "mirror-ascent",
        tol: float = 1e-5,
        seed: int | None = None,
        accountant: str = "zcdp",
    ) -> None:
        self.epsilon = epsilon
        self.delta = delta
        self.noise_multiplier = noise_multiplier
        self.steps = steps
        self.noise = noise
        self.method = method
        self.tol = tol
        self.seed = seed
        self.accountant = accountant

    def fit(self, differences: Any, budgets: Any = 1.0) -> Mechanism:
        """Fit the noise covariance to ``differences`` (n, d) with squared-Mahalanobis ``budgets``."""
        c = calibrate_multiplier(self.epsilon, self.noise_multiplier, self.delta, self.steps, self.accountant)
        cov = noise_covariance(differences, budgets, self.noise, method=self.method, tol=self.tol)
        self.covariance_ = cov
        self.noise_multiplier_ = c
        self.rho_ = np.array([rho_from_sigma(c, steps=self.steps, budget=m) if m > 0 else 0.0 for m in cov.mahalanobis])
        self.epsilon_ = np.array(
            [
                epsilon_from_sigma(c, self.delta, steps=self.steps, budget=m, accountant=self.accountant)
                if m > 0
                else 0.0
                for m in cov.mahalanobis
            ]
        )
        self.noise_trace_ = c**2 * cov.trace
        self._rng = np.random.default_rng(self.seed)
        return self

    def sample_noise(self, size: int | None = None) -> np.ndarray:
        """Draws of c * N(0, Sigma): shape (d,), or (size, d) for ``size`` independent draws; float64."""
        if not hasattr(self, "covariance_"):
            raise RuntimeError("this Mechanism is not fitted yet; call fit(differences) first")
        return self.noise_multiplier_ * self.covariance_.sample(self._rng, size)

    def privatize(self, outcome: Any) -> Any:
        """Return ``outcome`` + noise, same type, shape and dtype (numpy array or torch tensor, any shape
        with d elements)."""
        noise = self.sample_noise()
        size = int(np.prod(np.shape(outcome)))
        if size != noise.size:
            raise ValueError(f"outcome has {size} elements but the differences have dimension {noise.size}")
        if hasattr(outcome, "detach") and hasattr(outcome, "new_tensor"):
            return outcome + outcome.new_tensor(noise.reshape(tuple(outcome.shape)))
        arr = as_numpy(outcome, name="outcome")
        dtype = arr.dtype if np.issubdtype(arr.dtype, np.floating) else np.float64
        return (arr + noise.reshape(arr.shape)).astype(dtype, copy=False)

    def gdp_mu(self) -> np.ndarray:
        """Per-difference Gaussian-DP parameter after all steps: sqrt(steps * m_i) / c."""
        if not hasattr(self, "covariance_"):
            raise RuntimeError("this Mechanism is not fitted yet; call fit(differences) first")
        return np.sqrt(self.steps * self.covariance_.mahalanobis) / self.noise_multiplier_

    def __repr__(self) -> str:
        eps = "None" if self.epsilon is None else f"{self.epsilon:g}"
        nm = "None" if self.noise_multiplier is None else f"{self.noise_multiplier:g}"
        return (
            f"Mechanism(epsilon={eps}, delta={self.delta:g}, noise_multiplier={nm}, steps={self.steps}, "
            f"noise={self.noise!r}, method={self.method!r}, seed={self.seed!r})"
        )
