"""Acceptance 3: INT4 kernels; torch references against brute force, Triton against the references."""

import pytest
import torch

from quest.grids import grid_spec
from quest.kernels import (
    GEMM_BLOCKS,
    dequant_epilogue,
    dequantize_int4,
    find_scale,
    int4_gemm,
    int4_matmul,
    int_matmul,
    quantize_int4,
    unpack_int4,
)


def rows(m, k, seed, scale=1.0):
    g = torch.Generator().manual_seed(seed)
    return torch.randn(m, k, generator=g) * torch.logspace(-2, 2, m)[:, None] * scale


def test_find_scale_formula():
    x = rows(33, 256, 0)
    alpha = grid_spec(4).alpha
    expected = x.double().pow(2).mean(-1).sqrt() * (2 * alpha / 15) + 2e-8 / 15
    assert torch.allclose(find_scale(x, backend="torch").double(), expected, rtol=1e-6)
    assert find_scale(torch.zeros(2, 8), backend="torch").gt(0).all()


def test_pack_unpack_roundtrip_and_layout():
    x = rows(17, 64, 1)
    step = find_scale(x, backend="torch")
    codes = quantize_int4(x, step, backend="torch")
    q = torch.clamp(torch.floor(x / step[:, None]), -8, 7).to(torch.int8)
    assert torch.equal(unpack_int4(codes.packed), q)
    assert codes.packed.dtype == torch.uint8 and codes.packed.shape == (17, 32)
    b = codes.packed.to(torch.int32)
    assert torch.equal(b & 0xF, q[:, 0::2].to(torch.int32) & 0xF)  # element 2j in the low nibble
    assert torch.equal(b >> 4, q[:, 1::2].to(torch.int32) & 0xF)
    assert torch.equal(codes.row_sum, q.sum(-1, dtype=torch.int32))
    assert q.min() == -8 and q.max() == 7


def test_integer_gemm_and_epilogue_equal_dequantised_product():
    a, w = rows(40, 512, 2), rows(24, 512, 3)
    sa, sw = find_scale(a, backend="torch"), find_scale(w, backend="torch")
    ca, cw = quantize_int4(a, sa, backend="torch"), quantize_int4(w, sw, backend="torch")
    acc = int_matmul(unpack_int4(ca.packed), unpack_int4(cw.packed))
    assert acc.dtype == torch.int32
    assert torch.equal(acc.double(), unpack_int4(ca.packed).double() @ unpack_int4(cw.packed).double().T)
    out = dequant_epilogue(acc, ca.row_sum, cw.row_sum, sa, sw, 512, backend="torch")
    ref = dequantize_int4(ca, sa).double() @ dequantize_int4(cw, sw).double().T
    assert torch.allclose(out.double(), ref, rtol=1e-5, atol=1e-6 * ref.abs().max().item())


def test_kernel_input_validation():
    with pytest.raises(ValueError, match="K must be even"):
        quantize_int4(torch.ones(2, 3), torch.ones(2))
    with pytest.raises(ValueError, match="one per row"):
        quantize_int4(torch.ones(2, 4), torch.ones(3))
    with pytest.raises(ValueError, match="2-D"):
        find_scale(torch.ones(4))
    with pytest.raises(ValueError, match="same K"):
        int_matmul(torch.ones(2, 4, dtype=torch.int8), torch.ones(2, 6, dtype=torch.int8))


@pytest.mark.triton
@pytest.mark.parametrize("shape", [(37, 256), (5, 1030), (1, 2)])
def test_triton_kernels_equal_torch_reference(shape):
    from quest._kernels import triton_available

    if not triton_available("cpu"):
        pytest.skip("set TRITON_INTERPRET=1 (before import) to run Triton on CPU")
    x = rows(*shape, seed=4)
    s_torch, s_triton = find_scale(x, backend="torch"), find_scale(x, backend="triton")
    assert torch.allclose(s_triton, s_torch, rtol=1e-6, atol=0)
    c_torch, c_triton = quantize_int4(x, s_torch, backend="torch"), quantize_int4(x, s_torch, backend="triton")
    assert torch.equal(c_triton.packed, c_torch.packed)
    assert torch.equal(c_triton.row_sum, c_torch.row_sum)
    w = rows(48, shape[1], seed=5)
    sw = find_scale(w, backend="torch")
    cw = quantize_int4(w, sw, backend="torch")
    acc = int_matmul(unpack_int4(c_torch.packed), unpack_int4(cw.packed))
    e_torch = dequant_epilogue(acc, c_torch.row_sum, cw.row_sum, s_torch, sw, shape[1], backend="torch")
    e_triton = dequant_epilogue(acc, c_torch.row_sum, cw.row_sum, s_torch, sw, shape[1], backend="triton")
    assert torch.allclose(e_triton, e_torch, rtol=1e-5, atol=0)


