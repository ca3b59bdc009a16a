"""Each public entry point names the parameter in TypeError (wrong type) and ValueError (wrong value)."""

import pytest
import torch
from icml25_shared.testing import assert_rejects

from safety_transfer import (
    AffineMapper,
    AutoEncoderMapper,
    add_vector,
    byte_tokenizer,
    collect_activations,
    collect_pairs,
    diff_in_means,
    lm_loss,
    read_layer,
    steering_vector,
    tiny_causal_lm,
)

X, Y = torch.randn(40, 8), torch.randn(40, 12)


def _fit(mapper):
    return mapper.fit(X, Y)


def test_affine_mapper():
    assert_rejects(AffineMapper, "solver", wrong_type=3, wrong_value="qr", call=_fit)
    assert_rejects(AffineMapper, "ridge", wrong_type="0.1", wrong_value=-1.0, call=_fit)


def test_autoencoder_mapper():
    for name, wrong_type, wrong_value in (("epochs", 1.5, -1), ("lr", "0.01", 0.0), ("batch_size", 8.0, 0),
                                          ("patience", "2", -1), ("hidden", 4.0, 0)):
        assert_rejects(AutoEncoderMapper, name, wrong_type=wrong_type, wrong_value=wrong_value, call=_fit, d_s=8,
                       d_t=12)


def test_collect_activations():
    model, tok = tiny_causal_lm("llama", hidden_size=16, num_layers=1, random_state=0), byte_tokenizer()
    valid = {"model": model, "tokenizer": tok, "texts": ["hi there"], "layer": 0}
    assert_rejects(collect_activations, "positions", wrong_type=1, wrong_value="first", **valid)
    assert_rejects(collect_activations, "batch_size", wrong_type=2.0, wrong_value=0, **valid)


def test_add_vector():
    model = tiny_causal_lm("llama", hidden_size=16, num_layers=1, random_state=0)

    def enter(manager):
        with manager:
            pass

    assert_rejects(add_vector, "alpha", wrong_type="1", wrong_value=float("inf"), call=enter, model=model, layer=0,
                   vector=torch.zeros(16))


def test_tiny_causal_lm():
    assert_rejects(tiny_causal_lm, "family", wrong_type=1, wrong_value="bert")
    assert_rejects(tiny_causal_lm, "num_layers", wrong_type=2.0, wrong_value=0, family="llama")


def test_flags_are_bools_not_truthy_strings():
    # "no" is truthy: unchecked, add_special_tokens="no" added the special tokens the caller declined
    model, tok = tiny_causal_lm("llama", hidden_size=16, num_layers=2, random_state=0), byte_tokenizer()
    texts = ["hi there"]
    calls = {
        "add_special_tokens": [lambda v: collect_activations(model, tok, texts, 0, add_special_tokens=v),
                               lambda v: collect_pairs(model, model, texts, source_tokenizer=tok, source_layer=0,
                                                       target_layer=0, add_special_tokens=v),
                               lambda v: lm_loss(model, tok, texts, add_special_tokens=v),
                               lambda v: steering_vector(model, tok, texts, texts, 0, add_special_tokens=v)],
        "stop_at_layer": [lambda v: collect_activations(model, tok, texts, 0, stop_at_layer=v)],
        "paired": [lambda v: diff_in_means(X, X, paired=v), lambda v: steering_vector(model, tok, texts, texts, 0,
                                                                                      paired=v)],
        "stop": [lambda v: read_layer(model, 0, stop=v).__enter__()],
    }
    for name, entries in calls.items():
        for call in entries:
            with pytest.raises(TypeError, match=name):
                call("no")
    with pytest.raises(TypeError, match="layer must be an int"):
        collect_activations(model, tok, texts, True)
