"""Subsampled accounting against opacus on the isotropic special case (budget 1 = sensitivity 1)."""

import math

import numpy as np
import pytest

import dsi
from dsi.accounting import DEFAULT_ORDERS, epsilon_from_rdp, rdp_subsampled_gaussian

opacus_rdp = pytest.importorskip("opacus.accountants.analysis.rdp")
from opacus.accountants import PRVAccountant, RDPAccountant  # noqa: E402

CASES = [(q, sigma, steps) for q in (0.01, 0.1, 1.0) for sigma, steps in ((1.0, 100), (2.0, 10))]


@pytest.mark.parametrize("q, sigma, steps", CASES)
def test_rdp_equals_opacus(q, sigma, steps):
    ours = rdp_subsampled_gaussian(q, sigma, DEFAULT_ORDERS, steps=steps)
    ref = opacus_rdp.compute_rdp(q=q, noise_multiplier=sigma, steps=steps, orders=list(DEFAULT_ORDERS))
    np.testing.assert_allclose(ours, ref, rtol=1e-6)
    acc = RDPAccountant()
    acc.history = [(sigma, q, steps)]
    eps = dsi.epsilon_from_sigma(sigma, 1e-5, steps=steps, accountant="rdp", sample_rate=q)
    assert eps == pytest.approx(acc.get_epsilon(1e-5), rel=1e-6)


@pytest.mark.parametrize("q, sigma, steps", [(0.01, 1.0, 100), (0.1, 2.0, 10), (1.0, 2.0, 10)])
def test_prv_equals_opacus(q, sigma, steps):
    acc = PRVAccountant()
    acc.history = [(sigma, q, steps)]
    ref = acc.get_epsilon(1e-5, eps_error=1e-3)
    eps = dsi.epsilon_from_sigma(sigma, 1e-5, steps=steps, accountant="prv", sample_rate=q)
    assert eps == pytest.approx(ref, rel=1e-3)
    # without subsampling the PRV accountant is the exact Gaussian-DP curve, to its eps_error
    if q == 1.0:
        assert eps == pytest.approx(dsi.epsilon_from_sigma(sigma, 1e-5, steps=steps, accountant="gdp"), abs=2e-3)


def test_budget_is_the_squared_sensitivity():
    # a pair with budget b at multiplier c is the unit-sensitivity mechanism at c / sqrt(b)
    a = rdp_subsampled_gaussian(0.1, 3.0, [2.0, 5.5, 17.0], steps=7, budget=2.25)
    b = rdp_subsampled_gaussian(0.1, 2.0, [2.0, 5.5, 17.0], steps=7)
    np.testing.assert_allclose(a, b, rtol=1e-12)
    assert rdp_subsampled_gaussian(1.0, 2.0, [3.0], budget=0.5)[0] == pytest.approx(3.0 * 0.5 / 8.0)


def test_rdp_orders_agree_with_the_closed_form_and_a_brute_force_integral():
    # Poisson-subsampled Gaussian at integer order 3: E_{x~N(0,s^2)}[((1-q) + q e^{(2x-1)/(2 s^2)})^3]
    q, s = 0.2, 1.3
    x = np.linspace(-30, 30, 400_001)
    dens = np.exp(-(x**2) / (2 * s**2)) / math.sqrt(2 * math.pi * s**2)
    ratio = (1 - q) + q * np.exp((2 * x - 1) / (2 * s**2))
    brute = np.log(np.sum(dens * ratio**3) * (x[1] - x[0])) / 2
    assert rdp_subsampled_gaussian(q, s, [3.0])[0] == pytest.approx(brute, rel=1e-9)


