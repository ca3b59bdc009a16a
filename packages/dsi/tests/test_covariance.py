import numpy as np
import pytest

from dsi import isotropic_covariance, optimal_covariance

# The notes' random problem: X = default_rng(0).standard_normal((20, 6)) holds 6 differences of
# dimension 20 as columns; our convention is rows, hence the transpose.
RANDOM_20x6 = np.random.default_rng(0).standard_normal((20, 6)).T


def test_orthogonal_closed_form():
    res = optimal_covariance(np.array([[1.0, 0.0], [0.0, 2.0]]))
    np.testing.assert_allclose(res.covariance(), np.diag([1.0, 4.0]), atol=1e-9)
    assert res.trace == pytest.approx(5.0, rel=1e-9)
    iso = isotropic_covariance(np.array([[1.0, 0.0], [0.0, 2.0]]))
    assert iso.trace == pytest.approx(8.0) and iso.span_trace == pytest.approx(8.0)


def test_orthogonal_variance_is_norm_squared_over_budget():
    rng = np.random.default_rng(3)
    q, _ = np.linalg.qr(rng.standard_normal((30, 5)))
    norms = np.array([0.5, 1.0, 2.0, 3.0, 7.0])
    budgets = np.array([0.3, 1.0, 2.0, 0.5, 4.0])
    diffs = (q * norms).T
    res = optimal_covariance(diffs, budgets)
    cov = res.covariance()
    for i in range(5):
        u = q[:, i]
        assert u @ cov @ u == pytest.approx(norms[i] ** 2 / budgets[i], rel=1e-6)
    assert res.trace == pytest.approx(np.sum(norms**2 / budgets), rel=1e-6)


def test_collinear_differences_give_isotropic_in_span():
    diffs = np.array([[1.0, 0.0], [3.0, 0.0]])  # columns [[1,3],[0,0]] of the notes
    res = optimal_covariance(diffs)
    assert res.rank == 1
    assert res.trace == pytest.approx(9.0, rel=1e-9)
    assert res.trace == pytest.approx(isotropic_covariance(diffs).span_trace, rel=1e-9)
    # several collinear differences with different lengths and budgets: variance = max ||s||^2 / eps
    rng = np.random.default_rng(1)
    u = rng.standard_normal(50)
    lengths = np.array([0.5, 2.0, 1.5, 3.0])
    budgets = np.array([1.0, 2.0, 0.5, 3.0])
    res = optimal_covariance(lengths[:, None] * u[None, :], budgets)
    assert res.trace == pytest.approx(np.max(lengths**2 / budgets) * u @ u, rel=1e-9)


def test_random_20x6_kkt_and_trace():
    res = optimal_covariance(RANDOM_20x6)
    assert res.converged and res.rank == 6 and res.dim == 20
    # every constraint holds (to rounding), tight where the multiplier is positive
    assert np.all(res.mahalanobis <= 1.0 + 1e-9)
    active = res.dual > 1e-6
    assert active.any()
    np.testing.assert_allclose(res.mahalanobis[active], 1.0, atol=1e-3)
    assert res.kkt_residual < 1e-3
    assert res.duality_gap <= 1e-5
    iso = isotropic_covariance(RANDOM_20x6)
    # numbers of the notes' numpy port (seed 0): 103.39 versus isotropic 163.76
    assert res.trace == pytest.approx(103.39, abs=5e-3)
    assert iso.span_trace == pytest.approx(163.76, abs=5e-3)
    assert res.trace <= iso.span_trace


def test_more_differences_than_dimensions_has_slack_constraints():
    diffs = np.random.default_rng(0).standard_normal((20, 6))  # 20 differences in R^6
    res = optimal_covariance(diffs, tol=1e-7)
    assert res.converged
    slack = res.mahalanobis < 1 - 1e-3
    assert slack.any()
    # complementary slackness: a slack constraint has a (numerically) zero multiplier
    assert np.all(res.dual[slack] * (1 - res.mahalanobis[slack]) < 1e-6 * res.trace)
    # the certified dual bound is below the trace and within tol of it
    assert res.dual_objective <= res.trace <= res.dual_objective * (1 + 1e-7)


