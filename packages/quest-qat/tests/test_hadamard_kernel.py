"""The Hadamard butterfly (torch and Triton) and the backend dispatcher of ``quest._kernels``."""

import math

import numpy as np
import pytest
import scipy.linalg
import torch

from quest._kernels import Kernel, hadamard_reference, hadamard_transform, triton_interpret, use_backend

SIZES = [2, 64, 128, 1024]


def dense(x: torch.Tensor, normalize: bool) -> torch.Tensor:
    n = x.shape[-1]
    H = torch.tensor(scipy.linalg.hadamard(n), dtype=x.dtype)
    return (x @ H.T) / (math.sqrt(n) if normalize else 1.0)


@pytest.mark.parametrize("n", SIZES)
@pytest.mark.parametrize("normalize", [True, False])
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_torch_path_equals_scipy_hadamard(n, normalize, dtype):
    x = torch.randn(5, n, dtype=dtype, generator=torch.Generator().manual_seed(n))
    out = hadamard_transform(x, normalize=normalize, backend="torch")
    rtol = 1e-5 if dtype == torch.float32 else 1e-12
    torch.testing.assert_close(out, dense(x, normalize), rtol=rtol, atol=rtol * math.sqrt(n))
    assert out.dtype == dtype and out.shape == x.shape


def test_batch_dimensions_and_involution():
    x = torch.randn(2, 3, 4, 256, dtype=torch.float64)
    y = hadamard_transform(x)
    assert y.shape == x.shape
    torch.testing.assert_close(hadamard_transform(y), x)  # orthonormal and symmetric: its own inverse
    torch.testing.assert_close(y.norm(dim=-1), x.norm(dim=-1))


def test_non_contiguous_input():
    x = torch.randn(64, 32).T  # last dim 64, stride != 1
    torch.testing.assert_close(hadamard_transform(x, backend="torch"), dense(x.contiguous(), True), rtol=1e-5,
                               atol=1e-5)


def test_bad_inputs():
    with pytest.raises(ValueError, match="power of two"):
        hadamard_transform(torch.randn(3, 12))
    with pytest.raises(TypeError, match="floating-point"):
        hadamard_transform(torch.ones(4, dtype=torch.int64))
    with pytest.raises(TypeError, match="torch.Tensor"):
        hadamard_transform(np.ones(4))
    with pytest.raises(ValueError, match="backend must be one of"):
        hadamard_transform(torch.randn(4), backend="cuda")


def test_dispatcher_uses_reference_without_triton_runtime(monkeypatch):
    calls = []
    kernel = Kernel("probe", reference=lambda x: calls.append("torch") or x,
                    triton=lambda x: calls.append("triton") or x)
    monkeypatch.delenv("QUEST_KERNEL_BACKEND", raising=False)
    with use_backend("torch"):
        kernel(torch.ones(2))
    assert calls == ["torch"]
    monkeypatch.setenv("QUEST_KERNEL_BACKEND", "torch")
    kernel(torch.ones(2))
    assert calls == ["torch", "torch"]
    monkeypatch.setenv("QUEST_KERNEL_BACKEND", "bogus")
    with pytest.raises(ValueError, match="QUEST_KERNEL_BACKEND"):
        kernel(torch.ones(2))


def test_forcing_triton_without_an_implementation_fails_clearly():
    kernel = Kernel("reference-only", reference=lambda x: x)
    with use_backend("triton"), pytest.raises(RuntimeError, match="forced onto triton"):
        kernel(torch.ones(2))
    assert kernel.backend_for(torch.ones(2)) == "torch"


def test_torch_butterfly_does_n_log_n_work():
    # Count the elements produced by additions/subtractions/matmuls: log2(n) stages of n each, no n^2 matmul.
    from torch.utils._python_dispatch import TorchDispatchMode

    class Count(TorchDispatchMode):
        def __init__(self):
            super().__init__()
            self.elements = 0
            self.matmuls = 0

        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            out = func(*args, **(kwargs or {}))
            name = func.overloadpacket.__name__
            if name in ("add", "sub"):
                self.elements += out.numel()
            if name in ("mm", "bmm", "matmul", "addmm"):
                self.matmuls += 1
            return out

    for n in (256, 4096):
        with Count() as count:
            hadamard_reference(torch.randn(1, n), normalize=False)
        assert count.matmuls == 0
        assert count.elements == n * int(math.log2(n))


@pytest.mark.triton
@pytest.mark.parametrize("n", SIZES)
@pytest.mark.parametrize("normalize", [True, False])
def test_triton_interpreter_equals_scipy_hadamard(n, normalize):
    assert triton_interpret(), "run the triton-marked tests with TRITON_INTERPRET=1"
    x = torch.randn(4, n, generator=torch.Generator().manual_seed(n))
    out = hadamard_transform(x, normalize=normalize, backend="triton")
    torch.testing.assert_close(out, dense(x, normalize), rtol=1e-5, atol=1e-5 * math.sqrt(n))


@pytest.mark.triton
def test_triton_auto_dispatch_and_float16():
    x = torch.randn(3, 2, 128)
    with use_backend(None):
        from quest._kernels.hadamard import hadamard_kernel

        assert hadamard_kernel.backend_for(x) == "triton"
        assert hadamard_kernel.backend_for(x.double()) == "torch"  # the interpreter handles fp32/fp16 only
    torch.testing.assert_close(hadamard_transform(x), dense(x, True), rtol=1e-5, atol=1e-4)
    half = hadamard_transform(x.half(), backend="triton")
    assert half.dtype == torch.float16
    torch.testing.assert_close(half.float(), dense(x, True), rtol=1e-2, atol=1e-2)


def test_use_backend_is_a_nestable_process_wide_flag():
    from quest._kernels import dispatch, selected_backend

    assert dispatch._forced is None
    with use_backend("torch"):
        assert selected_backend() == "torch"
        with use_backend(None):
            assert dispatch._forced is None
        assert selected_backend() == "torch"
    assert dispatch._forced is None
    with pytest.raises(RuntimeError), use_backend("torch"):
        raise RuntimeError("restored on error too")
    assert dispatch._forced is None


def test_torch_compile_traces_a_kernel_call_without_graph_break():
    # the override is a plain module flag: dynamo guards on it instead of breaking the graph
    import torch._dynamo

    def f(x):
        return hadamard_transform(x * 2.0).sin()

    torch._dynamo.reset()
    x = torch.randn(3, 64)
    explained = torch._dynamo.explain(f)(x)
    assert explained.graph_break_count == 0 and explained.graph_count == 1
    compiled = torch.compile(f, backend="eager", fullgraph=True)
    torch.testing.assert_close(compiled(x), f(x))
    with use_backend("torch"):  # changing the flag recompiles and still runs
        torch.testing.assert_close(compiled(x), f(x))
