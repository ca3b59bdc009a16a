"""torch.compile traces the quantised and the converted model without graph breaks."""

import pytest
import torch
import torch._dynamo
from torch import nn

from quest import QuestConfig, convert_, quantize_


def two_layer_mlp():
    torch.manual_seed(0)
    return nn.Sequential(nn.Linear(128, 256), nn.ReLU(), nn.Linear(256, 64))


@pytest.fixture(autouse=True)
def _fresh_dynamo():
    torch._dynamo.reset()
    yield
    torch._dynamo.reset()


@pytest.mark.parametrize("mode", ["train", pytest.param("eval", marks=pytest.mark.slow), "converted"])
def test_explain_reports_zero_graph_breaks_and_fullgraph_compiles(mode):
    model = quantize_(two_layer_mlp(), QuestConfig())
    model.train(mode == "train")
    if mode == "converted":
        convert_(model)
    x = torch.randn(8, 128)
    explained = torch._dynamo.explain(model)(x)
    assert explained.graph_break_count == 0, explained.break_reasons
    assert explained.graph_count == 1
    torch._dynamo.reset()
    with torch.no_grad():
        out = torch.compile(model, backend="eager", fullgraph=True)(x)  # raises on any graph break
        assert torch.equal(out, model(x))


@pytest.mark.slow
def test_fullgraph_compile_of_quantised_model_trains_like_eager():
    model = quantize_(two_layer_mlp(), QuestConfig())
    compiled = torch.compile(model, backend="aot_eager", fullgraph=True)
    x = torch.randn(8, 128)
    eager_out = model(x)
    eager_out.square().mean().backward()
    eager_grads = [p.grad.clone() for p in model.parameters()]
    model.zero_grad()
    out = compiled(x)
    out.square().mean().backward()
    assert torch.allclose(out, eager_out, rtol=1e-5, atol=1e-6)
    for a, b in zip(eager_grads, model.parameters(), strict=True):
        assert torch.allclose(b.grad, a, rtol=1e-4, atol=1e-6)


@pytest.mark.slow
def test_fullgraph_aot_compile_of_converted_model_equals_eager():
    model = quantize_(two_layer_mlp(), QuestConfig())
    convert_(model)
    x = torch.randn(8, 128)
    with torch.no_grad():
        ref = model(x)
        out = torch.compile(model, backend="aot_eager", fullgraph=True)(x)
    assert torch.equal(out, ref)
