"""Losses against their closed forms and torch; the trainer's recipe, seeding, checkpoints and errors."""

import math

import numpy as np
import pytest
import torch
from torch import nn

from crossclass_at import (
    PGD,
    AdversarialTrainer,
    CASMonitor,
    DigitsCNN,
    DigitsMLP,
    Distillation,
    LabelSmoothing,
    SelfDistillation,
    ema_update,
    robust_accuracy,
    trades_loss,
)
from crossclass_at.losses import distillation_loss


def test_trades_loss_equals_ce_plus_beta_over_b_times_the_summed_kl():
    g = torch.Generator().manual_seed(0)
    clean, adv = torch.randn(7, 5, generator=g, dtype=torch.float64), torch.randn(7, 5, generator=g, dtype=torch.float64)
    y = torch.tensor([0, 1, 2, 3, 4, 0, 1])
    ours = float(trades_loss(clean, adv, y, beta=6.0))
    ce = -np.mean([math.log(math.exp(clean[b, y[b]]) / float(torch.exp(clean[b]).sum())) for b in range(7)])
    kl = 0.0
    for b in range(7):
        p, q = torch.softmax(clean[b], 0), torch.softmax(adv[b], 0)
        kl += float((p * (p.log() - q.log())).sum())
    assert ours == pytest.approx(ce + 6.0 / 7 * kl, abs=1e-6)


def test_label_smoothing_equals_torch():
    logits, y = torch.randn(9, 10, generator=torch.Generator().manual_seed(1)), torch.arange(9)
    for s in (0.0, 0.1, 0.3):
        assert torch.equal(LabelSmoothing(smoothing=s).loss(logits, y), nn.CrossEntropyLoss(label_smoothing=s)(logits, y))
        target = torch.full((9, 10), s / 10).scatter_(1, y[:, None], 1 - s + s / 10)
        assert float(LabelSmoothing(smoothing=s).loss(logits, y)) == pytest.approx(
            float(-(target * logits.log_softmax(1)).sum(1).mean()), abs=1e-6)


def test_ema_teacher_matches_its_closed_form():
    torch.manual_seed(0)
    student, sd = DigitsCNN(3, width=4), SelfDistillation(ema=0.9)
    teacher = sd.make_teacher(student)
    start = {k: v.clone() for k, v in teacher.state_dict().items()}
    with torch.no_grad():
        for p in student.parameters():
            p.add_(1.0)
        student.body[1].running_mean.add_(2.0)
    for _ in range(5):
        ema_update(teacher, student, sd.ema)
    for k, v in teacher.state_dict().items():
        s = student.state_dict()[k]
        if v.dtype.is_floating_point:  # theta_t = ema^n theta_0 + (1 - ema^n) theta_s
            assert torch.allclose(v, 0.9**5 * start[k] + (1 - 0.9**5) * s, atol=1e-6), k
        else:
            assert torch.equal(v, s)
    assert not any(p.requires_grad for p in teacher.parameters())


def test_self_distillation_ramp_is_the_official_schedule():
    sd = SelfDistillation(lam=0.8, ramp=(90, 110))
    official = lambda e: 0.8 if e > 110 else (e - 90) / 20 * 0.8  # noqa: E731 - lam_schedule, used from epoch 90
    assert [sd.weight(e) for e in (0, 89)] == [0.0, 0.0]
    assert all(sd.weight(e) == pytest.approx(official(e)) for e in range(90, 200))


def test_distillation_loss_brute_force():
    g = torch.Generator().manual_seed(2)
    s, t, y = torch.randn(4, 3, generator=g), torch.randn(4, 3, generator=g), torch.tensor([0, 1, 2, 0])
    ours = float(distillation_loss(s, t, y, temperature=1.5, lam=0.8))
    p, logq = torch.softmax(t / 1.5, 1), torch.log_softmax(s / 1.5, 1)
    kl = float((p * (p.log() - logq)).sum(1).mean())
    assert ours == pytest.approx(0.2 * float(nn.functional.cross_entropy(s, y)) + 0.8 * 2.25 * kl, abs=1e-6)


@pytest.fixture(scope="module")
def small(digits):
    return digits.x_train[:400], digits.y_train[:400], digits.x_val[:150], digits.y_val[:150]


def _fit(small, seed=0, **kw):
    torch.manual_seed(0)
    args = {"eps": 0.1, "steps": 3, "epochs": 4, "lr": 0.05, "batch_size": 64, "eval_steps": 5, "random_state": seed}
    args.update(kw)
    return AdversarialTrainer(kw.pop("model", None) or DigitsMLP(hidden=32), **{k: v for k, v in args.items()
                                                                             if k != "model"}).fit(*small)


