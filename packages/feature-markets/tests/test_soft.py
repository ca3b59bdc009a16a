import numpy as np
import pytest
import torch

from feature_markets import market_price, soft_market_price


def tensors(seed, m=120, d=3):
    rng = np.random.default_rng(seed)
    X = rng.uniform(0, 1, (m, d))
    w = rng.uniform(0.2, 1.0, d)
    bias = -float(np.quantile(X @ w, 0.6))
    budgets = 2.0 ** rng.uniform(0, 10, m)
    return w, bias, X, budgets


@pytest.mark.parametrize("seed", range(8))
def test_soft_price_converges_to_exact_at_extreme_temperatures(seed):
    w, bias, X, budgets = tensors(seed)
    exact = market_price(w, bias, X, budgets).price
    soft = soft_market_price(
        torch.tensor(w),
        torch.tensor(bias, dtype=torch.float64),
        torch.tensor(X),
        torch.tensor(budgets),
        tau_sort=1e-3,
        tau_softmax=1e3,
    ).item()
    assert abs(soft - exact) / exact < 1e-3


def test_soft_price_moves_towards_exact_as_temperatures_sharpen():
    w, bias, X, budgets = tensors(11)
    exact = market_price(w, bias, X, budgets).price
    args = (torch.tensor(w), torch.tensor(bias, dtype=torch.float64), torch.tensor(X), torch.tensor(budgets))
    errors = [
        abs(soft_market_price(*args, tau_sort=ts, tau_softmax=tm).item() - exact) / exact
        for ts, tm in [(1.0, 2.0), (0.1, 50.0), (1e-3, 1e3)]
    ]
    assert errors[-1] < errors[0]


def test_gradients_are_finite_and_non_zero():
    w, bias, X, budgets = tensors(2)
    wt = torch.tensor(w, requires_grad=True)
    bt = torch.tensor(bias, dtype=torch.float64, requires_grad=True)
    price = soft_market_price(wt, bt, torch.tensor(X), torch.tensor(budgets))
    price.backward()
    assert torch.isfinite(wt.grad).all() and torch.isfinite(bt.grad)
    assert wt.grad.abs().sum() > 0 and bt.grad.abs() > 0


def test_hard_straight_through_equals_exact_price_with_soft_gradient():
    w, bias, X, budgets = tensors(4)
    wt = torch.tensor(w, requires_grad=True)
    bt = torch.tensor(bias, dtype=torch.float64, requires_grad=True)
    price = soft_market_price(wt, bt, torch.tensor(X), torch.tensor(budgets), hard=True)
    assert price.item() == pytest.approx(market_price(w, bias, X, budgets).price, rel=1e-10)
    price.backward()
    assert torch.isfinite(wt.grad).all() and wt.grad.abs().sum() > 0


def test_bad_temperature():
    w, bias, X, budgets = tensors(0)
    with pytest.raises(ValueError, match="temperatures must be positive"):
        soft_market_price(torch.tensor(w), bias, torch.tensor(X), torch.tensor(budgets), tau_sort=0)
