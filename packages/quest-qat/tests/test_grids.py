"""Acceptance 1: the alpha_b table re-derived by minimising the Gaussian quantisation MSE."""

import math

import numpy as np
import pytest
from scipy import integrate
from scipy.stats import norm

from quest.grids import OPTIMAL_GAUSSIAN_SCALES, SUPPORTED_BITS, gaussian_mse, grid_spec, optimal_gaussian_scale

# MSE at the optimum for N(0, 1), from the reference notes (re-derived there with scipy)
PAPER_MSE = {1: 0.3634, "ternary": 0.1902, 2: 0.1188, 3: 0.0374, 4: 0.01154}


@pytest.mark.parametrize("bits", [1, "ternary", 2, 3, 4])
def test_optimal_scale_matches_table(bits):
    alpha, mse = optimal_gaussian_scale(bits)
    assert abs(alpha - OPTIMAL_GAUSSIAN_SCALES[bits]) < 1e-4
    assert abs(mse - PAPER_MSE[bits]) < 1e-4


def test_one_bit_scale_is_sqrt_2_over_pi():
    alpha, mse = optimal_gaussian_scale(1)
    assert abs(alpha - math.sqrt(2 / math.pi)) < 1e-7
    assert abs(mse - (1 - 2 / math.pi)) < 1e-12  # E[(X - a sign X)^2] at a = E|X|


@pytest.mark.parametrize("alpha,levels", [(2.5139305786, 16), (1.2240089519, 3), (0.9, 2), (3.88, 256)])
def test_closed_form_mse_equals_numerical_integral(alpha, levels):
    points = np.linspace(-alpha, alpha, levels)
    edges = np.concatenate(([-np.inf], (points[1:] + points[:-1]) / 2, [np.inf]))
    total = sum(integrate.quad(lambda x, c=c: (x - c) ** 2 * norm.pdf(x), a, b)[0]
                for a, b, c in zip(edges[:-1], edges[1:], points, strict=True))
    assert gaussian_mse(alpha, levels) == pytest.approx(total, rel=1e-9, abs=1e-13)


def test_grid_points_and_default_trust():
    spec = grid_spec(4)
    pts = spec.points()
    assert len(pts) == 16 and pts[0] == pytest.approx(-spec.alpha) and pts[-1] == pytest.approx(spec.alpha)
    assert np.allclose(np.diff(pts), spec.step_in_sigma)
    assert spec.default_trust == pytest.approx(spec.step_in_sigma / 2)
    assert grid_spec(4).default_trust == pytest.approx(0.1676, abs=1e-4)
    ternary = grid_spec(1.585)
    assert ternary.name == "ternary" and np.allclose(ternary.points(), [-ternary.alpha, 0, ternary.alpha])


@pytest.mark.parametrize("bad", [0, 9, 2.5, "int4", None, True])
def test_unsupported_bits_are_rejected_with_accepted_values(bad):
    with pytest.raises(ValueError, match="bits must be one of"):
        grid_spec(bad)


def test_supported_bits_are_all_tabled():
    assert all(b in OPTIMAL_GAUSSIAN_SCALES for b in SUPPORTED_BITS)
