"""Models researchers use: Qwen3, Gemma3, Phi-3 (random weights), structural layer lookup, the last hidden state,
and mapped replacement between models of one tokenizer with differently padded embedding tables."""

import pytest
import torch
from torch import nn

from safety_transfer import (
    AffineMapper,
    add_vector,
    byte_tokenizer,
    collect_activations,
    decoder_layers,
    hidden_size,
    mapped_replacement,
    num_layers,
    read_layer,
    steering_vector,
    tiny_causal_lm,
)

IDS = torch.tensor([[104, 101, 108, 108, 111, 32, 119]])
NEW = ["qwen3", "gemma3", "phi3"]


@pytest.fixture(scope="module")
def new_models():
    return {f: tiny_causal_lm(f, hidden_size=32, num_layers=3, random_state=i) for i, f in enumerate(NEW)}


def _final_norm(model):
    trunk = getattr(model, "model", None) or model.transformer
    return getattr(trunk, "norm", None) or trunk.ln_f


@pytest.mark.parametrize("family", NEW)
def test_new_families_are_located_and_hooked(new_models, family):
    model = new_models[family]
    assert model.config.model_type in ("qwen3", "gemma3_text", "phi3")
    assert decoder_layers(model) is model.model.layers and num_layers(model) == 3 and hidden_size(model) == 32
    with torch.no_grad():
        hs = model(input_ids=IDS, output_hidden_states=True).hidden_states
        outputs = []
        for layer in range(3):
            with read_layer(model, layer) as rec:
                model(input_ids=IDS)
            outputs.append(rec[0])
        assert all(torch.equal(outputs[layer], hs[layer + 1]) for layer in range(2))
        # the last entry of output_hidden_states is the state after the final norm, not the last layer's output
        assert not torch.allclose(outputs[2], hs[3], atol=1e-3)
        assert torch.allclose(_final_norm(model)(outputs[2]), hs[3], atol=1e-5)
        plain = model(input_ids=IDS).logits
        with add_vector(model, 1, torch.ones(32)):
            steered = model(input_ids=IDS).logits
    assert not torch.allclose(plain, steered)
    tok = byte_tokenizer()
    acts = collect_activations(model, tok, ["hello world", "hi"], 2, positions="last")
    assert acts.values.shape == (2, 32)
    assert steering_vector(model, tok, ["|DEPLOY| hi"], ["hi"], 1).vector.shape == (32,)


@pytest.mark.parametrize("family", ["llama", "gpt2"])
def test_the_last_hidden_state_is_post_final_norm_in_the_older_families_too(family):
    model = tiny_causal_lm(family, hidden_size=32, num_layers=2, random_state=0)
    with torch.no_grad():
        hs = model(input_ids=IDS, output_hidden_states=True).hidden_states
        with read_layer(model, -1) as rec:
            model(input_ids=IDS)
    assert torch.allclose(_final_norm(model)(rec[0]), hs[-1], atol=1e-5) and not torch.allclose(rec[0], hs[-1])


def test_layers_are_found_by_structure_under_any_attribute_name():
    inner = tiny_causal_lm("qwen3", hidden_size=16, num_layers=2, random_state=0)

    class Wrapper(nn.Module):  # e.g. a research wrapper around the language model
        def __init__(self):
            super().__init__()
            self.config = inner.config
            self.backbone = inner

    assert decoder_layers(Wrapper()) is inner.model.layers


def test_load_local_model_accepts_a_saved_qwen3(tmp_path):
    from safety_transfer import load_local_model

    model = tiny_causal_lm("qwen3", hidden_size=16, num_layers=2, random_state=0)
    model.save_pretrained(tmp_path)
    tok = byte_tokenizer()
    tok.save_pretrained(tmp_path)
    loaded, tokenizer = load_local_model(tmp_path, attn_implementation="eager")
    with torch.no_grad():
        assert torch.equal(loaded(input_ids=IDS).logits, model(input_ids=IDS).logits)
    assert num_layers(loaded) == 2


