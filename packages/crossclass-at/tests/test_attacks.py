"""Attacks: bit-for-bit agreement with torchattacks, the ball and box constraints, BN modes, the PGD order."""

import pytest
import torch
from torch import nn

from crossclass_at import (
    FGSM,
    PGD,
    DigitsCNN,
    DigitsMLP,
    Normalized,
    TradesKL,
    autoattack_accuracy,
    bn_mode,
    robust_accuracy,
)


@pytest.fixture
def torchattacks():
    return pytest.importorskip("torchattacks")


@pytest.fixture
def batch():
    torch.manual_seed(0)
    model = DigitsCNN(width=16)
    x = torch.rand(24, 1, 8, 8)
    y = torch.randint(0, 10, (24,))
    return model, x, y


def _peer(attack, seed, *args):
    torch.manual_seed(seed)  # torchattacks draws its random start from torch's global generator
    return attack(*args)


@pytest.mark.parametrize("random_start", [False, True])
def test_pgd_linf_equals_torchattacks_bit_for_bit(torchattacks, batch, random_start):
    model, x, y = batch
    peer = _peer(torchattacks.PGD(model, eps=0.1, alpha=0.02, steps=7, random_start=random_start), 5, x, y)
    ours = PGD(eps=0.1, alpha=0.02, steps=7, random_start=random_start)(
        model, x, y, generator=torch.Generator().manual_seed(5))
    assert torch.equal(ours, peer)
    assert not torch.equal(ours, x)


@pytest.mark.parametrize("random_start", [False, True])
def test_pgd_l2_equals_torchattacks(torchattacks, batch, random_start):
    model, x, y = batch
    peer = _peer(torchattacks.PGDL2(model, eps=0.6, alpha=0.15, steps=6, random_start=random_start), 2, x, y)
    ours = PGD(eps=0.6, alpha=0.15, steps=6, norm="l2", random_start=random_start)(
        model, x, y, generator=torch.Generator().manual_seed(2))
    assert (ours - peer).abs().max() <= 1e-6


def test_fgsm_and_trades_kl_equal_torchattacks(torchattacks, batch):
    model, x, y = batch
    assert torch.equal(FGSM(eps=0.1)(model, x, y), torchattacks.FGSM(model, eps=0.1)(x, y))
    peer = _peer(torchattacks.TPGD(model, eps=0.1, alpha=0.03, steps=5), 9, x)
    ours = TradesKL(eps=0.1, alpha=0.03, steps=5)(model, x, generator=torch.Generator().manual_seed(9))
    assert torch.equal(ours, peer)


@pytest.mark.parametrize("attack", [PGD(eps=0.07, steps=5), PGD(eps=0.4, steps=5, norm="l2"), FGSM(eps=0.07),
                                    TradesKL(eps=0.07, steps=5)])
def test_perturbation_stays_in_the_ball_and_the_box(batch, attack):
    model, x, y = batch
    x = x.clone()
    x[:4] = 0.0
    x[4:8] = 1.0  # at the box's faces
    adv = attack(model, x, y, generator=torch.Generator().manual_seed(0))
    delta = (adv - x).flatten(1)
    if getattr(attack, "norm", "linf") == "l2":
        assert delta.norm(dim=1).max() <= attack.eps * (1 + 1e-6)
    else:
        assert delta.abs().max() <= attack.eps + 1e-7
    assert adv.min() >= 0.0 and adv.max() <= 1.0


def test_pgd_raises_the_loss_over_steps(batch):
    model, x, y = batch
    losses = []
    for steps in (1, 3, 10):
        adv = PGD(eps=0.1, steps=steps, random_start=False)(model, x, y)
        with torch.no_grad():
            losses.append(float(nn.functional.cross_entropy(model.eval()(adv), y)))
    with torch.no_grad():
        clean = float(nn.functional.cross_entropy(model(x), y))
    assert clean < losses[0] <= losses[1] <= losses[2]