def test_fixed_size_bound_is_looser_than_poisson_and_capped():
    for q in (0.01, 0.1):
        fixed = rdp_subsampled_gaussian(q, 1.0, DEFAULT_ORDERS, steps=50, sampling="fixed")
        poisson = rdp_subsampled_gaussian(q, 1.0, DEFAULT_ORDERS, steps=50)
        full = rdp_subsampled_gaussian(1.0, 1.0, DEFAULT_ORDERS, steps=50)
        assert np.all(fixed >= poisson * (1 - 1e-12)) and np.all(fixed <= full * (1 + 1e-12))
    # second-order behaviour: eps(2) ~ log(1 + 2 q^2 min(4(e^{1/s^2} - 1), 2 e^{1/s^2}))
    q, s = 1e-3, 2.0
    expected = math.log1p(q**2 * min(4 * math.expm1(1 / s**2), 2 * math.exp(1 / s**2)))
    assert rdp_subsampled_gaussian(q, s, [2.0], sampling="fixed")[0] == pytest.approx(expected, rel=1e-12)


def test_sigma_from_epsilon_inverts_rdp_and_prv():
    sigma = dsi.sigma_from_epsilon(2.0, 1e-5, steps=20, accountant="rdp", sample_rate=0.1)
    eps = dsi.epsilon_from_sigma(sigma, 1e-5, steps=20, accountant="rdp", sample_rate=0.1)
    assert eps <= 2.0 and eps == pytest.approx(2.0, rel=1e-5)
    # subsampling needs less noise than the full-batch release at the same guarantee
    full = dsi.sigma_from_epsilon(2.0, 1e-5, steps=20, accountant="rdp")
    assert dsi.sigma_from_epsilon(2.0, 1e-5, steps=20, accountant="rdp", sample_rate=0.1) < 0.5 * full


def test_epsilon_from_rdp_and_errors():
    eps, order = epsilon_from_rdp([1.0, 2.0], [2.0, 3.0], 1e-5)
    per_order = [r - (math.log(1e-5) + math.log(a)) / (a - 1) + math.log((a - 1) / a) for r, a in ((1, 2), (2, 3))]
    assert order == 3.0 and eps == pytest.approx(min(per_order))
    with pytest.raises(ValueError, match="no subsampling amplification"):
        dsi.epsilon_from_sigma(1.0, 1e-5, accountant="zcdp", sample_rate=0.1)
    with pytest.raises(ValueError, match="Poisson sampling only"):
        dsi.epsilon_from_sigma(1.0, 1e-5, accountant="prv", sample_rate=0.1, sampling="fixed")
    with pytest.raises(ValueError, match="sample_rate must lie in"):
        rdp_subsampled_gaussian(0.0, 1.0)
    with pytest.raises(ValueError, match="accountant must be one of"):
        dsi.epsilon_from_sigma(1.0, 1e-5, accountant="moments")


def test_trainer_with_minibatch_sampling_reports_the_subsampled_epsilon():
    torch = pytest.importorskip("torch")
    torch.manual_seed(0)
    x, y = torch.randn(160, 5), torch.randint(0, 2, (160,))
    groups = np.repeat(np.arange(40), 4)
    for sampling, acc in (("poisson", "prv"), ("fixed", "rdp")):
        model = torch.nn.Linear(5, 2)
        kw = {"noise_multiplier": 1.0} if acc == "prv" else {"epsilon": 4.0}
        tr = dsi.DSITrainer(
            model, lr=0.5, rounds=4, accountant=acc, sample_rate=0.25, sampling=sampling, random_state=0, **kw
        ).fit(x, y, groups)
        assert tr.sample_rate_ == 0.25
        if acc == "prv":  # the reported epsilon is opacus's PRV epsilon of the subsampled release
            acc_ref = PRVAccountant()
            acc_ref.history = [(1.0, 0.25, 4)]
            assert tr.epsilon_ == pytest.approx(np.full(40, acc_ref.get_epsilon(1e-5, eps_error=1e-3)), rel=1e-6)
            assert tr.epsilon_[0] < dsi.epsilon_from_sigma(1.0, 1e-5, steps=4, accountant="prv")
        else:  # the calibrated multiplier is the subsampled accountant's, smaller than without sampling
            assert tr.epsilon_ == pytest.approx(np.full(40, 4.0), rel=1e-5)
            assert tr.noise_multiplier_ < dsi.sigma_from_epsilon(4.0, 1e-5, steps=4, accountant="gdp")
        # a round only has differences for the groups it sampled
        n_diff = [rec.n_differences for rec in tr.history_]
        assert all(0 < k < 40 for k in n_diff)
        if sampling == "fixed":
            assert n_diff == [10] * 4
    with pytest.raises(ValueError, match="no subsampling amplification"):
        dsi.DSITrainer(torch.nn.Linear(5, 2), rounds=2, epsilon=4.0, sample_rate=0.5).fit(x, y, groups)