@pytest.mark.triton
def test_int4_linear_on_triton_equals_torch_backend():
    from quest import QuestConfig, convert_, quantize_
    from quest._kernels import triton_available, use_backend

    if not triton_available("cpu"):
        pytest.skip("set TRITON_INTERPRET=1 (before import) to run Triton on CPU")
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(128, 256), torch.nn.ReLU(), torch.nn.Linear(256, 64))
    quantize_(model, QuestConfig())
    convert_(model)
    x = torch.randn(6, 128)
    with torch.no_grad(), use_backend("torch"):
        ref = model(x)
    with torch.no_grad(), use_backend("triton"):
        out = model(x)
    # the GEMM and its epilogue are bit-identical across backends; Triton's find_scale sums in another order
    assert torch.allclose(out, ref, rtol=1e-5, atol=1e-6 * ref.abs().max().item())


def packed_pair(m, n, k, seed):
    a, w = rows(m, k, seed), rows(n, k, seed + 1)
    sa, sw = find_scale(a, backend="torch"), find_scale(w, backend="torch")
    return quantize_int4(a, sa, backend="torch"), sa, quantize_int4(w, sw, backend="torch"), sw


def test_int4_gemm_reference_equals_unpacked_gemm_and_epilogue():
    ca, sa, cw, sw = packed_pair(9, 12, 70, 6)
    qa, qw = unpack_int4(ca.packed).long(), unpack_int4(cw.packed).long()
    assert torch.equal(int4_matmul(ca.packed, cw.packed, backend="torch").long(), qa @ qw.T)  # brute force
    acc = int_matmul(unpack_int4(ca.packed), unpack_int4(cw.packed))
    fused = int4_gemm(ca, sa, cw, sw, backend="torch")
    assert torch.equal(fused, dequant_epilogue(acc, ca.row_sum, cw.row_sum, sa, sw, 70, backend="torch"))
    with pytest.raises(ValueError, match="same number of bytes"):
        int4_matmul(ca.packed, cw.packed[:, :-1])
    with pytest.raises(ValueError, match="uint8"):
        int4_matmul(ca.packed.int(), cw.packed)


# M, N, K: a single code pair, non-multiples of the 32 x 32 x 32-byte tiles in every dimension, one exact tile
GEMM_SHAPES = [(1, 1, 2), (7, 33, 130), (32, 32, 64), (45, 70, 300), (33, 17, 66), (64, 40, 192)]


@pytest.mark.triton
@pytest.mark.parametrize("m,n,k", GEMM_SHAPES)
def test_triton_int4_gemm_equals_torch_reference_exactly(m, n, k):
    from quest._kernels import triton_available

    if not triton_available("cpu"):
        pytest.skip("set TRITON_INTERPRET=1 (before import) to run Triton on CPU")
    assert GEMM_BLOCKS == (32, 32, 32)
    ca, sa, cw, sw = packed_pair(m, n, k, m + n)
    acc_torch = int4_matmul(ca.packed, cw.packed, backend="torch")
    acc_triton = int4_matmul(ca.packed, cw.packed, backend="triton")
    assert acc_triton.dtype == torch.int32 and torch.equal(acc_triton, acc_torch)  # exact integers
    out_torch = int4_gemm(ca, sa, cw, sw, backend="torch")
    out_triton = int4_gemm(ca, sa, cw, sw, backend="triton")
    assert out_triton.dtype == torch.float32 and torch.equal(out_triton, out_torch)  # same float64 epilogue


@pytest.mark.triton
def test_int4_gemm_benchmark_runs_interpreted(tmp_path):
    import importlib.util
    from pathlib import Path

    path = Path(__file__).resolve().parents[1] / "benchmarks" / "int4_gemm.py"
    spec = importlib.util.spec_from_file_location("int4_gemm_benchmark", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    result = module.main(["--interpret", "--shapes", "5x34x9", "--out", str(tmp_path / "gemm.json")])
    assert result == {"shapes": [(5, 34, 9)], "bit_exact": True}
    assert (tmp_path / "gemm.json").exists()
