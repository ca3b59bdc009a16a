"""quantize_ / convert_ (acceptance 4) and bad-input errors (acceptance 7)."""

import math

import pytest
import torch
from torch import nn

from quest import Int4Linear, QuestConfig, QuestLinear, TrustQuantizer, convert_, quantize_
from quest.lm import TinyLlama, TinyLlamaConfig


def mlp(seed=0):
    torch.manual_seed(seed)
    return nn.Sequential(nn.Linear(256, 512), nn.GELU(), nn.Linear(512, 256), nn.GELU(), nn.Linear(256, 128))


def test_quantize_swaps_linears_and_keeps_parameters():
    model = mlp()
    weights = [m.weight for m in model if isinstance(m, nn.Linear)]
    quantize_(model, QuestConfig(weight_bits=3, act_bits=2))
    layers = [m for m in model if isinstance(m, QuestLinear)]
    assert len(layers) == 3
    assert all(a is b.weight for a, b in zip(weights, layers, strict=True))
    assert layers[0].weight_quantizer.bits == 3 and layers[0].act_quantizer.bits == 2


def test_quest_linear_forward_formula():
    torch.manual_seed(1)
    lin = nn.Linear(256, 64)
    ref = nn.Linear(256, 64)
    ref.load_state_dict(lin.state_dict())
    layer = QuestLinear.from_linear(lin, QuestConfig())
    x = torch.randn(3, 7, 256)
    h = torch.block_diag(*[torch.tensor(__import__("scipy").linalg.hadamard(128), dtype=torch.float32)
                           / math.sqrt(128)] * 2)
    q = TrustQuantizer(4)
    expected = q(x @ h) @ q(ref.weight @ h).T + ref.bias
    assert torch.allclose(layer(x), expected, atol=1e-4)


@pytest.mark.parametrize("hadamard", ["half", "full", None])
def test_convert_equals_fake_quant_on_several_layers(hadamard):
    model = mlp(2)
    quantize_(model, QuestConfig(hadamard=hadamard)).eval()
    x = torch.randn(5, 9, 256) * 2
    with torch.no_grad():
        fake = model(x)
    report = convert_(model)
    with torch.no_grad():
        real = model(x)
    assert report.layers == ["0", "2", "4"] and all(isinstance(model[i], Int4Linear) for i in (0, 2, 4))
    # same steps and codes, and both round the exact product once: bit-identical (the acceptance
    # criterion is rtol 1e-5; equality is stronger and holds on CPU)
    assert torch.allclose(real, fake, rtol=1e-5, atol=1e-5 * fake.abs().max().item())
    assert torch.equal(real, fake)
    assert report.compression <= 1 / 7
    for i in (0, 2, 4):
        layer = model[i]
        assert layer.weight_nbytes() <= 4 * layer.in_features * layer.out_features / 7
        assert layer.packed_weight.dtype == torch.uint8


def test_convert_after_training_steps_on_tiny_llama():
    torch.manual_seed(3)
    model = TinyLlama(TinyLlamaConfig(d_model=128, n_layers=2, n_heads=2))
    quantize_(model, QuestConfig())
    opt = torch.optim.AdamW(model.parameters(), lr=1e-2)
    idx = torch.randint(0, 256, (4, 33))
    for _ in range(3):
        loss = nn.functional.cross_entropy(model(idx[:, :-1]).reshape(-1, 256), idx[:, 1:].reshape(-1))
        opt.zero_grad()
        loss.backward()
        opt.step()
    model.eval()
    with torch.no_grad():
        fake = model(idx[:, :-1])
    report = convert_(model)
    with torch.no_grad():
        real = model(idx[:, :-1])
    assert len(report.layers) == 10 and isinstance(model.lm_head, nn.Linear)
    assert torch.equal(real, fake)


def test_training_forward_differs_from_eval_only_by_rounding():
    model = mlp(5)
    quantize_(model, QuestConfig())
    x = torch.randn(4, 256)
    with torch.no_grad():
        train_out = model[0](x)
        model.eval()
        eval_out = model[0](x)
    assert torch.allclose(train_out, eval_out, rtol=1e-5, atol=1e-5)