def test_factor_basis_and_sample_are_consistent():
    rng = np.random.default_rng(5)
    diffs = rng.standard_normal((4, 12))
    res = optimal_covariance(diffs)
    a = res.factor()
    basis = res.basis()
    np.testing.assert_allclose(basis.T @ basis, np.eye(4), atol=1e-9)
    np.testing.assert_allclose(a @ a.T, res.covariance(), atol=1e-9)
    # mahalanobis computed through the dense pseudo-inverse agrees
    pinv = np.linalg.pinv(res.covariance())
    np.testing.assert_allclose(np.einsum("id,de,ie->i", diffs, pinv, diffs), res.mahalanobis, rtol=1e-6)
    draws = res.sample(0, size=20000)
    assert draws.shape == (20000, 12)
    np.testing.assert_allclose(np.cov(draws.T), res.covariance(), atol=0.05 * res.max_eigenvalue)
    np.testing.assert_array_equal(res.sample(7), res.sample(7))


def test_float32_and_torch_inputs_match_float64():
    torch = pytest.importorskip("torch")
    diffs = np.random.default_rng(2).standard_normal((5, 300))
    ref = optimal_covariance(diffs)
    f32 = optimal_covariance(diffs.astype(np.float32))
    tt = optimal_covariance(torch.tensor(diffs))
    assert f32.trace == pytest.approx(ref.trace, rel=1e-5)
    assert tt.trace == pytest.approx(ref.trace, rel=1e-12)


def test_ill_conditioned_problem_converges():
    rng = np.random.default_rng(0)
    base = rng.standard_normal((64, 64)) @ rng.standard_normal((64, 64)) * np.linspace(0.1, 3, 64)
    budgets = rng.uniform(0.5, 2, 64)
    res = optimal_covariance(base, budgets)
    assert res.converged and res.duality_gap <= 1e-5
    assert np.all(res.mahalanobis <= budgets * (1 + 1e-9))


@pytest.mark.parametrize(
    "bad, match",
    [
        (np.array([[1.0, 0.0], [0.0, 0.0]]), "all zero"),
        (np.array([[1.0, np.nan]]), "finite"),
        (np.array([[1.0, np.inf]]), "finite"),
        (np.zeros((0, 3)), "non-empty"),
        (np.ones((2, 2, 2)), "shape"),
    ],
)
def test_bad_differences(bad, match):
    with pytest.raises(ValueError, match=match):
        optimal_covariance(bad)
    with pytest.raises(ValueError, match=match):
        isotropic_covariance(bad)


@pytest.mark.parametrize("budgets", [0.0, -1.0, np.inf, np.nan, [1.0, 0.0]])
def test_bad_budgets(budgets):
    with pytest.raises(ValueError, match="budgets must be positive"):
        optimal_covariance(np.eye(2), budgets)


def test_bad_options():
    with pytest.raises(ValueError, match="budgets must be a scalar or have shape \\(2,\\)"):
        optimal_covariance(np.eye(2), [1.0, 1.0, 1.0])
    with pytest.raises(ValueError, match="method must be one of"):
        optimal_covariance(np.eye(2), method="newton")
    with pytest.raises(ValueError, match="tol"):
        optimal_covariance(np.eye(2), tol=0)
    with pytest.raises(TypeError, match="real numeric"):
        optimal_covariance(np.array([["a", "b"]]))
    res = optimal_covariance(np.ones((1, 30_000)))
    with pytest.raises(ValueError, match="dense covariance"):
        res.covariance()


def test_large_dimension_is_solved_in_the_span():
    # d = 2e5 float32: a dense d x d covariance would need 320 GB, so this only passes rank-reduced
    import time

    rng = np.random.default_rng(0)
    d, n = 200_000, 64
    diffs = rng.standard_normal((n, 8), dtype=np.float32) @ rng.standard_normal((8, d), dtype=np.float32)
    diffs += 0.3 * rng.standard_normal((n, d), dtype=np.float32)
    start = time.perf_counter()
    res = optimal_covariance(diffs)
    assert time.perf_counter() - start < 30.0
    assert res.converged and res.rank == n and res.dim == d
    assert np.all(res.mahalanobis <= 1.0 + 1e-9)
    assert res.trace < isotropic_covariance(diffs).span_trace