def test_same_random_state_same_history_and_lr_milestones(small):
    a, b, c = _fit(small), _fit(small), _fit(small, seed=1)
    strip = lambda h: [{k: v for k, v in r.items() if k != "seconds"} for r in h]  # noqa: E731
    assert strip(a.history_) == strip(b.history_)
    assert strip(a.history_) != strip(c.history_)
    assert [r["lr"] for r in a.history_] == pytest.approx([0.05, 0.05, 0.005, 0.0005])  # /10 at 50% and 75%


def test_best_checkpoint_is_the_best_robust_epoch_and_reloads(small):
    tr = _fit(small, epochs=5)
    robust = [r["robust_accuracy"] for r in tr.history_]
    assert tr.best_epoch_ == int(np.argmax(robust)) + 1
    gen = torch.Generator().manual_seed(0)
    best = tr.best_model()
    x_val, y_val = small[2], small[3]
    # re-evaluating with the trainer's evaluation attack gives the recorded accuracy order of magnitude
    assert robust_accuracy(best, x_val, y_val) == pytest.approx(tr.history_[tr.best_epoch_ - 1]["clean_accuracy"])
    assert 0 <= robust_accuracy(best, x_val, y_val, tr.eval_attack(), generator=gen) <= 1


def test_adversarial_training_beats_standard_training_under_attack(small):
    at, std = _fit(small, epochs=20, lr=0.1), _fit(small, epochs=20, lr=0.1, method="standard")
    attack = PGD(eps=0.1, steps=10)
    x_val, y_val = small[2], small[3]
    r_at = robust_accuracy(at.model, x_val, y_val, attack, generator=torch.Generator().manual_seed(0))
    r_std = robust_accuracy(std.model, x_val, y_val, attack, generator=torch.Generator().manual_seed(0))
    assert r_at > r_std + 0.05


@pytest.mark.parametrize("method,soft", [("trades", None), ("pgd-at", LabelSmoothing(smoothing=0.1)),
                                         ("pgd-at", SelfDistillation(ramp=(1, 2)))])
def test_every_objective_trains_and_the_monitor_records_cas(small, method, soft):
    monitor = CASMonitor(small[2], small[3], attack=PGD(eps=0.1, steps=3))
    tr = _fit(small, method=method, soft_labels=soft, callbacks=[monitor], epochs=3)
    assert monitor.epochs_ == [1, 2, 3] and len(monitor.matrices_) == 3
    assert [r["cas"] for r in tr.history_] == monitor.cas_
    assert all(0 <= v <= 90 for v in monitor.cas_)
    assert tr.history_[-1]["train_loss"] < tr.history_[0]["train_loss"]


def test_distillation_from_a_fixed_teacher(small):
    teacher = _fit(small, epochs=2).model
    frozen = {k: v.clone() for k, v in teacher.state_dict().items()}
    tr = _fit(small, soft_labels=Distillation(teacher=teacher, T=2.0, lam=0.5), epochs=2)
    assert len(tr.history_) == 2
    assert all(torch.equal(v, teacher.state_dict()[k]) for k, v in frozen.items())


@pytest.mark.parametrize(("kwargs", "match"), [
    ({"method": "fgsm-at"}, "method must be"), ({"eps": -0.1}, "eps must be"), ({"steps": 0}, "steps must be"),
    ({"method": "trades", "soft_labels": LabelSmoothing()}, "soft_labels apply"),
    ({"method": "trades", "norm": "l2"}, "supports norm='linf' only"), ({"milestones": (1.5,)}, "milestones"),
    ({"attack_bn_mode": "frozen"}, "attack_bn_mode"), ({"callbacks": [object()]}, "on_epoch_end"),
])
def test_bad_configuration_raises_at_fit(small, kwargs, match):
    with pytest.raises((ValueError, TypeError), match=match):
        _fit(small, **kwargs)


def test_labels_that_disagree_with_the_head_raise(small):
    x, y, xv, yv = small
    with pytest.raises(ValueError, match=r"labels must lie in 0\.\.2 \(the model's head has 3 outputs\)"):
        AdversarialTrainer(DigitsMLP(3, hidden=8), epochs=1).fit(x, y, xv, yv)
    with pytest.raises(ValueError, match=r"\[0, 1\]"):
        AdversarialTrainer(DigitsMLP(hidden=8), epochs=1).fit(x * 3, y, xv, yv)
    with pytest.raises(Exception, match="not fitted"):
        AdversarialTrainer(DigitsMLP(hidden=8)).best_model()
