"""Collection: stop-at-layer equals output_hidden_states, padding, shards, offset alignment, errors."""

import pytest
import torch

from safety_transfer import (
    ActivationShards,
    align_offsets,
    bpe_tokenizer,
    collect_activations,
    collect_pairs,
    tiny_causal_lm,
)

TEXTS = ["hello world", "ab", "the cat sat on the mat", "x"]


@pytest.mark.parametrize("family", ["llama", "qwen2", "gemma2", "gpt2"])
def test_stop_at_layer_equals_output_hidden_states_of_the_same_batch(families, tok, family):
    model = families[family]
    batch = tok(TEXTS, return_tensors="pt", padding=True, add_special_tokens=False)
    with torch.no_grad():
        hs = model(**batch, output_hidden_states=True).hidden_states
    for layer in (0, 1):
        acts = collect_activations(model, tok, TEXTS, layer, batch_size=4)
        mask = batch["attention_mask"].bool()
        assert torch.equal(acts.values, hs[layer + 1][mask])
        full = collect_activations(model, tok, TEXTS, layer, batch_size=4, stop_at_layer=False)
        assert torch.equal(full.values, acts.values)
        last = collect_activations(model, tok, TEXTS, layer, positions="last", batch_size=4)
        ends = mask.sum(1) - 1
        assert torch.equal(last.values, hs[layer + 1][torch.arange(4), ends])
        assert last.position.tolist() == [10, 1, 21, 0]


def test_padding_does_not_change_the_rows(families, tok):
    model = families["llama"]
    one_by_one = collect_activations(model, tok, TEXTS, 1, batch_size=1)
    batched = collect_activations(model, tok, TEXTS, 1, batch_size=3)
    assert one_by_one.values.shape == (11 + 2 + 22 + 1, 32)
    assert torch.equal(one_by_one.text_index, batched.text_index)
    assert torch.allclose(one_by_one.values, batched.values, atol=1e-5)


def test_shards_hold_the_same_rows_as_memory(families, tok, tmp_path):
    model = families["gemma2"]
    mem = collect_activations(model, tok, TEXTS, 2, batch_size=3)
    shards = collect_activations(model, tok, TEXTS, 2, batch_size=3, out=tmp_path / "a")
    assert isinstance(shards, ActivationShards) and len(shards) == 2 and shards.n_rows == 36
    back = shards.load()
    assert torch.equal(back.values, mem.values) and torch.equal(back.position, mem.position)
    assert shards.metadata["layer"] == "2" and shards.metadata["dim"] == "32"
    with pytest.raises(ValueError, match="already holds 2 shards"):
        collect_activations(model, tok, TEXTS, 2, out=tmp_path / "a")


def test_offset_alignment_equals_hand_computed_pairs(tok):
    # byte-level vs BPE trained offline on a tiny corpus: pairs are the tokens whose spans end together
    bpe = bpe_tokenizer(["the cat sat on the mat"] * 20 + ["a hat"] * 5, vocab_size=275)
    text = "the cat sat"
    off_b = tok(text, return_offsets_mapping=True)["offset_mapping"]
    off_p = bpe(text, return_offsets_mapping=True)["offset_mapping"]
    ends_p = [e for _, e in off_p]
    expected = [(i, ends_p.index(e)) for i, (_, e) in enumerate(off_b) if e in ends_p]
    assert align_offsets(off_b, off_p) == expected
    assert len(expected) == len(off_p) < len(off_b)  # every BPE token ends where some byte ends
    assert align_offsets([(0, 1), (1, 2), (2, 3)], [(0, 2), (2, 3)]) == [(1, 0), (2, 1)]
    assert align_offsets([(0, 2), (2, 4)], [(0, 1), (1, 3), (3, 4)]) == [(1, 2)]


def test_pairs_across_tokenizers_need_offsets(families, tok):
    bpe = bpe_tokenizer(["the cat sat on the mat"] * 20, vocab_size=275)
    a = families["llama"]
    b = tiny_causal_lm("qwen2", vocab_size=len(bpe), hidden_size=48, num_layers=2, random_state=3)
    with pytest.raises(ValueError, match="different tokens for text 0.*align='offsets'"):
        collect_pairs(a, b, ["the cat"], source_tokenizer=tok, target_tokenizer=bpe, source_layer=0, target_layer=0)
    pairs = collect_pairs(a, b, ["the cat", "sat"], source_tokenizer=tok, target_tokenizer=bpe, source_layer=0,
                          target_layer=1, align="offsets")
    assert pairs.source.shape[1] == 32 and pairs.target.shape[1] == 48
    bs = collect_activations(a, tok, ["the cat", "sat"], 0).values
    bt = collect_activations(b, bpe, ["the cat", "sat"], 1)
    # the target side holds every BPE token (each ends on a byte boundary) and the matching byte rows
    assert torch.equal(pairs.target, bt.values)
    ends = [e for _, e in tok("the cat", return_offsets_mapping=True)["offset_mapping"]]
    bpe_ends = [e for _, e in bpe("the cat", return_offsets_mapping=True)["offset_mapping"]]
    rows = [ends.index(e) for e in bpe_ends]
    assert torch.equal(pairs.source[: len(rows)], bs[rows])


def test_pairs_share_positions_with_one_tokenizer(source_model, target_model, tok, tmp_path):
    pairs = collect_pairs(source_model, target_model, TEXTS, source_tokenizer=tok, source_layer=1, target_layer=2)
    s = collect_activations(source_model, tok, TEXTS, 1)
    t = collect_activations(target_model, tok, TEXTS, 2)
    assert torch.equal(pairs.source, s.values) and torch.equal(pairs.target, t.values)
    shards = collect_pairs(source_model, target_model, TEXTS, source_tokenizer=tok, source_layer=1, target_layer=2,
                           batch_size=2, out=tmp_path)
    assert len(shards) == 2 and torch.allclose(shards.load().target, pairs.target, atol=1e-5)  # other padding


@pytest.mark.parametrize(("kwargs", "match"), [
    ({"texts": []}, "prompt set is empty"),
    ({"texts": "abc"}, "single string"),
    ({"texts": ["a", ""]}, "entry 1"),
    ({"positions": "first"}, "positions must be one of"),
    ({"batch_size": 0}, "batch_size"),
    ({"layer": 5}, "has 3 decoder layers"),
])
def test_collection_errors_name_the_cause(families, tok, kwargs, match):
    args = {"texts": ["abc"], "layer": 0} | kwargs
    with pytest.raises(ValueError, match=match):
        collect_activations(families["llama"], tok, args.pop("texts"), args.pop("layer"), **args)
