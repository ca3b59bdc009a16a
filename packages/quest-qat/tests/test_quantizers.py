"""Acceptance 2: quantizer semantics (grid, formulas, Hadamard, trust backward) and the baselines."""

import math

import pytest
import torch
from scipy.stats import norm

from quest import (
    ClipSTEQuantizer,
    LSQQuantizer,
    PACTQuantizer,
    STEQuantizer,
    TrustQuantizer,
    block_hadamard,
    gaussian_mse,
    grid_spec,
    hadamard_matrix,
)
from quest.kernels import dequantize_int4, find_scale, quantize_int4
from quest.quantizers import grid_quantize, rms_step


def gaussian(rows, cols, seed=0, dtype=torch.float32):
    return torch.randn(rows, cols, generator=torch.Generator().manual_seed(seed), dtype=dtype)


@pytest.mark.parametrize("bits", [1, "ternary", 2, 3, 4, 8])
def test_at_most_2_to_the_b_values_per_row(bits):
    x = gaussian(64, 512, seed=1) * torch.linspace(0.1, 10, 64)[:, None]
    xq = TrustQuantizer(bits)(x)
    levels = grid_spec(bits).levels
    counts = [row.unique().numel() for row in xq]
    assert max(counts) <= levels
    assert max(counts) == levels or levels == 256  # 512 Gaussian samples do not fill 256 levels


@pytest.mark.parametrize("bits", [1, 2, 3, 4, 8])
def test_grid_values_and_clip(bits):
    spec = grid_spec(bits)
    x = gaussian(32, 256, seed=2, dtype=torch.float64)
    xq = TrustQuantizer(bits)(x)
    sigma = x.pow(2).mean(-1, keepdim=True).sqrt()
    step = 2 * spec.alpha * sigma / (spec.levels - 1)
    idx = xq / step - 0.5
    assert torch.allclose(idx, idx.round(), atol=1e-6)
    assert xq.abs().max() <= (spec.alpha * sigma).max() * (1 + 1e-6)
    assert ((xq - x).abs() <= step / 2 + 1e-9).logical_or(x.abs() > spec.alpha * sigma).all()


def test_paper_training_formula_equals_kernel_formula_bit_for_bit():
    x = gaussian(2048, 512, seed=3) * 3.0
    spec = grid_spec(4)
    step = find_scale(x, bits=4, backend="torch")
    s = (step * 7.5).unsqueeze(-1)
    d = step.unsqueeze(-1)
    paper = (torch.round(torch.clamp(x, -s, s) / d + 0.5) - 0.5) * d  # round(clip/D + 1/2) D - D/2
    kernel = (torch.clamp(torch.floor(x / d), -8, 7) + 0.5) * d
    ours = TrustQuantizer(4)(x)
    packed = dequantize_int4(quantize_int4(x, step, backend="torch"), step)
    assert paper.dtype == torch.float32
    assert torch.equal(paper, kernel) and torch.equal(ours, kernel) and torch.equal(packed, kernel)
    assert torch.equal(rms_step(x, spec), step)


def test_hadamard_is_orthogonal_and_block_diagonal():
    h = hadamard_matrix(128)
    assert torch.allclose(h @ h.T, torch.eye(128, dtype=torch.float64), atol=1e-12)
    x = gaussian(5, 384, seed=4, dtype=torch.float64)
    full = torch.block_diag(h, h, h)
    assert torch.allclose(block_hadamard(x, 128), x @ full, atol=1e-12)
    assert torch.allclose(block_hadamard(block_hadamard(x, 128), 128), x, atol=1e-12)


def test_hadamard_backward_is_the_transpose():
    x = gaussian(3, 256, seed=5, dtype=torch.float64).requires_grad_()
    assert torch.autograd.gradcheck(lambda t: block_hadamard(t, 64), (x,))


def test_half_hadamard_product_at_8_bits_is_close_to_exact():
    # two independent operand errors of relative MSE m each give a product error of sqrt(2 m)
    x, w = gaussian(64, 256, seed=6), gaussian(96, 256, seed=7)
    q = TrustQuantizer(8)
    approx = q(block_hadamard(x, 128)) @ q(block_hadamard(w, 128)).T
    exact = x @ w.T
    rel = float((approx - exact).norm() / exact.norm())
    expected = math.sqrt(2 * gaussian_mse(grid_spec(8).alpha, 256))
    assert rel < 1.5e-2 and abs(rel - expected) < 0.15 * expected