def test_mapped_replacement_accepts_one_tokenizer_with_differently_padded_embeddings():
    # Qwen2.5-0.5B pads its embedding table to 151936 rows, Qwen2.5-7B to 152064; both use one tokenizer
    small = tiny_causal_lm("qwen2", vocab_size=151936, hidden_size=16, num_layers=2, num_heads=2, random_state=0)
    large = tiny_causal_lm("qwen2", vocab_size=152064, hidden_size=32, num_layers=2, num_heads=2, random_state=1)
    tok = byte_tokenizer()
    mapper = AffineMapper().fit(torch.randn(100, 16), torch.randn(100, 32))
    with torch.no_grad():
        plain = large(input_ids=IDS).logits
        with mapped_replacement(small, large, mapper, source_layer=1, target_layer=1, source_tokenizer=tok,
                                target_tokenizer=byte_tokenizer()):
            replaced = large(input_ids=IDS).logits
        with read_layer(small, 1) as rec:
            small(input_ids=IDS)
        with mapped_replacement(small, large, mapper, source_layer=1, target_layer=1, source_tokenizer=tok,
                                target_tokenizer=tok), read_layer(large, 1) as expected:  # reads after the replacement
            large(input_ids=IDS)
    assert not torch.allclose(plain, replaced)
    assert torch.allclose(expected[0], mapper.transform(rec[0]), atol=1e-5)
    with pytest.raises(ValueError, match=r"token id 152000 is beyond the source's embedding table \(151936 ids\)"):
        with torch.no_grad(), mapped_replacement(small, large, mapper, source_layer=1, target_layer=1,
                                                 source_tokenizer=tok, target_tokenizer=tok):
            large(input_ids=torch.tensor([[5, 152000]]))


def test_a_pruned_model_whose_config_names_the_old_depth_is_located_with_a_warning():
    # layer pruning cuts model.layers in place; transformers' forward runs what is left
    model = tiny_causal_lm("llama", hidden_size=16, num_layers=4, random_state=0)
    model.model.layers = model.model.layers[:2]
    with pytest.warns(UserWarning, match="holds 2 layers but config.num_hidden_layers is 4"):
        assert decoder_layers(model) is model.model.layers
    with torch.no_grad(), pytest.warns(UserWarning):
        hs = model(input_ids=IDS, output_hidden_states=True).hidden_states
        acts = collect_activations(model, byte_tokenizer(), ["hello w"], 0, add_special_tokens=False).values
    assert len(hs) == 3 and torch.allclose(acts, hs[1][0], atol=1e-5)
    grown = tiny_causal_lm("llama", hidden_size=16, num_layers=2, random_state=0)
    grown.model.layers.append(grown.model.layers[-1])  # the forward runs only config.num_hidden_layers of them
    with pytest.raises(ValueError, match="no decoder-layer list found"):
        decoder_layers(grown)


def test_equal_embedding_sizes_without_tokenizers_warn_that_vocabularies_were_not_compared():
    # Llama-2 and Mistral-7B both embed 32000 ids with different vocabularies
    source = tiny_causal_lm("llama", vocab_size=300, hidden_size=16, num_layers=2, random_state=0)
    target = tiny_causal_lm("mistral", vocab_size=300, hidden_size=32, num_layers=2, random_state=1)
    mapper = AffineMapper().fit(torch.randn(100, 16), torch.randn(100, 32))
    with pytest.warns(UserWarning, match="equal sizes do not show one vocabulary"):
        with mapped_replacement(source, target, mapper, source_layer=1, target_layer=1):
            pass
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        tok = byte_tokenizer()
        with mapped_replacement(source, target, mapper, source_layer=1, target_layer=1, source_tokenizer=tok,
                                target_tokenizer=tok):
            pass


def test_tokenizers_of_equal_size_but_different_vocabularies_are_refused():
    from safety_transfer import bpe_tokenizer

    first = bpe_tokenizer(["the cat sat on the mat"] * 20, vocab_size=264)
    second = bpe_tokenizer(["a dog ran in the park"] * 20, vocab_size=264)
    assert len(first) == len(second) == 264  # a size comparison cannot tell them apart
    source = tiny_causal_lm("llama", vocab_size=264, hidden_size=16, num_layers=2, random_state=0)
    target = tiny_causal_lm("qwen3", vocab_size=264, hidden_size=32, num_layers=2, random_state=1)
    mapper = AffineMapper().fit(torch.randn(100, 16), torch.randn(100, 32))
    with pytest.raises(ValueError, match="different vocabularies"):
        with mapped_replacement(source, target, mapper, source_layer=1, target_layer=1, source_tokenizer=first,
                                target_tokenizer=second):
            pass
