"""Sparse (2:4, 4:8) QuEST, FP4 and Lloyd-Max grids, W4A16 conversion, separate weight/activation quantizers."""

import numpy as np
import pytest
import torch
from scipy import integrate
from scipy.stats import norm
from torch import nn

from quest import Int4Linear, QuestConfig, QuestLinear, convert_, quantize_
from quest.grids import FP4_E2M1_VALUES, codebook_mse, fp4_codebook, gaussian_mse, grid_spec, lloyd_max_codebook
from quest.hadamard import block_hadamard
from quest.quantizers import LSQQuantizer, TrustQuantizer, nm_mask


def scipy_mse(points):
    """E[(X - Q(X))^2], X ~ N(0, 1), by adaptive quadrature over each Voronoi cell (the reference)."""
    edges = np.concatenate(([-np.inf], (points[1:] + points[:-1]) / 2, [np.inf]))
    return sum(integrate.quad(lambda x, p=p: (x - p) ** 2 * norm.pdf(x), a, b, epsabs=1e-13, epsrel=1e-12)[0]
               for p, a, b in zip(points, edges[:-1], edges[1:], strict=True))


# Max (1960), Table I: the positive Lloyd-Max output levels for a unit Gaussian
MAX_1960 = {2: [0.4528, 1.510], 3: [0.2451, 0.7560, 1.344, 2.152],
            4: [0.1284, 0.3881, 0.6568, 0.9424, 1.256, 1.618, 2.069, 2.733]}


@pytest.mark.parametrize("bits", [2, 3, 4])
def test_lloyd_max_grid_is_the_gaussian_optimum(bits):
    book = lloyd_max_codebook(bits)
    points = book.points()
    assert book.levels == 2**bits and np.allclose(points, -points[::-1])
    assert np.allclose(points[2 ** (bits - 1):], MAX_1960[bits], atol=6e-4)
    mse = codebook_mse(points)
    assert abs(mse - scipy_mse(points)) < 1e-10  # closed form == quadrature
    assert mse < gaussian_mse(grid_spec(bits).alpha, 2**bits)  # beats the uniform grid
    # centroid condition: every point is the mean of its cell (Lloyd's fixed point)
    edges = np.concatenate(([-np.inf], (points[1:] + points[:-1]) / 2, [np.inf]))
    means = [integrate.quad(lambda x: x * norm.pdf(x), a, b)[0] / (norm.cdf(b) - norm.cdf(a))
             for a, b in zip(edges[:-1], edges[1:], strict=True)]
    assert np.allclose(means, points, atol=1e-9)


def test_fp4_grid_values_and_mse():
    book = fp4_codebook()
    points = book.points()
    scale = points[-1] / 6
    assert abs(scale - 0.48708) < 1e-4  # the official FP4 scale
    assert np.allclose(np.sort(np.abs(points))[::2][:8] / scale, FP4_E2M1_VALUES)
    assert book.levels == 15 and 0.0 in points
    mse = codebook_mse(points)
    assert abs(mse - scipy_mse(points)) < 1e-10 and abs(mse - 0.01268) < 1e-5
    for c in (scale * 0.98, scale * 1.02):  # a minimum over the scale
        pos = np.asarray(FP4_E2M1_VALUES[1:]) * c
        assert codebook_mse(np.concatenate((-pos[::-1], [0.0], pos))) > mse


@pytest.mark.parametrize("grid", ["fp4", "lloyd_max"])
def test_codebook_quantizer_maps_to_the_nearest_scaled_point(grid):
    q = TrustQuantizer(4, grid=grid)
    x = torch.randn(16, 256, generator=torch.Generator().manual_seed(0)) * 3
    xq = q(x)
    sigma = x.pow(2).mean(-1, keepdim=True).sqrt()
    grid_points = torch.tensor(q.spec.values, dtype=torch.float32) * sigma[..., None]  # (16, 1, P)
    nearest = grid_points.squeeze(1).gather(-1, (x[..., None] - grid_points).abs().argmin(-1))
    assert torch.allclose(xq, nearest, rtol=1e-6, atol=1e-6)
    x.requires_grad_()
    q(x).sum().backward()
    expected = ((xq - x.detach()).abs() <= q.spec.default_trust * sigma).float()
    assert torch.equal(x.grad, expected)  # trust mask: half the largest gap