def test_hadamard_reduces_error_on_outlier_activations():
    # a few outlier channels (as in LLM activations) blow up the RMS grid; the rotation spreads them
    x = gaussian(256, 256, seed=16)
    x[:, :4] *= 30.0
    q = TrustQuantizer(4)
    plain = (q(x) - x).pow(2).mean() / x.pow(2).mean()
    rotated = (block_hadamard(q(block_hadamard(x, 128)), 128) - x).pow(2).mean() / x.pow(2).mean()
    assert rotated < 0.5 * plain
    assert abs(float(rotated) - gaussian_mse(grid_spec(4).alpha, 16)) < 0.004


def test_trust_backward_passes_exactly_the_mask():
    x = (gaussian(16, 256, seed=8) * 2).requires_grad_()
    quant = TrustQuantizer(4)
    out = quant(x)
    g = gaussian(16, 256, seed=9)
    out.backward(g)
    spec = grid_spec(4)
    xd = x.detach()
    sigma = xd.pow(2).mean(-1, keepdim=True).sqrt()
    mask = ((out.detach() - xd).abs() <= spec.default_trust * sigma).float()
    assert torch.equal(x.grad, g * mask)
    assert 0 < (1 - mask.mean()) < 0.05


def test_masked_fraction_on_gaussian_at_4_bits():
    x = gaussian(2000, 1024, seed=10)
    quant = TrustQuantizer(4)
    quant(x)
    frac = float(quant.masked_fraction_)
    assert abs(frac - 0.0077) < 0.001
    # infinite-row limit: |x| > (alpha + step/2) sigma
    spec = grid_spec(4)
    assert abs(frac - 2 * norm.sf(spec.alpha + spec.default_trust)) < 3e-4


def test_trust_infinity_is_ste_and_half_step_is_clip_ste():
    x = (gaussian(8, 128, seed=11) * 3).requires_grad_()
    g = gaussian(8, 128, seed=12)
    TrustQuantizer(4, trust=math.inf)(x).backward(g)
    grad_trust_inf = x.grad.clone()
    x.grad = None
    STEQuantizer(4)(x).backward(g)
    assert torch.equal(grad_trust_inf, x.grad)
    spec = grid_spec(4)
    x.grad = None
    TrustQuantizer(4)(x).backward(g)
    trust_grad = x.grad.clone()
    x.grad = None
    # clip value s + step/2 in sigma units = alpha (1 + 1/15)
    ClipSTEQuantizer(4, clip_scale=1 + 1 / (spec.levels - 1))(x).backward(g)
    assert torch.equal(trust_grad, x.grad)


def test_ste_forward_equals_trust_forward():
    x = gaussian(8, 128, seed=13)
    assert torch.equal(STEQuantizer(3)(x), TrustQuantizer(3)(x))
    assert torch.equal(ClipSTEQuantizer(3)(x), TrustQuantizer(3)(x))


def test_lsq_init_forward_and_step_gradient():
    x = gaussian(4, 128, seed=14)
    lsq = LSQQuantizer(4, rows=4)
    out = lsq(x)
    spec = grid_spec(4)
    step = rms_step(x, spec)
    assert torch.allclose(lsq.value.detach(), step, rtol=1e-5)
    assert torch.allclose(out, grid_quantize(x, step, spec), atol=1e-5)
    out.sum().backward()
    # LSQ gradient: sum over the row of (q + 1/2 - x/step) inside the grid, the end code +-7.5 outside,
    # times the gradient scale 1/sqrt(numel_per_step * q_max)
    v = x / step[:, None]
    code = torch.clamp(torch.floor(v), -8, 7) + 0.5
    inside = (v >= -7.5) & (v <= 7.5)
    expected = (code - torch.where(inside, v, torch.zeros_like(v))).sum(-1) / math.sqrt(128 * 7)
    assert (~inside).any()
    assert torch.allclose(lsq.value.grad, expected, atol=1e-4)


def test_pact_clip_gradient_counts_outliers():
    x = gaussian(1, 4096, seed=15)
    pact = PACTQuantizer(2, rows=1)
    pact(x).sum().backward()
    clip = pact.value.detach()
    assert clip.item() == pytest.approx(grid_spec(2).alpha * x.pow(2).mean().sqrt().item(), rel=1e-5)
    expected = float((x > clip).sum() - (x < -clip).sum())
    assert pact.value.grad.item() == pytest.approx(expected)


def test_quantizer_rejects_bad_inputs():
    with pytest.raises(TypeError, match="floating-point"):
        TrustQuantizer(4)(torch.ones(3, 4, dtype=torch.int64))
    with pytest.raises(ValueError, match="trust must be"):
        TrustQuantizer(4, trust=-1.0)
    with pytest.raises(ValueError, match="per-row values"):
        LSQQuantizer(4, rows=3)(gaussian(4, 8))