@pytest.mark.parametrize("sampling", ["poisson", "fixed"])
def test_rdp_epsilon_below_order_floor_raises_value_error(sampling):
    # with orders up to 63 no multiplier reaches epsilon below -(log delta + log 63) / 62 + log(62/63)
    floor = epsilon_from_rdp(np.zeros(len(DEFAULT_ORDERS)), DEFAULT_ORDERS, 1e-5)[0]
    assert floor == pytest.approx(0.10287, rel=1e-4)
    with pytest.raises(ValueError, match="smallest epsilon"):
        dsi.sigma_from_epsilon(0.1, 1e-5, accountant="rdp", sample_rate=0.5, sampling=sampling)


def test_trainer_minibatch_sampling_epsilon_is_the_accountants_and_groups_join_at_the_rate():
    torch = pytest.importorskip("torch")
    torch.manual_seed(1)
    n_groups, per_group, rounds, q, c = 30, 3, 12, 0.3, 1.5
    x, y = torch.randn(n_groups * per_group + 10, 4), torch.randint(0, 2, (n_groups * per_group + 10,))
    groups = np.concatenate([np.repeat(np.arange(n_groups), per_group), np.full(10, -1)])
    budgets = np.tile([0.5, 1.0, 2.0], n_groups // 3)
    for sampling in ("poisson", "fixed"):
        tr = dsi.DSITrainer(
            torch.nn.Linear(4, 2),
            lr=0.5,
            rounds=rounds,
            noise_multiplier=c,
            budgets=budgets,
            accountant="rdp",
            sample_rate=q,
            sampling=sampling,
            random_state=3,
        ).fit(x, y, groups)
        rate = round(q * n_groups) / n_groups if sampling == "fixed" else q
        assert tr.sample_rate_ == rate
        # epsilon_ per group is the subsampled-Gaussian RDP accountant called directly with that group's budget
        for b in (0.5, 1.0, 2.0):
            rdp = rdp_subsampled_gaussian(rate, c, DEFAULT_ORDERS, steps=rounds, budget=b, sampling=sampling)
            direct = epsilon_from_rdp(rdp, DEFAULT_ORDERS, 1e-5)[0]
            np.testing.assert_allclose(tr.epsilon_[budgets == b], direct, rtol=1e-12)
            assert direct < dsi.epsilon_from_sigma(c, 1e-5, steps=rounds, budget=b, accountant="rdp")
        counts = np.array([rec.n_differences for rec in tr.history_])
        if sampling == "fixed":  # exactly round(q n) groups per round, each with a non-zero difference
            assert np.all(counts == round(q * n_groups))
        else:  # Poisson: 9 expected per round; the total over 12 rounds within 4 standard errors
            mean, sd = rounds * n_groups * q, np.sqrt(rounds * n_groups * q * (1 - q))
            assert abs(counts.sum() - mean) < 4 * sd and counts.std() > 0
    # the same with mini-batches inside each round: a group only has a difference if a batch held it
    tr = dsi.DSITrainer(
        torch.nn.Linear(4, 2),
        lr=0.5,
        rounds=6,
        local_steps=2,
        batch_size=8,
        noise_multiplier=c,
        accountant="rdp",
        sample_rate=q,
        random_state=4,
    ).fit(x, y, groups)
    rdp = rdp_subsampled_gaussian(q, c, DEFAULT_ORDERS, steps=6)
    np.testing.assert_allclose(tr.epsilon_, epsilon_from_rdp(rdp, DEFAULT_ORDERS, 1e-5)[0], rtol=1e-12)
    assert all(rec.n_differences <= 2 * 8 for rec in tr.history_)
    assert np.isfinite(tr.model.weight.detach().numpy()).all()
