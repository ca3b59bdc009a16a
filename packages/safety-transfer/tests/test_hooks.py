"""Hooks: locators, bitwise restoration on exit, the arithmetic of add / replace / ablate, errors."""

import math

import pytest
import torch

from safety_transfer import ablate_direction, add_vector, check_layer, decoder_layers, read_layer, replace_layer

IDS = torch.tensor([[104, 101, 108, 108, 111, 32, 119], [97, 98, 99, 100, 101, 102, 103]])


def logits(model, **kw):
    with torch.no_grad():
        return model(input_ids=IDS, **kw).logits


@pytest.mark.parametrize("family", ["llama", "qwen2", "gemma2", "mistral", "gpt2"])
def test_every_context_leaves_the_model_bitwise_unchanged(families, family):
    model = families[family]
    before = logits(model)
    v = torch.randn(32, generator=torch.Generator().manual_seed(0))
    contexts = {"add": add_vector(model, 1, v, alpha=3.0), "replace": replace_layer(model, 0, lambda h: 2 * h),
                "ablate": ablate_direction(model, 2, v), "read": read_layer(model, 1)}
    for name, ctx in contexts.items():
        with ctx:
            during = logits(model)
        assert torch.equal(logits(model), before), name
        assert torch.equal(during, before) == (name == "read"), name


@pytest.mark.parametrize("family", ["llama", "gemma2", "gpt2"])
def test_read_layer_equals_output_hidden_states(families, family):
    model = families[family]
    with torch.no_grad():
        hs = model(input_ids=IDS, output_hidden_states=True).hidden_states
    for layer in range(2):  # the last entry has the final norm applied in some families
        with torch.no_grad(), read_layer(model, layer) as rec:
            model(input_ids=IDS)
        assert torch.equal(rec[0], hs[layer + 1])


def test_add_vector_adds_to_the_residual_stream_at_the_chosen_tokens(families):
    model = families["llama"]
    v = torch.randn(32, generator=torch.Generator().manual_seed(1))
    with torch.no_grad(), read_layer(model, 1) as plain:
        model(input_ids=IDS)
    # read the steered stream at the next layer's input: the layer-1 output after the hook
    with torch.no_grad(), add_vector(model, 1, v, alpha=-2.5, tokens=slice(3, None)), read_layer(model, 1) as rec:
        model(input_ids=IDS)
    expected = plain[0].clone()
    expected[:, 3:] += -2.5 * v
    assert torch.equal(rec[0], expected)


def test_ablation_removes_the_direction_and_keeps_the_rest(families):
    model = families["qwen2"]
    r = torch.randn(32, generator=torch.Generator().manual_seed(2))
    seen = []
    with torch.no_grad(), ablate_direction(model, 0, r), read_layer(model, 0) as rec, read_layer(model, 0):
        model(input_ids=IDS)
        seen = rec[0]
    unit = r / r.norm()
    assert torch.allclose(seen @ unit, torch.zeros(2, 7), atol=1e-5)
    with torch.no_grad(), read_layer(model, 0) as plain:
        model(input_ids=IDS)
    h = plain[0]
    assert torch.allclose(seen, h - (h @ unit)[..., None] * unit, atol=1e-6)


def test_locators_and_layer_errors(families):
    assert len(decoder_layers(families["gpt2"])) == 3
    assert check_layer(families["llama"], -1) == 2
    with pytest.raises(ValueError, match="has 3 decoder layers"):
        check_layer(families["llama"], 3)
    with pytest.raises(ValueError, match="has 3 decoder layers"):
        with add_vector(families["gemma2"], 7, torch.zeros(32)):
            pass
    import transformers

    opt = transformers.OPTForCausalLM(transformers.OPTConfig(vocab_size=50, hidden_size=16, num_hidden_layers=1,
                                                             ffn_dim=32, num_attention_heads=2, word_embed_proj_dim=16))
    assert decoder_layers(opt) is opt.model.decoder.layers  # located by structure, not by name
    with pytest.raises(ValueError, match=r"no decoder-layer list found in Linear"):
        decoder_layers(torch.nn.Linear(2, 2))


@pytest.mark.parametrize("alpha", [math.inf, math.nan, "1"])
def test_non_finite_alpha_and_bad_vectors_raise(families, alpha):
    error = TypeError if isinstance(alpha, str) else ValueError
    with pytest.raises(error, match="alpha must be a f"):
        with add_vector(families["llama"], 0, torch.zeros(32), alpha=alpha):
            pass


def test_vector_width_must_match_the_hidden_size(families):
    with pytest.raises(ValueError, match="hidden size is 32"):
        with add_vector(families["llama"], 0, torch.zeros(31)):
            pass
    with pytest.raises(ValueError, match="zero norm"):
        with ablate_direction(families["llama"], 0, torch.zeros(32)):
            pass
