"""`Mechanism`: release an outcome plus calibrated DSI (or isotropic) Gaussian noise."""

from __future__ import annotations

from typing import Any, Literal, cast

import numpy as np
from icml25_shared.random import check_random_state
from icml25_shared.validation import Options, check_params

from dsi._validation import as_numpy, check_delta, check_positive, check_steps
from dsi.accounting import epsilon_from_sigma, rho_from_sigma, sigma_from_epsilon
from dsi.covariance import (
    IsotropicCovariance,
    Method,
    OptimalCovariance,
    Residual,
    isotropic_covariance,
    optimal_covariance,
)

__all__ = ["Mechanism", "calibrate_multiplier"]

NoiseKind = Literal["dsi", "isotropic"]
_NOISE = ("dsi", "isotropic")


def calibrate_multiplier(
    epsilon: float | None,
    noise_multiplier: float | None,
    delta: float,
    steps: int,
    accountant: str = "zcdp",
    *,
    sample_rate: float = 1.0,
    sampling: str = "poisson",
) -> float:
    """The per-release noise multiplier c from exactly one of a target epsilon or an explicit multiplier.

    Parameters
    ----------
    epsilon : float or None
        Target epsilon at ``delta`` after ``steps`` releases of a difference with budget 1.
    noise_multiplier : float or None
        An explicit multiplier instead of ``epsilon``.
    delta : float
        Target delta in (0, 1).
    steps : int
        Number of releases the budget is spread over.
    accountant : {"zcdp", "gdp", "rdp", "prv"}, default "zcdp"
        Conversion between the multiplier and (epsilon, delta).
    sample_rate : float, default 1.0
        Probability that a difference's group is in a release's sample (subsampling amplification).
    sampling : {"poisson", "fixed"}, default "poisson"
        How the sample is drawn.

    Returns
    -------
    float
        The multiplier c of one release.
    """
    if (epsilon is None) == (noise_multiplier is None):
        raise ValueError(
            "give exactly one of epsilon (a target, calibrated at delta over steps releases) or "
            f"noise_multiplier; got epsilon={epsilon!r}, noise_multiplier={noise_multiplier!r}"
        )
    delta = check_delta(delta)
    steps = check_steps(steps)
    if noise_multiplier is not None:
        return check_positive(noise_multiplier, name="noise_multiplier")
    return sigma_from_epsilon(
        check_positive(epsilon, name="epsilon"),
        delta,
        steps=steps,
        accountant=accountant,
        sample_rate=sample_rate,
        sampling=sampling,
    )


def noise_covariance(
    differences: Any,
    budgets: Any,
    noise: str,
    *,
    method: str = "mirror-ascent",
    tol: float = 1e-5,
    residual: str = "noise",
) -> OptimalCovariance | IsotropicCovariance:
    """The unit-multiplier covariance of the chosen noise kind for these differences.

    Parameters
    ----------
    differences : array-like of shape (n, d)
        The outcome differences to hide.
    budgets : float or array-like of shape (n,)
        Squared-Mahalanobis budgets.
    noise : {"dsi", "isotropic"}
        The optimal covariance or sigma^2 I.
    method : {"mirror-ascent", "sdp"}, default "mirror-ascent"
        Solver for "dsi".
    tol : float, default 1e-5
        Solver tolerance (certified relative duality gap).
    residual : {"noise", "raise"}, default "noise"
        What "dsi" does with the part of a difference outside the solved span (see
        :func:`dsi.optimal_covariance`).

    Returns
    -------
    OptimalCovariance or IsotropicCovariance
        The fitted covariance.
    """
    if noise not in _NOISE:
        raise ValueError(f"noise must be one of {_NOISE}, got {noise!r}")
    if noise == "dsi":
        # the values were checked against the literals by the callers (Mechanism.fit, DSITrainer)
        return optimal_covariance(
            differences, budgets, method=cast(Method, method), tol=tol, residual=cast(Residual, residual)
        )
    return isotropic_covariance(differences, budgets)