def test_default_filter_skips_lm_head_and_tied_layers():
    model = TinyLlama(TinyLlamaConfig(d_model=128))
    quantize_(model, QuestConfig())
    assert type(model.lm_head) is nn.Linear
    tied = TinyLlama(TinyLlamaConfig(d_model=128))
    tied.head2 = nn.Linear(128, 256, bias=False)
    tied.head2.weight = tied.wte.weight
    quantize_(tied, QuestConfig())
    assert type(tied.head2) is nn.Linear
    custom = mlp()
    quantize_(custom, QuestConfig(filter_fn=lambda m, name: name == "2"))
    assert [type(m).__name__ for m in custom][::2] == ["Linear", "QuestLinear", "Linear"]


def test_width_not_multiple_of_block_is_rejected_with_layer_name():
    model = nn.Sequential(nn.Linear(128, 96), nn.ReLU(), nn.Linear(96, 10))
    with pytest.raises(ValueError, match=r"'2' \(in_features=96\)"):
        quantize_(model, QuestConfig(block=128))
    quantize_(model, QuestConfig(block=32))  # a smaller power-of-two block fits
    assert isinstance(model[2], QuestLinear)


@pytest.mark.parametrize("field,value,message", [
    ("act_bits", 16, r"act_bits must be None, an int in \[1, 8\]"),
    ("hadamard", "quarter", "hadamard must be None or one of"),
    ("method", "gptq", "method must be one of"),
    ("block", 100, "power of two"),
    ("trust", 0.0, "trust must be"),
])
def test_bad_config_values_name_the_field(field, value, message):
    with pytest.raises(ValueError, match=message):
        quantize_(mlp(), QuestConfig(**{field: value}))


def test_no_matching_layer_is_an_error():
    with pytest.raises(ValueError, match="no nn.Linear layer of Sequential matched"):
        quantize_(nn.Sequential(nn.Conv1d(2, 2, 3)), QuestConfig())
    with pytest.raises(ValueError, match="no QuestLinear layers"):
        convert_(mlp())


def test_convert_rejects_non_w4a4_with_layer_name():
    model = mlp()
    quantize_(model, QuestConfig(weight_bits=2, act_bits=2))
    with pytest.raises(ValueError, match="layer '0'.*W2A2"):
        convert_(model)
    model = mlp()
    quantize_(model, QuestConfig(method="lsq"))
    with pytest.raises(ValueError, match="cannot be converted"):
        convert_(model)


@pytest.mark.parametrize("method", ["quest", "ste", "clip_ste", "lsq", "pact"])
@pytest.mark.parametrize("bits", [1, "ternary", 4, 8])
def test_every_method_and_width_trains_one_step(method, bits):
    model = mlp(4)
    quantize_(model, QuestConfig(weight_bits=bits, act_bits=bits, method=method))
    x = torch.randn(8, 256)
    loss = model(x).pow(2).mean()
    loss.backward()
    grads = [p.grad for p in model.parameters()]
    assert math.isfinite(loss.item()) and all(g is not None and torch.isfinite(g).all() for g in grads)
    assert model[0].weight.grad.abs().sum() > 0


@pytest.mark.parametrize("hadamard", ["half", "full", None])
def test_eval_mode_backward_gives_the_train_mode_estimator_gradients(hadamard):
    def grads(model, train, depth):
        model.train(train)
        x = (torch.randn(6, 256, generator=torch.Generator().manual_seed(0)) * 3).requires_grad_()
        out = model[:depth](x)
        upstream = torch.randn(out.shape, generator=torch.Generator().manual_seed(1))
        out.backward(upstream)
        result = [x.grad] + [p.grad.clone() for p in model[:depth].parameters()]
        model.zero_grad()
        return result

    model = quantize_(mlp(6), QuestConfig(hadamard=hadamard, weight_bits=2, act_bits=2))
    # one layer, same upstream gradient: the estimator's gradients exactly (2-bit: many masked entries)
    for a, b in zip(grads(model, True, 1), grads(model, False, 1), strict=True):
        assert b is not None and torch.equal(a, b)
    # the whole MLP: deeper layers see eval-mode values that differ by float rounding (~2e-7), so the
    # gradients agree to rounding at 4 bits (at 2 bits without rotation such a rounding can flip a code)
    model = quantize_(mlp(6), QuestConfig(hadamard=hadamard))
    for a, b in zip(grads(model, True, 5), grads(model, False, 5), strict=True):
        assert b is not None and (a - b).norm() <= 1e-5 * a.norm()


