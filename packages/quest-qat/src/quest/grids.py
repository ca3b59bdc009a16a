"""MSE-optimal uniform grids for a standard Gaussian (QuEST's "Gaussian fitting" step).

A b-bit QuEST grid has ``2**b`` points ``{(i + 1/2) * step}`` for ``i = -2**(b-1) .. 2**(b-1) - 1``
(symmetric, no zero), with clip value ``s = alpha_b * sigma`` and ``step = 2 s / (2**b - 1)``, where
``sigma`` is the RMS of the row. Ternary ("1.58 bits") uses ``{-s, 0, s}``. ``alpha_b`` minimises
``E[(X - Q(X))^2]`` for ``X ~ N(0, 1)``; :data:`OPTIMAL_GAUSSIAN_SCALES` holds the values of the
official implementation and :func:`optimal_gaussian_scale` re-derives them with scipy.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

__all__ = [
    "OPTIMAL_GAUSSIAN_SCALES",
    "SUPPORTED_BITS",
    "GridSpec",
    "gaussian_mse",
    "grid_spec",
    "optimal_gaussian_scale",
]

Bits = int | float | str

# alpha_b from the official QuEST implementation (IST-DASLab/QuEST, OPTIMAL_GAUSSIAN_SCALES).
OPTIMAL_GAUSSIAN_SCALES: dict[object, float] = {
    1: 0.7978845587,
    "ternary": 1.2240089519,
    2: 1.4935346200,
    3: 2.0510683541,
    4: 2.5139305786,
    5: 2.9160938834,
    6: 3.2765972826,
    7: 3.6010497188,
    8: 3.8849386788,
}
SUPPORTED_BITS = (1, "ternary", 2, 3, 4, 5, 6, 7, 8)
_TERNARY_ALIASES = {"ternary", "1.58", "1.585", 1.58, 1.585}


@dataclass(frozen=True)
class GridSpec:
    """A symmetric uniform grid: ``levels`` points, clip value ``alpha * sigma``.

    ``index_min``/``index_max`` bound the integer code ``q``; a code maps to ``(q + offset) * step``
    (``offset`` is 0.5 for the 2**b-point grids and 0 for ternary).
    """

    name: str
    levels: int
    alpha: float

    @property
    def is_ternary(self) -> bool:
        """Whether this is the ternary grid {-1, 0, +1}."""
        return self.levels == 3

    @property
    def index_min(self) -> int:
        """Smallest integer code of the grid."""
        return -1 if self.is_ternary else -(self.levels // 2)

    @property
    def index_max(self) -> int:
        """Largest integer code of the grid."""
        return 1 if self.is_ternary else self.levels // 2 - 1

    @property
    def offset(self) -> float:
        """Half-step offset of the grid points (0 for ternary)."""
        return 0.0 if self.is_ternary else 0.5

    @property
    def step_in_sigma(self) -> float:
        """Grid step in units of sigma: ``2 alpha / (levels - 1)``."""
        return 2.0 * self.alpha / (self.levels - 1)

    @property
    def default_trust(self) -> float:
        """QuEST's default trust radius in sigma units: half a step, ``alpha / (levels - 1)``."""
        return self.alpha / (self.levels - 1)

    def points(self) -> np.ndarray:
        """The grid points for sigma = 1, ascending (shape ``(levels,)``)."""
        idx = np.arange(self.index_min, self.index_max + 1, dtype=np.float64)
        return (idx + self.offset) * self.step_in_sigma


def grid_spec(bits: Bits) -> GridSpec:
    """The QuEST grid for ``bits`` in 1..8 or ``"ternary"`` (also accepted: 1.58, 1.585)."""
    if isinstance(bits, bool):
        raise ValueError(f"bits must be one of {SUPPORTED_BITS}, got {bits!r}")
    if bits in _TERNARY_ALIASES:
        return GridSpec("ternary", 3, OPTIMAL_GAUSSIAN_SCALES["ternary"])
    if isinstance(bits, float) and bits.is_integer():
        bits = int(bits)
    if isinstance(bits, int) and 1 <= bits <= 8:
        return GridSpec(f"int{bits}", 2**bits, OPTIMAL_GAUSSIAN_SCALES[bits])
    raise ValueError(f"bits must be one of {SUPPORTED_BITS}, got {bits!r}")


def _cdf(x: np.ndarray) -> np.ndarray:
    from scipy.special import ndtr

    return ndtr(x)


def _pdf(x: np.ndarray) -> np.ndarray:
    return np.exp(-0.5 * x * x) / math.sqrt(2.0 * math.pi)


def gaussian_mse(alpha: float, levels: int) -> float:
    """``E[(X - Q(X))^2]`` for ``X ~ N(0,1)`` on the symmetric uniform grid with clip ``alpha``.

    ``levels`` points spaced ``2 alpha / (levels - 1)`` between ``-alpha`` and ``alpha``; every x maps
    to its nearest point. Closed form over the Voronoi cells (no numerical integration).
    """
    if levels < 2:
        raise ValueError(f"levels must be >= 2, got {levels}")
    if not alpha > 0:
        raise ValueError(f"alpha must be positive, got {alpha}")
    points = np.linspace(-alpha, alpha, levels)
    # +-60 stands in for +-inf: pdf and 1 - cdf underflow to exactly 0 there
    edges = np.concatenate(([-60.0], (points[1:] + points[:-1]) / 2, [60.0]))
    a, b = edges[:-1], edges[1:]
    pa, pb = _pdf(a), _pdf(b)
    xpa, xpb = a * pa, b * pb
    mass = _cdf(b) - _cdf(a)
    second = mass - (xpb - xpa)  # int x^2 phi
    first = pa - pb  # int x phi
    return float(np.sum(second - 2 * points * first + points**2 * mass))


def optimal_gaussian_scale(bits: Bits) -> tuple[float, float]:
    """``(alpha_b, mse)`` minimising :func:`gaussian_mse` for the grid of ``bits`` (scipy, bounded)."""
    from scipy.optimize import minimize_scalar

    spec = grid_spec(bits)
    coarse = np.linspace(0.2, 6.0, 291)
    i = int(np.argmin([gaussian_mse(a, spec.levels) for a in coarse]))
    res = minimize_scalar(lambda a: gaussian_mse(a, spec.levels), bracket=tuple(coarse[i - 1:i + 2]),
                          method="brent", options={"xtol": 1e-12})
    return float(res.x), float(res.fun)