class Mechanism:
    """Add N(0, c^2 Sigma) to an outcome, Sigma fitted to the outcome differences that must be hidden.

    Threat model: an observer who knows everything except which of the datasets D, D_1, .., D_n produced
    the release (D_i = D with group i removed, or any counterfactual whose outcome difference is row i of
    ``differences``) cannot tell D from D_i better than a mu_i-GDP test, mu_i = sqrt(steps * m_i) / c with
    m_i = s_i^T Sigma^{-1} s_i <= budgets_i; in zCDP terms rho_i = steps * m_i / (2 c^2). Sigma is chosen
    from D (data-specific), as in the paper; it is not itself privatised.

    Parameters
    ----------
    epsilon : float, optional
        Target epsilon at ``delta`` for a difference with budget 1 after ``steps`` releases. Give this or
        ``noise_multiplier``.
    delta : float, default 1e-5
        Target delta in (0, 1).
    noise_multiplier : float, optional
        An explicit multiplier c instead of ``epsilon``.
    steps : int, default 1
        Number of releases the budget is spread over (c = sigma_1 * sqrt(steps)).
    noise : {"dsi", "isotropic"}, default "dsi"
        The optimal covariance, or sigma^2 I with sigma^2 = max_i ||s_i||^2 / budget_i.
    method : {"mirror-ascent", "sdp"}, default "mirror-ascent"
        Solver for "dsi".
    tol : float, default 1e-5
        Solver tolerance (certified relative duality gap).
    random_state : None, int or numpy.random.Generator, optional
        Source of the noise; with an int the sequence of ``privatize`` calls after ``fit`` is reproducible.
    accountant : {"zcdp", "gdp", "rdp", "prv"}, default "zcdp"
        "zcdp" is the paper's conversion, eps = rho + 2 sqrt(rho ln(1/delta)); "gdp" is the exact
        Gaussian-DP conversion, which needs less noise for the same (epsilon, delta); "rdp" and "prv" as
        opacus's accountants (see :mod:`dsi.accounting`).

    Attributes
    ----------
    covariance_ : OptimalCovariance or IsotropicCovariance
        The unit-multiplier covariance Sigma.
    noise_multiplier_ : float
        The multiplier c of one release.
    rho_ : numpy.ndarray of shape (n,)
        zCDP rho of each difference over all steps.
    epsilon_ : numpy.ndarray of shape (n,)
        Epsilon of each difference at ``delta`` over all steps.
    noise_trace_ : float
        c^2 tr(Sigma), the expected squared norm of one noise draw.

    Examples
    --------
    >>> import numpy as np
    >>> import dsi
    >>> diffs = np.array([[1.0, 0.0], [0.0, 2.0]])
    >>> mech = dsi.Mechanism(epsilon=2.0, delta=1e-5, random_state=0).fit(diffs)
    >>> round(mech.covariance_.trace, 6)  # Sigma = diag(1, 4); isotropic noise would need trace 8
    5.0
    >>> round(float(mech.noise_multiplier_), 4)
    2.4993
    >>> mech.privatize(np.zeros(2)).shape
    (2,)
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
        random_state: Any = None,
        accountant: str = "zcdp",
    ) -> None:
        self.epsilon = epsilon
        self.delta = delta
        self.noise_multiplier = noise_multiplier
        self.steps = steps
        self.noise = noise
        self.method = method
        self.tol = tol
        self.random_state = random_state
        self.accountant = accountant

    def fit(self, differences: Any, budgets: Any = 1.0) -> Mechanism:
        """Fit the noise covariance to the differences and calibrate the multiplier.

        Parameters
        ----------
        differences : array-like or torch.Tensor of shape (n, d)
            One outcome difference F(D) - F(D_i) per row.
        budgets : float or array-like of shape (n,), default 1.0
            Squared-Mahalanobis budgets eps_i.

        Returns
        -------
        Mechanism
            ``self``, fitted.
        """
        check_params(
            {"noise": self.noise, "method": self.method, "accountant": self.accountant,
             "random_state": self.random_state},
            {"noise": [Options(str, {"dsi", "isotropic"})], "method": [Options(str, {"mirror-ascent", "sdp"})],
             "accountant": [Options(str, {"zcdp", "gdp", "rdp", "prv"})], "random_state": ["random_state"]},
            owner="Mechanism",
        )
        random_state = self.random_state
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
        self._rng = check_random_state(random_state)
        return self

    def sample_noise(self, size: int | None = None) -> np.ndarray:
        """Draw the noise c * N(0, Sigma).

        Parameters
        ----------
        size : int, optional
            Number of independent draws.

        Returns
        -------
        numpy.ndarray
            float64 of shape (d,), or (size, d) with ``size``.
        """
        self._check_fitted()
        return self.noise_multiplier_ * self.covariance_.sample(self._rng, size)

    def privatize(self, outcome: Any) -> Any:
        """Release ``outcome`` plus one noise draw.

        Parameters
        ----------
        outcome : numpy.ndarray or torch.Tensor
            Any shape with d elements.

        Returns
        -------
        numpy.ndarray or torch.Tensor
            ``outcome`` + noise, of the same type, shape and dtype.
        """
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
        """Per-difference Gaussian-DP parameter after all steps.

        Returns
        -------
        numpy.ndarray of shape (n,)
            mu_i = sqrt(steps * m_i) / c.
        """
        self._check_fitted()
        return np.sqrt(self.steps * self.covariance_.mahalanobis) / self.noise_multiplier_

    def _check_fitted(self) -> None:
        if not hasattr(self, "covariance_"):
            from sklearn.exceptions import NotFittedError

            raise NotFittedError("this Mechanism is not fitted yet; call fit(differences) first")

    def __repr__(self) -> str:
        eps = "None" if self.epsilon is None else f"{self.epsilon:g}"
        nm = "None" if self.noise_multiplier is None else f"{self.noise_multiplier:g}"
        return (
            f"Mechanism(epsilon={eps}, delta={self.delta:g}, noise_multiplier={nm}, steps={self.steps}, "
            f"noise={self.noise!r}, method={self.method!r}, random_state={self.random_state!r})"
        )