def test_eval_mode_gradients_do_not_change_the_exact_value():
    model = mlp(7)
    quantize_(model, QuestConfig()).eval()
    x = torch.randn(4, 256)
    with torch.no_grad():
        ref = model(x)
    out = model(x.requires_grad_())
    assert out.requires_grad and torch.equal(out.detach(), ref)
    out.sum().backward()
    assert x.grad is not None and model[0].weight.grad.abs().sum() > 0 and model[0].bias.grad is not None


def test_quantize_twice_and_after_convert_name_the_cause():
    model = mlp()
    quantize_(model, QuestConfig())
    with pytest.raises(ValueError, match=r"already holds 3 QuestLinear layers from quantize_ \(\['0', '2', '4'\]\)"):
        quantize_(model, QuestConfig())
    convert_(model)
    with pytest.raises(ValueError, match="already holds 3 Int4Linear layers from convert_"):
        quantize_(model, QuestConfig())
    with pytest.raises(ValueError, match=r"already converted: it holds 3 Int4Linear layers \(\['0', '2', '4'\]\)"):
        convert_(model)


def test_config_is_validated_on_construction():
    with pytest.raises(TypeError, match="weight_bits must be an int in"):
        QuestConfig(weight_bits=3.5, method="nope")
    with pytest.raises(ValueError, match="method must be one of"):
        QuestConfig(method="nope")
    with pytest.raises(TypeError, match="QuestConfig"):
        quantize_(mlp(), {"weight_bits": 4})


def test_filter_fn_on_the_call_as_in_torchao_and_config_filter_as_default():
    model = mlp()
    quantize_(model, QuestConfig(filter_fn=lambda m, n: n == "0"), filter_fn=lambda m, n: n == "4")
    assert [type(model[i]).__name__ for i in (0, 2, 4)] == ["Linear", "Linear", "QuestLinear"]
    model = mlp()
    quantize_(model, QuestConfig(filter_fn=lambda m, n: n == "0"))
    assert [type(model[i]).__name__ for i in (0, 2, 4)] == ["QuestLinear", "Linear", "Linear"]
    with pytest.raises(TypeError, match="filter_fn must be callable"):
        quantize_(mlp(), QuestConfig(), filter_fn="0")


def test_model_with_a_lambda_filter_pickles():
    import io

    model = mlp()
    quantize_(model, QuestConfig(filter_fn=lambda m, n: n != "4"))
    buffer = io.BytesIO()
    torch.save(model, buffer)  # the layers keep no filter_fn
    buffer.seek(0)
    loaded = torch.load(buffer, weights_only=False)
    x = torch.randn(3, 256)
    with torch.no_grad():
        assert torch.equal(loaded.eval()(x), model.eval()(x))
    assert model[0].config.filter_fn is None


