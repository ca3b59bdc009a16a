"""Ill-conditioned and near-rank-deficient differences: convergence against Clarabel, and the privacy loss
of every pair on the full difference vector (also outside the span the solver optimises)."""

import numpy as np
import pytest

from dsi import optimal_covariance

cp = pytest.importorskip("cvxpy")
if "CLARABEL" not in cp.installed_solvers():  # pragma: no cover - depends on the environment
    pytest.skip("Clarabel is not installed", allow_module_level=True)


def clarabel_optimum(diffs, budgets):
    """min tr(Sigma) s.t. s_i^T Sigma^-1 s_i <= b_i by Clarabel with tight tolerances, in SVD coordinates
    of the differences scaled half-way to white (Sigma = Q D X D Q^T, D = diag(sqrt(sv * sv_max)));
    independent of the package's solver."""
    u, sv, _ = np.linalg.svd(diffs, full_matrices=False)
    keep = sv > 1e-13 * sv[0]
    dd = np.sqrt(sv[keep] * sv[0])
    w = (sv[keep] / dd)[:, None] * u[:, keep].T  # s_i = Q diag(dd) w_i
    x = cp.Variable((len(dd), len(dd)), symmetric=True)
    cons = [cp.bmat([[x, w[:, i : i + 1]], [w[:, i : i + 1].T, np.array([[b]])]]) >> 0 for i, b in enumerate(budgets)]
    prob = cp.Problem(cp.Minimize((dd / dd[0]) ** 2 @ cp.diag(x)), cons)
    prob.solve(solver="CLARABEL", tol_gap_abs=1e-10, tol_gap_rel=1e-10, tol_feas=1e-10)
    assert prob.status in ("optimal", "optimal_inaccurate")
    return prob.value * dd[0] ** 2


def leave_one_group_out_differences(jitter=1e-4, seed=0):
    """Gradient differences full - leave-group-j-out of an MLP 6-5-3 (d = 53) over 12 groups of 10 samples;
    groups 6..11 repeat groups 0..5 up to ``jitter``, which makes the differences ill-conditioned."""
    torch = pytest.importorskip("torch")
    g = torch.Generator().manual_seed(seed)
    base = torch.randn(6, 10, 6, generator=g, dtype=torch.float64)
    x = torch.cat([base, base + jitter * torch.randn(6, 10, 6, generator=g, dtype=torch.float64)]).reshape(-1, 6)
    yb = torch.randint(0, 3, (6, 10), generator=g)
    y = torch.cat([yb, yb]).reshape(-1)
    model = torch.nn.Sequential(torch.nn.Linear(6, 5), torch.nn.Tanh(), torch.nn.Linear(5, 3)).double()
    with torch.no_grad():
        for p in model.parameters():
            p.copy_(torch.randn(p.shape, generator=g, dtype=torch.float64))
    gid = np.repeat(np.arange(12), 10)

    def grad(idx):
        model.zero_grad()
        torch.nn.functional.cross_entropy(model(x[idx]), y[idx]).backward()
        return torch.cat([p.grad.reshape(-1) for p in model.parameters()]).clone()

    full = grad(np.arange(120))
    return np.stack([(full - grad(np.flatnonzero(gid != j))).numpy() for j in range(12)])


def random_ill_conditioned(seed):
    """n differences in R^d with singular values logspaced over a condition number in [1e3, 1e6]."""
    rng = np.random.default_rng(seed)
    n = int(rng.integers(6, 16))
    d = int(rng.integers(n + 2, 41))
    cond = 10 ** rng.uniform(3, 6)
    u, _ = np.linalg.qr(rng.standard_normal((n, n)))
    v, _ = np.linalg.qr(rng.standard_normal((d, n)))
    return (u * np.logspace(0, -np.log10(cond), n)) @ v.T, rng.uniform(0.5, 2.0, n), cond


def check_against_clarabel(diffs, budgets, *, with_sdp=True):
    ref = clarabel_optimum(diffs, budgets)
    ours = optimal_covariance(diffs, budgets)
    assert ours.converged
    assert abs(ours.trace - ref) / ref < 1e-5
    assert np.all(ours.mahalanobis <= budgets * (1 + 1e-9))
    if with_sdp:
        sdp = optimal_covariance(diffs, budgets, method="sdp")
        assert sdp.converged and abs(sdp.trace - ref) / ref < 1e-5
        assert np.all(sdp.mahalanobis <= budgets * (1 + 1e-9))
    return ours, ref


