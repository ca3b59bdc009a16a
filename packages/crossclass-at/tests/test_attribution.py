"""The attribution matrix, its correlation matrix and CAS: defining identities and a brute-force loop."""

import numpy as np
import pytest
import torch
from torch import nn

from crossclass_at import PGD, DigitsCNN, DigitsMLP, cas, class_attribution, correlation_matrix, find_head


def test_identical_attributions_give_all_ones_and_cas_k_times_k_minus_one():
    a = np.tile(np.random.default_rng(0).random(7) + 0.1, (5, 1)) * np.arange(1, 6)[:, None]  # same directions
    c = correlation_matrix(a)
    assert np.allclose(c, 1.0, atol=1e-12)
    assert cas(c) == pytest.approx(5 * 4, abs=1e-10)


def test_disjoint_supports_give_identity_and_cas_zero():
    a = np.zeros((4, 12))
    for i in range(4):
        a[i, 3 * i:3 * i + 3] = np.random.default_rng(i).random(3) + 0.5
    c = correlation_matrix(a)
    assert np.array_equal(c, np.eye(4))
    assert cas(c) == 0.0


def test_negative_cosines_are_clamped():
    a = np.array([[1.0, 0.0], [-1.0, 0.0], [1.0, 1.0]])
    c = correlation_matrix(a)
    assert c[0, 1] == pytest.approx(-1.0)
    # only the positive pairs count: (0, 2), (2, 0) at 1/sqrt(2); (1, 2) is negative
    assert cas(c) == pytest.approx(2 / np.sqrt(2))


def test_correlation_is_symmetric_with_unit_diagonal_and_equals_the_cosine_loop():
    a = np.random.default_rng(3).normal(size=(6, 9))
    c = correlation_matrix(a)
    assert np.array_equal(c, c.T) and np.array_equal(np.diag(c), np.ones(6))
    for i in range(6):
        for j in range(6):
            cos = a[i] @ a[j] / np.linalg.norm(a[i]) / np.linalg.norm(a[j])
            assert c[i, j] == pytest.approx(cos, abs=1e-12)
    assert cas(c) == pytest.approx(sum(max(c[i, j], 0) for i in range(6) for j in range(6) if i != j), abs=1e-12)


@pytest.mark.parametrize("on", ["clean", "adv"])
def test_attribution_equals_a_per_sample_loop_with_the_own_class_row(on):
    torch.manual_seed(0)
    model = DigitsMLP(4, hidden=16)
    x, y = torch.rand(22, 1, 8, 8), torch.arange(22) % 4
    attack = PGD(eps=0.1, steps=3)
    a = class_attribution(model, x, y, on=on, attack=attack, batch_size=8,
                          generator=torch.Generator().manual_seed(1))
    # brute force: the same adversarial examples (same generator, same batches), one sample at a time
    gen = torch.Generator().manual_seed(1)
    xs = [attack(model, x[s:s + 8], y[s:s + 8], generator=gen) if on == "adv" else x[s:s + 8] for s in range(0, 22, 8)]
    xs = torch.cat(xs)
    w = model.fc.weight.detach().double()
    expected = np.zeros((4, 16))
    for k in range(4):
        rows = [(model.features(xs[n:n + 1])[0].detach().double() * w[k]).numpy()
                for n in range(22) if int(y[n]) == k]
        expected[k] = np.mean(rows, axis=0)
    assert np.allclose(a, expected, rtol=1e-6, atol=1e-9)
    # the own-class row: using another class's row would give a different matrix
    assert not np.allclose(a[0], expected[0] / w[0].numpy() * w[1].numpy())


def test_attribution_on_a_cnn_with_batchnorm_reads_the_pooled_features():
    torch.manual_seed(0)
    model = DigitsCNN(3, width=8).train()
    x, y = torch.rand(9, 1, 8, 8), torch.arange(9) % 3
    a = class_attribution(model, x, y, on="clean")
    model.eval()
    g = model.features(x).detach().double()
    expected = np.stack([(g[y == k].mean(0) * model.fc.weight[k].detach().double()).numpy() for k in range(3)])
    assert np.allclose(a, expected, atol=1e-9)
    assert model.fc.weight.grad is None