@pytest.mark.parametrize("pattern,n,m", [("2:4", 2, 4), ("4:8", 4, 8)])
def test_sparse_quest_keeps_the_largest_n_of_m_after_rotation(pattern, n, m):
    torch.manual_seed(1)
    lin = nn.Linear(256, 32)
    layer = QuestLinear.from_linear(lin, QuestConfig(weight_sparsity=pattern))
    rotated = block_hadamard(lin.weight.detach(), 128)
    wq = layer.quantized_weight()
    groups_q = wq.detach().reshape(32, -1, m)
    assert torch.equal((groups_q != 0).sum(-1), torch.full((32, 256 // m), n))  # exactly n kept per group
    ranks = rotated.abs().reshape(32, -1, m).argsort(-1, descending=True).argsort(-1)  # 0 = largest
    assert torch.equal(groups_q != 0, ranks < n)  # the kept ones are the n largest |W H|
    assert torch.equal(nm_mask(rotated, n, m).reshape(32, -1, m), ranks < n)
    # kept entries sit on the 4-bit grid fitted to the kept entries' RMS
    kept = rotated * (groups_q != 0).reshape(32, 256)
    rms = (kept.pow(2).sum(-1) / (256 * n / m)).sqrt()
    step = 2 * (grid_spec(4).alpha * rms + 1e-8) / 15
    codes = wq.detach() / step[:, None] - 0.5
    kept_codes = codes[groups_q.reshape(32, 256) != 0]
    assert torch.allclose(kept_codes, kept_codes.round(), atol=1e-4) and kept_codes.abs().max() <= 8
    # gradient: trust on the kept entries, zero on the pruned ones
    w = rotated.clone().requires_grad_()
    layer.weight_quantizer(w).sum().backward()
    sigma = step * 7.5 / grid_spec(4).alpha
    trust = (wq.detach() - rotated).abs() <= grid_spec(4).default_trust * sigma[:, None]
    assert torch.equal(w.grad.bool(), trust & (groups_q.reshape(32, 256) != 0))


def test_sparse_model_trains_and_cannot_be_converted():
    model = nn.Sequential(nn.Linear(128, 64), nn.ReLU(), nn.Linear(64, 8))
    quantize_(model, QuestConfig(weight_sparsity="4:8", block=64))
    model(torch.randn(4, 128)).sum().backward()
    assert model[0].weight.grad.abs().sum() > 0
    with pytest.raises(ValueError, match=r"\(quest W4A4 \+H 4:8\) cannot be converted"):
        convert_(model)


@pytest.mark.parametrize("hadamard", ["half", "full", None])
def test_w4a16_convert_equals_weight_only_fake_quant(hadamard):
    torch.manual_seed(2)
    model = nn.Sequential(nn.Linear(256, 128), nn.GELU(), nn.Linear(128, 64))
    quantize_(model, QuestConfig(weight_bits=4, act_bits=None, hadamard=hadamard))
    x = torch.randn(3, 5, 256)
    with torch.no_grad():
        train_out = model(x)
        fake = model.eval()(x)
    report = convert_(model)
    with torch.no_grad():
        real = model(x)
    assert all(isinstance(model[i], Int4Linear) and model[i].act_bits is None for i in (0, 2))
    assert report.compression < 0.14
    assert torch.equal(real, fake)  # float32, bit for bit
    assert torch.allclose(real, train_out, rtol=1e-5, atol=1e-5)


def test_weight_and_activation_quantizers_are_chosen_separately():
    model = nn.Sequential(nn.Linear(128, 64))
    config = QuestConfig(weight_method="lsq", act_method="quest", act_grid="lloyd_max", act_bits=3)
    quantize_(model, config)
    layer = model[0]
    assert isinstance(layer.weight_quantizer, LSQQuantizer) and isinstance(layer.act_quantizer, TrustQuantizer)
    assert layer.act_quantizer.spec.levels == 8 and layer.act_quantizer.grid == "lloyd_max"
    assert config.label == "lsq/quest W4A3 +H a:lloyd_max"
    model(torch.randn(4, 128)).sum().backward()
    assert layer.weight_quantizer.value.grad is not None
    with pytest.raises(ValueError, match="weight_method 'lsq' learns its scale on the uniform grid"):
        QuestConfig(weight_method="lsq", weight_grid="fp4")
    with pytest.raises(ValueError, match="fp4 grid has 4 bits"):
        QuestConfig(weight_bits=3, weight_grid="fp4")
    with pytest.raises(ValueError, match="sparsity must be None or one of"):
        QuestConfig(weight_sparsity="1:4")


def test_ternary_is_a_three_point_grid_with_zero():
    points = grid_spec("ternary").points()
    assert len(points) == 3 and points[1] == 0 and points[0] == -points[2]
