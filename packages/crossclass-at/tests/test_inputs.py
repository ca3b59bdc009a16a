"""Attacks and metrics under awkward inputs: label dtypes, NaN, grad modes, model state left as found."""

import pytest
import torch
from torch import nn

from crossclass_at import FGSM, PGD, DigitsCNN, TradesKL, class_attribution, robust_accuracy


@pytest.fixture
def batch():
    torch.manual_seed(0)
    return DigitsCNN(width=8).eval(), torch.rand(6, 1, 8, 8), torch.tensor([0, 1, 2, 3, 4, 5])


@pytest.mark.parametrize("attack", [PGD(eps=0.1, steps=2), FGSM(eps=0.1)])
def test_float_labels_raise_a_clear_error(batch, attack):
    model, x, y = batch
    with pytest.raises(TypeError, match="integer class labels.*float32"):
        attack(model, x, y.float())
    with pytest.raises(TypeError, match="integer class labels"):
        robust_accuracy(model, x, y.float(), attack)


def test_other_integer_label_dtypes_give_the_int64_result(batch):
    model, x, y = batch
    attack = PGD(eps=0.1, steps=3, random_start=False)
    ref = attack(model, x, y)
    assert torch.equal(attack(model, x, y.int()), ref)
    assert torch.equal(attack(model, x, y.to(torch.uint8)), ref)
    assert robust_accuracy(model, x, y.int(), attack) == robust_accuracy(model, x, y, attack)


def test_nan_inputs_raise(batch):
    model, x, y = batch
    x = x.clone()
    x[0, 0, 0, 0] = float("nan")
    with pytest.raises(ValueError, match="NaN"):
        PGD(eps=0.1, steps=2)(model, x, y)


@pytest.mark.parametrize("attack", [PGD(eps=0.1, steps=3), FGSM(eps=0.1), TradesKL(eps=0.1, steps=3)])
def test_attacks_work_inside_no_grad(batch, attack):
    model, x, y = batch
    ref = attack(model, x, y, generator=torch.Generator().manual_seed(0))
    with torch.no_grad():
        inside = attack(model, x, y, generator=torch.Generator().manual_seed(0))
    assert torch.equal(inside, ref) and not torch.equal(ref, x)


def test_attacks_inside_inference_mode_raise_clearly(batch):
    model, x, y = batch
    with torch.inference_mode(), pytest.raises(RuntimeError, match="inference_mode"):
        PGD(eps=0.1, steps=2)(model, x, y)


def test_model_mode_grad_flags_and_grads_are_left_as_found(batch):
    _, x, y = batch
    torch.manual_seed(1)
    model = nn.Sequential(nn.Flatten(), nn.Linear(64, 16), nn.Dropout(0.5), nn.ReLU(), nn.Linear(16, 10)).train()
    model[1].weight.requires_grad_(False)
    flags = [p.requires_grad for p in model.parameters()]
    a = PGD(eps=0.1, steps=3, random_start=False)(model, x, y)
    b = PGD(eps=0.1, steps=3, random_start=False)(model, x, y)
    assert torch.equal(a, b)  # eval mode inside: dropout off, deterministic
    assert model.training and all(m.training for m in model.modules())
    assert [p.requires_grad for p in model.parameters()] == flags
    assert all(p.grad is None for p in model.parameters())
    for p in model.parameters():
        p.requires_grad_(False)  # a fully frozen model is still attackable
    assert not torch.equal(PGD(eps=0.1, steps=3, random_start=False)(model, x, y), x)


def test_batch_of_one_and_one_sample_per_class(batch):
    model, x, y = batch
    adv = PGD(eps=0.1, steps=2, bn_mode="train")(model, x[:1], y[:1])
    assert adv.shape == (1, 1, 8, 8) and not model.training
    xs = torch.rand(10, 1, 8, 8)
    a = class_attribution(model, xs, torch.arange(10), on="clean")
    with torch.no_grad():
        g = model.features(xs)
    assert torch.allclose(torch.from_numpy(a).float(), g * model.fc.weight, atol=1e-6)


@pytest.mark.parametrize("batch_size", [0, -1, 2.5])
def test_robust_accuracy_rejects_a_bad_batch_size(batch, batch_size):
    model, x, y = batch
    with pytest.raises(ValueError, match="batch_size"):
        robust_accuracy(model, x, y, batch_size=batch_size)
