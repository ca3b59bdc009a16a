"""MSE-optimal uniform grids for a standard Gaussian (QuEST's "Gaussian fitting" step).

A b-bit QuEST grid has ``2**b`` points ``{(i + 1/2) * step}`` for ``i = -2**(b-1) .. 2**(b-1) - 1``
(symmetric, no zero), with clip value ``s = alpha_b * sigma`` and ``step = 2 s / (2**b - 1)``, where
``sigma`` is the RMS of the row. Ternary ("1.58 bits") uses ``{-s, 0, s}``. ``alpha_b`` minimises
``E[(X - Q(X))^2]`` for ``X ~ N(0, 1)``; :data:`OPTIMAL_GAUSSIAN_SCALES` holds the values of the
official implementation and :func:`optimal_gaussian_scale` re-derives them with scipy.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass

import numpy as np

__all__ = [
    "FP4_E2M1_VALUES",
    "GRIDS",
    "OPTIMAL_GAUSSIAN_SCALES",
    "Codebook",
    "codebook_mse",
    "fp4_codebook",
    "grid_for",
    "lloyd_max_codebook",
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
"""The scale multiplier alpha_b of each bit width's uniform grid (MSE-optimal for N(0, 1) inputs; official values)."""
SUPPORTED_BITS = (1, "ternary", 2, 3, 4, 5, 6, 7, 8)
"""Accepted bit widths: 1 to 8, and ``"ternary"`` (the three levels {-s, 0, s}; aliases 1.58 and 1.585)."""
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
    return codebook_mse(np.linspace(-alpha, alpha, levels))


def codebook_mse(points: np.ndarray) -> float:
    """``E[(X - Q(X))^2]`` for ``X ~ N(0,1)`` and nearest-point quantization onto ascending ``points``.

    Closed form over the Voronoi cells (no numerical integration).
    """
    points = np.asarray(points, dtype=np.float64)
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


GRIDS = ("uniform", "fp4", "lloyd_max")
"""Accepted grid names: the uniform RMS-scaled grid, FP4 (E2M1) values, and Lloyd-Max levels for N(0, 1)."""
FP4_E2M1_VALUES = (0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0)  # the non-negative values of FP4 (E2M1)


@dataclass(frozen=True)
class Codebook:
    """A non-uniform symmetric grid: ascending ``values`` in units of the row RMS ``sigma``.

    A row ``x`` maps each entry to the nearest ``sigma * value`` (``sigma = rms(x)``). ``alpha`` is
    the largest value (the clip value in sigma units) and ``default_trust`` half the largest gap
    (no entry inside the grid's range is ever masked by the trust estimator at that radius).
    """

    name: str
    values: tuple[float, ...]

    @property
    def levels(self) -> int:
        """Number of grid points."""
        return len(self.values)

    @property
    def alpha(self) -> float:
        """Largest grid value in sigma units."""
        return float(max(abs(v) for v in self.values))

    @property
    def default_trust(self) -> float:
        """Half the largest gap between neighbouring values, in sigma units."""
        return float(np.max(np.diff(self.values)) / 2)

    def points(self) -> np.ndarray:
        """The grid points for sigma = 1, ascending."""
        return np.asarray(self.values, dtype=np.float64)


def _fp4_points(scale: float) -> np.ndarray:
    pos = np.asarray(FP4_E2M1_VALUES[1:]) * scale
    return np.concatenate((-pos[::-1], [0.0], pos))


@functools.cache
def fp4_codebook() -> Codebook:
    """FP4 (E2M1) values ``{0, +-0.5, +-1, +-1.5, +-2, +-3, +-4, +-6}`` times the MSE-optimal scale for N(0,1).

    15 distinct points (+0 and -0 coincide). The scale minimises :func:`codebook_mse` (scipy, bounded).
    """
    from scipy.optimize import minimize_scalar

    res = minimize_scalar(lambda c: codebook_mse(_fp4_points(c)), bounds=(0.2, 1.0), method="bounded",
                          options={"xatol": 1e-10})
    return Codebook("fp4", tuple(float(v) for v in _fp4_points(float(res.x))))


@functools.cache
def lloyd_max_codebook(bits: int) -> Codebook:
    """The Lloyd-Max (MSE-optimal non-uniform) ``2**bits``-point quantizer of N(0, 1).

    Lloyd's iteration from the uniform QuEST grid: boundaries at midpoints, points at the conditional
    means ``(pdf(a) - pdf(b)) / (cdf(b) - cdf(a))`` of their cells (closed form), until no point moves
    by more than 1e-13.
    """
    spec = grid_spec(bits)
    if spec.is_ternary:
        raise ValueError("lloyd_max grids have 2**bits points: bits must be an int in 1..8, got 'ternary'")
    points = spec.points()
    for _ in range(100_000):
        edges = np.concatenate(([-60.0], (points[1:] + points[:-1]) / 2, [60.0]))
        a, b = edges[:-1], edges[1:]
        new = (_pdf(a) - _pdf(b)) / (_cdf(b) - _cdf(a))
        new = (new - new[::-1]) / 2  # keep it exactly symmetric
        if np.max(np.abs(new - points)) < 1e-13:
            points = new
            break
        points = new
    return Codebook(f"lloyd_max{spec.levels}", tuple(float(v) for v in points))


def grid_for(bits: Bits, grid: str = "uniform") -> GridSpec | Codebook:
    """The grid of ``bits`` of kind ``grid``: ``"uniform"`` (QuEST), ``"fp4"`` (bits 4) or ``"lloyd_max"``."""
    if grid == "uniform":
        return grid_spec(bits)
    if grid == "fp4":
        if grid_spec(bits).levels != 16:
            raise ValueError(f"the fp4 grid has 4 bits: bits must be 4, got {bits!r}")
        return fp4_codebook()
    if grid == "lloyd_max":
        spec = grid_spec(bits)
        if spec.is_ternary:
            raise ValueError("lloyd_max grids have 2**bits points: bits must be an int in 1..8, got 'ternary'")
        return lloyd_max_codebook(spec.levels.bit_length() - 1)
    raise ValueError(f"grid must be one of {GRIDS}, got {grid!r}")