def test_leave_one_group_out_mlp_differences_reach_clarabel():
    diffs = leave_one_group_out_differences()
    budgets = np.tile([0.5, 1.0, 2.0], 4)
    sv = np.linalg.svd(diffs, compute_uv=False)
    # equal-size groups: the 12 differences sum to zero (rank 11); the 11 others have condition ~2e4
    assert sv[-1] < 1e-12 * sv[0] and 1e4 < sv[0] / sv[-2] < 5e4
    ours, ref = check_against_clarabel(diffs, budgets)
    assert ours.rank == 11 and ours.duality_gap <= 1e-5
    # the optimal Sigma is far worse conditioned than the differences (its M = Sigma^2 even more so)
    w = np.linalg.eigvalsh(ours.reduced_covariance)
    assert w[-1] / w[0] > 1e7


@pytest.mark.parametrize("seed", [0, 1, 4])
def test_random_ill_conditioned_reach_clarabel(seed):
    diffs, budgets, _ = random_ill_conditioned(seed)
    check_against_clarabel(diffs, budgets)


@pytest.mark.slow
def test_fifty_random_ill_conditioned_reach_clarabel():
    conds = []
    for seed in range(50):  # method="sdp" on every fifth (it costs as much as the reference)
        diffs, budgets, cond = random_ill_conditioned(seed)
        check_against_clarabel(diffs, budgets, with_sdp=seed % 5 == 0)
        conds.append(cond)
    assert min(conds) < 3e3 and max(conds) > 3e5


def full_vector_loss(res, diffs):
    """s_i^T Sigma^+ s_i from the returned factor A (Sigma = A A^T), and how far s_i is from range(A)."""
    a = res.factor()
    loss, off = [], []
    for s in diffs:
        z, *_ = np.linalg.lstsq(a, s, rcond=1e-14)
        loss.append(z @ z)
        off.append(np.linalg.norm(a @ z - s) / np.linalg.norm(s))
    return np.array(loss), np.array(off)


def test_part_outside_the_span_gets_noise():
    diffs = np.array([[1.0, 0.0, 0.0], [1.0, 1e-7, 0.0]])
    res = optimal_covariance(diffs)
    assert res.rank == 1 and res.residual_norm == pytest.approx(5e-8, rel=1e-6)
    cov = res.covariance()
    # the second difference's part along e_2 now carries variance instead of none
    assert cov[1, 1] > 1e-8 and cov[2, 2] == 0.0
    loss, off = full_vector_loss(res, diffs)
    assert np.all(off < 1e-9)
    assert np.all(loss <= 1.0 + 1e-9)
    np.testing.assert_allclose(res.mahalanobis, loss, rtol=1e-6)
    assert 0 < res.residual_share < 1e-6 and res.trace < 1.0 + 1e-6
    with pytest.raises(ValueError, match="outside the span"):
        optimal_covariance(diffs, residual="raise")
    # exactly low-rank input has nothing to raise about
    assert optimal_covariance([[1.0, 0.0], [3.0, 0.0]], residual="raise").trace == pytest.approx(9.0)
    with pytest.raises(ValueError, match="residual must be one of"):
        optimal_covariance(diffs, residual="ignore")


@pytest.mark.parametrize("seed", range(40))
def test_full_vector_loss_meets_budget_on_near_rank_deficient_inputs(seed):
    rng = np.random.default_rng(seed)
    n, d = int(rng.integers(2, 12)), int(rng.integers(2, 30))
    k = int(rng.integers(1, min(n, d) + 1))
    low = rng.standard_normal((n, k)) @ rng.standard_normal((k, d))
    diffs = low + 10 ** rng.uniform(-10, -5) * rng.standard_normal((n, d))
    budgets = rng.uniform(0.3, 3.0, n)
    res = optimal_covariance(diffs, budgets)
    loss, off = full_vector_loss(res, diffs)
    assert np.all(off < 1e-8)  # every s_i lies in range(Sigma)
    assert np.all(loss <= budgets * (1 + 1e-6))
    assert np.all(res.mahalanobis <= budgets * (1 + 1e-9))
