"""Random draws follow the model's device; implausible attack budgets warn."""

import types
import warnings

import pytest
import torch

from crossclass_at import PGD, AdversarialTrainer, CASMonitor, DigitsMLP, SelfDistillation, TradesKL, robust_accuracy
from crossclass_at.attacks import check_generator, generator_on
from crossclass_at.cifar import cifar_augment


@pytest.fixture
def generator_spy(monkeypatch):
    """Record the device every ``torch.Generator`` is created with (None: no device named, i.e. the CPU)."""
    real = torch.Generator
    created: list[object] = []

    class Spy(real):  # a type, so that annotations such as ``torch.Generator | None`` still evaluate
        def __new__(cls, device=None):
            created.append(device)
            return real() if device is None else real(device=device)

    monkeypatch.setattr(torch, "Generator", Spy)
    return created


@pytest.mark.parametrize("soft", [None, "self-distillation"])
def test_the_trainer_and_the_monitor_draw_on_the_models_device(digits, generator_spy, soft):
    # on a CUDA model a generator created without a device is a CPU generator, and the attack's start fails
    # (torch: "Expected a 'cuda' device type for generator"); every generator must name the model's device
    torch.manual_seed(0)
    model = DigitsMLP(hidden=16)
    monitor = CASMonitor(digits.x_test[:100], digits.y_test[:100], attack=PGD(eps=0.1, steps=2), every=1)
    AdversarialTrainer(model, eps=0.1, steps=2, epochs=2, eval_steps=2, batch_size=256, callbacks=[monitor],
                       soft_labels=SelfDistillation() if soft else None, augment=lambda x, g: x,
                       random_state=0).fit(digits.x_train, digits.y_train, digits.x_val, digits.y_val)
    assert len(monitor.cas_) == 2
    model_device = next(model.parameters()).device
    assert generator_spy, "no generator was created"
    assert all(d is not None and torch.device(d) == model_device for d in generator_spy), generator_spy


def test_an_attack_refuses_a_generator_on_another_device():
    x, y = torch.rand(4, 1, 2, 2), torch.tensor([0, 1, 0, 1])
    model = torch.nn.Sequential(torch.nn.Flatten(), torch.nn.Linear(4, 2))
    elsewhere = types.SimpleNamespace(device=torch.device("cuda", 0))  # what a CUDA generator reports
    for attack in (PGD(eps=0.1, steps=1), PGD(eps=0.5, steps=1, norm="l2"), TradesKL(eps=0.1, steps=1)):
        with pytest.raises(ValueError, match="generator is on cuda:0 but the inputs are on cpu"):
            attack(model, x, y, generator=elsewhere)
    with pytest.raises(ValueError, match="robust_accuracy: generator is on cuda:0"):
        robust_accuracy(model, x, y, PGD(eps=0.1, steps=1), generator=elsewhere)
    check_generator(generator_on("cpu", 0), x)  # the same device: fine
    check_generator(elsewhere, x.to("meta"))  # shape-only tensors accept any generator
    assert generator_on("meta", 0).device == torch.device("cpu")


def test_the_cifar_augmentation_draws_on_the_inputs_device():
    x = torch.rand(3, 3, 8, 8)
    a = cifar_augment(x, generator_on(x.device, 5))
    assert a.device == x.device and torch.equal(a, cifar_augment(x, generator_on(x.device, 5)))


def test_training_leaves_the_callers_global_generator_alone(digits):
    model = DigitsMLP(hidden=8)
    state = torch.random.get_rng_state()
    AdversarialTrainer(model, eps=0.1, steps=1, epochs=1, eval_steps=1, batch_size=512,
                       random_state=0).fit(digits.x_train, digits.y_train, digits.x_val, digits.y_val)
    assert torch.equal(torch.random.get_rng_state(), state)


@pytest.mark.parametrize(("make", "match"), [
    (lambda: PGD(eps=8), "eps=8 is an l-inf radius above 0.5"),
    (lambda: TradesKL(eps=8), "pixel units"),
    (lambda: PGD(eps=0.1, alpha=0.5), "every step leaves the ball"),
])
def test_implausible_budgets_warn(make, match):
    with pytest.warns(UserWarning, match=match):
        make()


def test_budgets_that_need_the_data_warn_at_use(digits):
    x, y = torch.rand(2, 3, 8, 8), torch.tensor([0, 1])
    model = torch.nn.Sequential(torch.nn.Flatten(), torch.nn.Linear(192, 2))
    attack = PGD(eps=20.0, norm="l2", steps=1)  # sqrt(192) = 13.9: the ball holds the whole cube
    with pytest.warns(UserWarning, match="l2 radius at least the diameter"):
        attack(model, x, y, generator=generator_on("cpu", 0))
    twice = digits.x_train / 255  # scaled twice: every image within 1/255 of black
    with pytest.warns(UserWarning, match="no wider than eps"):
        AdversarialTrainer(DigitsMLP(hidden=8), eps=8 / 255, steps=1, epochs=1, eval_steps=1,
                           random_state=0).fit(twice, digits.y_train, digits.x_val, digits.y_val)


def test_plausible_budgets_are_silent(digits):
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        PGD(eps=8 / 255), PGD(eps=0.3, alpha=0.01), PGD(eps=128 / 255, norm="l2"), TradesKL(eps=0.031)
        AdversarialTrainer(DigitsMLP(hidden=8), eps=0.1, steps=1, epochs=1, eval_steps=1, batch_size=512,
                           random_state=0).fit(digits.x_train, digits.y_train, digits.x_val, digits.y_val)