def test_bn_mode_train_updates_running_stats_and_eval_does_not(batch):
    model, x, y = batch
    model.train()
    before = model.body[1].running_mean.clone()
    PGD(eps=0.1, steps=2, bn_mode="eval")(model, x, y)
    assert torch.equal(model.body[1].running_mean, before) and model.training
    PGD(eps=0.1, steps=2, bn_mode="train")(model.eval(), x, y)
    assert not torch.equal(model.body[1].running_mean, before)
    assert not model.training and not model.body[1].training  # the caller's mode is restored
    with bn_mode(model, "keep"):
        assert not model.training


def test_digits_model_accuracy_orders_the_attacks(digits_model):
    model, split = digits_model
    x, y = split.x_test, split.y_test
    gen = lambda: torch.Generator().manual_seed(0)  # noqa: E731
    clean = robust_accuracy(model, x, y)
    fgsm = robust_accuracy(model, x, y, FGSM(eps=0.1))
    pgd10 = robust_accuracy(model, x, y, PGD(eps=0.1, steps=10, alpha=0.025), generator=gen())
    pgd20 = robust_accuracy(model, x, y, PGD(eps=0.1, steps=20, alpha=0.025), generator=gen())
    assert clean > 0.9
    assert pgd20 <= pgd10 <= fgsm < clean
    assert pgd20 < 0.9 * clean  # the attack bites


def test_normalized_wrapper_lets_attacks_run_on_normalised_models():
    torch.manual_seed(1)
    inner = DigitsMLP(hidden=8)
    wrapped = Normalized(inner, mean=[0.3], std=[0.2])
    x, y = torch.rand(6, 1, 8, 8), torch.arange(6)
    assert torch.allclose(wrapped(x), inner((x - 0.3) / 0.2))
    adv = PGD(eps=0.05, steps=3, random_start=False)(wrapped, x, y)
    assert (adv - x).abs().max() <= 0.05 + 1e-7


@pytest.mark.parametrize(("kwargs", "match"), [
    ({"eps": -0.1}, "eps must be"), ({"steps": 0}, "steps must be"), ({"steps": 2.5}, "steps must be"),
    ({"norm": "l1"}, "norm must be"), ({"bn_mode": "frozen"}, "bn_mode must be"), ({"alpha": -1.0}, "alpha"),
])
def test_bad_configuration_raises(kwargs, match):
    with pytest.raises((ValueError, TypeError), match=match):  # a float step count is a type error
        PGD(**kwargs)


def test_inputs_outside_the_unit_box_raise(batch):
    model, x, y = batch
    with pytest.raises(ValueError, match=r"\[0, 1\].*Normalized"):
        PGD(eps=0.1)(model, x * 2 - 0.5, y)
    with pytest.raises(ValueError, match="FGSM|eps must be"):
        FGSM(eps=-1)
    with pytest.raises(ValueError, match="steps"):
        TradesKL(steps=0)


def test_autoattack_breaks_everything_pgd_breaks(torchattacks, digits_model):
    model, split = digits_model
    x, y = split.x_test[:40], split.y_test[:40]
    pgd = robust_accuracy(model, x, y, PGD(eps=0.2, steps=20), generator=torch.Generator().manual_seed(0))
    assert autoattack_accuracy(model, x, y, eps=0.2) <= pgd < 0.1
    with pytest.raises(ValueError, match="norm must be"):
        autoattack_accuracy(model, x, y, eps=0.2, norm="l1")


@pytest.mark.slow
def test_autoattack_is_at_least_as_strong_as_pgd20(torchattacks, digits_model):
    model, split = digits_model
    x, y = split.x_test[:40], split.y_test[:40]
    clean = robust_accuracy(model, x, y)
    pgd = robust_accuracy(model, x, y, PGD(eps=0.1, steps=20), generator=torch.Generator().manual_seed(0))
    aa = autoattack_accuracy(model, x, y, eps=0.1)
    assert aa <= pgd < clean  # measured: clean 0.950, PGD-20 0.225, AutoAttack 0.200