def test_head_errors_name_the_module():
    model = nn.Sequential(nn.Flatten(), nn.Linear(64, 8), nn.ReLU(), nn.Linear(8, 3))
    assert find_head(model) is model[3]
    with pytest.raises(TypeError, match=r"module '2' is a ReLU"):
        find_head(model, "2")
    with pytest.raises(ValueError, match="no module named 'head'"):
        find_head(model, "head")
    with pytest.raises(ValueError, match="no nn.Linear"):
        find_head(nn.Sequential(nn.Flatten()))


def test_label_and_class_errors():
    torch.manual_seed(0)
    model = DigitsMLP(3, hidden=4)
    x = torch.rand(6, 1, 8, 8)
    with pytest.raises(ValueError, match=r"labels must lie in 0\.\.2 \(the head has 3 classes\)"):
        class_attribution(model, x, torch.tensor([0, 1, 2, 3, 0, 1]), on="clean")
    with pytest.raises(ValueError, match="class 2 has no samples"):
        class_attribution(model, x, torch.tensor([0, 1, 0, 1, 0, 1]), on="clean")
    with pytest.raises(ValueError, match=r"\[0, 1\]"):
        class_attribution(model, x + 1.0, torch.tensor([0, 1, 2, 0, 1, 2]), on="clean")
    with pytest.raises(ValueError, match="all-zero"):
        correlation_matrix(np.array([[1.0, 2.0], [0.0, 0.0]]))


def test_cas_refuses_matrices_that_are_not_cosine_matrices():
    c = correlation_matrix(np.random.default_rng(5).normal(size=(4, 6)))
    a_square = np.random.default_rng(6).random((4, 4)) + 0.1  # an attribution with n == K passed for C
    with pytest.raises(ValueError, match=r"unit diagonal.*C\[\d, \d\] = .*pass correlation_matrix\(A\)"):
        cas(a_square)
    with pytest.raises(ValueError, match="unit diagonal"):
        cas(np.cov(np.random.default_rng(7).normal(size=(4, 30))))
    skew = c.copy()
    skew[0, 1] += 0.2
    with pytest.raises(ValueError, match=r"symmetric, but C\[0, 1\]"):
        cas(skew)
    out = np.full((3, 3), 1.5)
    np.fill_diagonal(out, 1.0)
    with pytest.raises(ValueError, match=r"cosines in \[-1, 1\]"):
        cas(out)
    nan = c.copy()
    nan[1, 2] = nan[2, 1] = np.nan
    with pytest.raises(ValueError, match="NaN"):
        cas(nan)
    with pytest.raises(ValueError, match="square"):
        cas(np.ones((2, 3)))
    # within the tolerance, float round-off is accepted
    assert cas(c + 1e-9 * np.eye(4)) == pytest.approx(cas(c))


def test_cas_accepts_a_float32_cosine_matrix_and_checks_its_tolerance():
    # cosines computed in float32 over long attribution vectors carry ~3e-6 of round-off on the diagonal;
    # such a valid matrix used to be refused as "not a unit diagonal"
    g = torch.Generator().manual_seed(0)
    a = torch.randn(30, 100_000, generator=g) * torch.rand(30, 1, generator=g) * 10 + torch.randn(1, 100_000, generator=g)
    u = torch.nn.functional.normalize(a, dim=1)
    c32 = (u @ u.T).numpy()
    assert c32.dtype == np.float32 and np.abs(np.diag(c32) - 1).max() > 1e-6
    assert cas(c32) == pytest.approx(cas(correlation_matrix(a.double().numpy())), abs=1e-3)
    for bad in (-1.0, float("nan"), float("inf")):
        with pytest.raises(ValueError, match="atol"):
            cas(c32, atol=bad)
    with pytest.raises(ValueError, match="unit diagonal"):  # a tighter tolerance still catches the round-off
        cas(c32, atol=1e-7)


@pytest.mark.parametrize("scale", [1e200, 1e160, 1e-200, 1e-300])
def test_correlation_matrix_does_not_depend_on_the_scale_of_the_attribution(scale):
    # row norms overflowed to inf above ~1e154 (every cosine read 0, CAS 0) and underflowed to 0 below
    # ~1e-154 (refused as an all-zero attribution)
    a = np.random.default_rng(0).normal(size=(4, 50))
    scaled = a * scale
    with np.errstate(over="raise", invalid="raise", divide="raise"):
        c = correlation_matrix(scaled)
    assert np.allclose(c, correlation_matrix(a), atol=1e-12) and cas(c) == pytest.approx(cas(correlation_matrix(a)))