def test_int4_linear_exposes_features_weight_and_keeps_steps_in_float32():
    torch.manual_seed(8)
    model = nn.Sequential(nn.Linear(256, 64))
    quantize_(model, QuestConfig())
    wq = model[0].quantized_weight().detach()  # Qw(W H) in the rotated basis
    convert_(model)
    layer = model[0]
    assert (layer.in_features, layer.out_features) == (256, 64)
    h = torch.block_diag(*[torch.tensor(__import__("scipy").linalg.hadamard(128), dtype=torch.float64)
                           / math.sqrt(128)] * 2)
    assert layer.weight.shape == (64, 256) and layer.weight.dtype == torch.float32
    assert torch.allclose(layer.weight.double(), wq.double() @ h, atol=1e-6)  # Qw(W H) H^T, the input basis
    step = layer.weight_step.clone()
    model.half()
    assert layer.weight_step.dtype == torch.float32 and torch.equal(layer.weight_step, step)
    assert layer.bias.dtype == torch.float16
    out = model(torch.randn(2, 256).half())
    assert out.dtype == torch.float16 and torch.isfinite(out).all()
    model.to(torch.float64)
    assert layer.weight_step.dtype == torch.float32


def test_bfloat16_convert_equals_bfloat16_fake_quant():
    # both rotate in float32, multiply exact grid values, add the bias in float32 and cast once
    torch.manual_seed(3)
    model = TinyLlama(TinyLlamaConfig(d_model=128, n_layers=2, n_heads=2))
    quantize_(model, QuestConfig())
    opt = torch.optim.AdamW(model.parameters(), lr=1e-2)
    idx = torch.randint(0, 256, (4, 33))
    for _ in range(3):
        loss = nn.functional.cross_entropy(model(idx[:, :-1]).reshape(-1, 256), idx[:, 1:].reshape(-1))
        opt.zero_grad()
        loss.backward()
        opt.step()
    model.eval().to(torch.bfloat16)
    with torch.no_grad():
        fake = model(idx[:, :-1])
        convert_(model)
        real = model(idx[:, :-1])
    assert fake.dtype == real.dtype == torch.bfloat16
    assert torch.equal(real.argmax(-1), fake.argmax(-1))
    assert torch.equal(real, fake)


def test_bare_linear_as_the_model_is_rejected_not_silently_kept():
    """quantize_/convert_ swap submodules; a bare layer as the model used to be left as is (setattr(m, '', ...))."""
    lin = nn.Linear(128, 64)
    with pytest.raises(ValueError, match=r"QuestLinear\.from_linear"):
        quantize_(lin)
    assert type(lin) is nn.Linear and not list(lin.children())
    layer = QuestLinear.from_linear(nn.Linear(128, 64), QuestConfig()).eval()
    children = [n for n, _ in layer.named_children()]
    with pytest.raises(ValueError, match=r"Int4Linear\.from_quest_linear"):
        convert_(layer)
    assert [n for n, _ in layer.named_children()] == children


def test_converted_state_dict_records_its_layout_and_rejects_a_mismatched_model():
    """Packed codes only mean something with the rotation and activation width that made them."""
    torch.manual_seed(0)

    def converted(**kw):
        model = quantize_(nn.Sequential(nn.Linear(128, 64)), QuestConfig(**kw)).eval()
        convert_(model)
        return model

    source = converted()
    state = source.state_dict()
    same = converted()
    same.load_state_dict(state)
    x = torch.randn(4, 128)
    with torch.no_grad():
        assert torch.equal(same(x), source(x))
    for kw, field in (({"hadamard": None}, "hadamard"), ({"act_bits": None}, "act_bits"), ({"block": 64}, "block")):
        with pytest.raises(ValueError, match=field):
            converted(**kw).load_state_dict(state)


class _SelfAttention(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.attn = nn.MultiheadAttention(128, 2, batch_first=True)
        self.proj = nn.Linear(128, 128)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.proj(self.attn(x, x, x, need_weights=False)[0])


def test_multihead_attention_out_proj_is_not_swapped_silently():
    """nn.MultiheadAttention reads out_proj.weight directly: a swapped out_proj would stay float."""
    torch.manual_seed(0)
    model = _SelfAttention()
    quantize_(model)
    assert type(model.attn.out_proj) is nn.modules.linear.NonDynamicallyQuantizableLinear
    assert isinstance(model.proj, QuestLinear)
    with pytest.raises(ValueError, match="attn.out_proj"):
        quantize_(_SelfAttention(), filter_fn=lambda m, n: isinstance(m, nn.Linear))
