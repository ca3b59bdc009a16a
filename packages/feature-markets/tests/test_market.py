import numpy as np
import pytest

from feature_markets import market_price, simulate_market


def instance(seed, m=None, integer_budgets=False):
    rng = np.random.default_rng(seed)
    m = m or int(rng.integers(5, 201))
    d = int(rng.integers(1, 5))
    X = rng.uniform(0, 1, (m, d))
    w = rng.uniform(0.1, 1.0, d)
    bias = -float(np.median(X @ w))
    budgets = rng.integers(1, 6, m).astype(float) if integer_budgets else 2.0 ** rng.uniform(0, 8, m)
    return w, bias, X, budgets


def brute_force(w, bias, X, budgets):
    """O(m^2): try every candidate price b_i / u_i, revenue = price * sum of distances of those who afford it."""
    u = np.maximum(-(X @ w + bias), 0) / np.linalg.norm(w)
    best = (0.0, 0.0)
    per_unit = np.where(u > 0, budgets / np.where(u > 0, u, 1), np.inf)
    for i in np.flatnonzero(u > 0):
        price = per_unit[i]
        revenue = price * u[(u > 0) & (per_unit >= price)].sum()
        if revenue > best[1]:
            best = (price, revenue)
    return best, u


@pytest.mark.parametrize("seed", range(25))
def test_fast_price_equals_brute_force(seed):
    w, bias, X, budgets = instance(seed, integer_budgets=seed % 3 == 0)  # integer budgets create ties
    result = market_price(w, bias, X, budgets)
    (price, revenue), u = brute_force(w, bias, X, budgets)
    assert result.revenue == pytest.approx(revenue, rel=1e-12)
    assert result.price == pytest.approx(price, rel=1e-12)
    np.testing.assert_array_equal(result.movers, (u > 0) & (budgets / np.where(u > 0, u, 1) >= result.price))
    assert result.revenue == pytest.approx(result.price * u[result.movers].sum(), rel=1e-12)


@pytest.mark.parametrize("seed", range(10))
def test_no_single_price_deviation_increases_revenue(seed):
    w, bias, X, budgets = instance(seed)
    result = market_price(w, bias, X, budgets)
    u = result.distance
    candidates = budgets[u > 0] / u[u > 0]
    rng = np.random.default_rng(seed)
    trial_prices = np.concatenate(
        [candidates * (1 + 1e-9), candidates * (1 - 1e-9), rng.uniform(0, candidates.max() * 1.5, 500)]
    )
    for price in trial_prices:
        revenue = price * u[(u > 0) & (budgets / np.where(u > 0, u, 1) >= price)].sum()
        assert revenue <= result.revenue * (1 + 1e-12)


def test_users_who_cannot_afford_stay_and_movers_pay_within_budget():
    w, bias, X, budgets = instance(3, m=150)
    outcome = simulate_market(w, bias, X, budgets)
    market = outcome.market
    scores_after = outcome.X_after @ w + bias
    assert np.all(outcome.X_after >= X - 1e-15)  # only increments are bought
    np.testing.assert_allclose(scores_after[market.movers], 0.0, atol=1e-9)  # cheapest move: to the boundary
    np.testing.assert_array_equal(outcome.X_after[~market.movers], X[~market.movers])
    assert np.all(outcome.costs[market.movers] <= budgets[market.movers] * (1 + 1e-12))
    stuck = (market.distance > 0) & ~market.movers
    assert np.all(budgets[stuck] < market.price * market.distance[stuck])
    np.testing.assert_array_equal(outcome.predictions, np.where((X @ w + bias >= 0) | market.movers, 1, -1))
    # cost of the purchase at prices p = rho * w / ||w|| equals rho * u
    p = market.price * w / np.linalg.norm(w)
    np.testing.assert_allclose((outcome.X_after - X) @ p, outcome.costs, rtol=1e-10, atol=1e-12)


def test_fixed_price_short_term():
    w, bias, X, budgets = instance(5, m=100)
    outcome = simulate_market(w, bias, X, budgets, price=0.0)
    assert outcome.market.movers.sum() == np.sum(X @ w + bias < 0)  # free features: every negative moves
    expensive = simulate_market(w, bias, X, budgets, price=1e12)
    assert not expensive.market.movers.any()


def test_nobody_negative_and_no_positive_weight():
    X = np.ones((4, 2))
    result = market_price(np.array([1.0, 1.0]), 0.5, X, np.ones(4))
    assert result.price == 0.0 and not result.movers.any()
    outcome = simulate_market(np.array([-1.0, 0.0]), 0.5, X, np.ones(4))  # weights only penalise: no purchases
    assert not outcome.market.movers.any() and np.all(outcome.predictions == -1)


def test_bad_input_messages():
    w, bias, X, budgets = instance(0, m=10)
    with pytest.raises(ValueError, match="non-negative"):
        market_price(w, bias, X - 1, budgets)
    with pytest.raises(ValueError, match="strictly positive"):
        market_price(w, bias, X, -budgets)
    with pytest.raises(ValueError, match="zero weight vector"):
        market_price(np.zeros_like(w), bias, X, budgets)
    with pytest.raises(ValueError, match="shape"):
        market_price(w, bias, X[:, :1], budgets) if X.shape[1] > 1 else market_price(w, bias, X, budgets[:-1])
    with pytest.raises(ValueError, match="price must be"):
        simulate_market(w, bias, X, budgets, price=-1.0)
