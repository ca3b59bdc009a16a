"""Attacks and metrics under awkward inputs: label dtypes, NaN, grad modes, model state left as found."""

import pytest
import torch
from torch import nn

from crossclass_at import (
    FGSM,
    PGD,
    AdversarialTrainer,
    CASMonitor,
    DigitsCNN,
    DigitsMLP,
    Normalized,
    TradesKL,
    class_attribution,
    robust_accuracy,
)


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


@pytest.fixture
def tiny():
    torch.manual_seed(0)
    return torch.rand(40, 1, 8, 8), torch.arange(40) % 10


@pytest.mark.parametrize("method", ["standard", "pgd-at", "trades"])
def test_trainer_label_dtypes(tiny, method):
    x, y = tiny
    def fit(labels):
        torch.manual_seed(0)
        trainer = AdversarialTrainer(DigitsMLP(hidden=8), method=method, eps=0.1, steps=2, epochs=1, random_state=0)
        return trainer.fit(x, labels, x, labels).history_[-1]
    with pytest.raises(TypeError, match="integer class labels"):
        fit(y.float())
    ref = fit(y)
    got = fit(y.int())
    assert got["train_loss"] == ref["train_loss"] and got["robust_accuracy"] == ref["robust_accuracy"]


def test_trainer_with_a_frozen_model_says_so(tiny):
    x, y = tiny
    model = DigitsMLP(hidden=8)
    for p in model.parameters():
        p.requires_grad_(False)
    with pytest.raises(ValueError, match="no trainable parameters"):
        AdversarialTrainer(model, method="pgd-at", eps=0.1, steps=2, epochs=1, random_state=0).fit(x, y, x, y)


def test_trainer_shape_probe_does_not_touch_batchnorm_statistics(tiny):
    x, y = tiny
    model = DigitsCNN(width=8)
    AdversarialTrainer(model, method="standard", epochs=1, batch_size=40, random_state=0).fit(x, y, x, y)
    assert int(model.body[1].num_batches_tracked) == 1  # one training batch; evaluation runs in eval mode


def test_monitor_repr_shows_the_configuration_not_the_data(tiny):
    x, y = tiny
    text = repr(CASMonitor(x, y, attack=PGD(eps=0.1, steps=2)))
    assert "PGD(eps=0.1" in text and "tensor(" not in text and len(text) < 300


@pytest.mark.parametrize("norm", ["linf", "l2"])
@pytest.mark.parametrize("random_start", [False, True])
def test_eps_zero_returns_the_inputs(batch, norm, random_start):
    model, x, y = batch
    adv = PGD(eps=0.0, steps=2, norm=norm, random_start=random_start)(model, x, y)
    assert torch.equal(adv, x)  # l2 returned NaN (0 / 0 in the projection)


def test_normalized_keeps_the_batch_shape_and_checks_channels():
    torch.manual_seed(0)
    inner = nn.Linear(64, 10)
    flat = torch.rand(6, 64)
    out = Normalized(inner, mean=[0.3], std=[0.2])(flat)
    assert out.shape == (6, 10) and torch.allclose(out, inner((flat - 0.3) / 0.2))  # was (1, 1, 6, 10)
    rgb = Normalized(nn.Sequential(nn.Flatten(), nn.Linear(48, 10)), mean=[0.1, 0.2, 0.3], std=[0.2, 0.2, 0.2])
    with pytest.raises(ValueError, match=r"3 channels.*shape \(2, 1, 4, 4\)"):
        rgb(torch.rand(2, 1, 4, 4))  # broadcast to 3 channels silently before
