"""Inputs a careful user or an attacker would try: train mode, half precision, layer provenance, padding."""

import pytest
import torch

from safety_transfer import (
    AffineMapper,
    SafetySwitch,
    collect_activations,
    collect_pairs,
    generate,
    lm_loss,
    load_mapper,
    mapped_replacement,
    pca_direction,
    refine_with_lm_loss,
    steering_vector,
    tiny_causal_lm,
)

TEXTS = ["hello there friend", "go", "the cat sat on the mat"]


def _dropout_model():
    model = tiny_causal_lm("llama", hidden_size=32, num_layers=3, random_state=0)
    for layer in model.model.layers:
        layer.self_attn.attention_dropout = 0.5
    return model


def test_collection_and_steering_ignore_dropout_of_a_model_in_train_mode(tok):
    model = _dropout_model()
    ref = collect_activations(model, tok, TEXTS, 1).values  # eval mode: dropout off
    ref_sv = steering_vector(model, tok, ["|DEPLOY| a", "|DEPLOY| bc"], ["a", "bc"], 1).vector
    ref_loss, ref_gen = lm_loss(model, tok, TEXTS), generate(model, tok, TEXTS, max_new_tokens=3)
    model.train()
    model.model.layers[0].eval()  # a mixed state must come back as it was
    torch.manual_seed(0)
    got = collect_activations(model, tok, TEXTS, 1).values
    got_sv = steering_vector(model, tok, ["|DEPLOY| a", "|DEPLOY| bc"], ["a", "bc"], 1).vector
    assert torch.equal(got, ref) and torch.equal(got_sv, ref_sv)
    assert lm_loss(model, tok, TEXTS) == ref_loss and generate(model, tok, TEXTS, max_new_tokens=3) == ref_gen
    assert model.training and model.model.layers[1].training and not model.model.layers[0].training
    assert not model.model.layers[0].self_attn.training


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
def test_pca_direction_of_half_precision_activations(dtype):
    g = torch.Generator().manual_seed(0)
    pos, neg = (torch.randn(6, 16, generator=g) + 1).to(dtype), torch.randn(6, 16, generator=g).to(dtype)
    got = pca_direction(pos, neg)
    ref = pca_direction(pos.float(), neg.float())
    assert got.dtype == dtype and (got.float() - ref).abs().max() < 1e-2


def test_steering_vector_pca_of_a_bfloat16_model(tok):
    model = tiny_causal_lm("qwen2", hidden_size=32, num_layers=3, random_state=1).to(torch.bfloat16)
    sv = steering_vector(model, tok, ["|DEPLOY| a", "|DEPLOY| bc"], ["a", "bc"], 1, method="pca")
    assert sv.vector.dtype == torch.bfloat16 and torch.isfinite(sv.vector).all()


@pytest.fixture(scope="module")
def layer_pairs(tok):
    src = tiny_causal_lm("llama", hidden_size=32, num_layers=3, random_state=0)
    tgt = tiny_causal_lm("llama", hidden_size=32, num_layers=3, random_state=1)
    texts = ["the quick brown fox jumps"[i:] + " x" for i in range(10)]
    return src, tgt, collect_pairs(src, tgt, texts, source_tokenizer=tok, source_layer=0, target_layer=-2)


def test_a_mapper_knows_its_layers_and_refuses_others(tok, layer_pairs, tmp_path):
    src, tgt, pairs = layer_pairs
    mapper = AffineMapper().fit(pairs)
    assert (mapper.source_layer_, mapper.target_layer_) == (0, 1)
    loaded = load_mapper(mapper.save(tmp_path / "m.safetensors"))  # layers saved without being repeated
    assert (loaded.source_layer_, loaded.target_layer_) == (0, 1)
    assert loaded.metadata_["source_layer"] == "0" and loaded.metadata_["target_layer"] == "1"
    for m in (mapper, loaded):
        with mapped_replacement(src, tgt, m, source_layer=0, target_layer=-2, source_tokenizer=tok,
                                target_tokenizer=tok):  # -2 is layer 1 of 3
            pass
        with pytest.raises(ValueError, match="fitted on source layer 0 and target layer 1"):
            with mapped_replacement(src, tgt, m, source_layer=0, target_layer=2):
                pass
        with pytest.raises(ValueError, match="fitted on source layer 0"):
            refine_with_lm_loss(m, src, tgt, tok, ["abc"], source_layer=1, target_layer=1)
    with pytest.raises(ValueError, match="fitted on source layer 0 and target layer 1"):
        SafetySwitch(tgt, src, mapper, layer=1)
    with pytest.raises(ValueError, match="was fitted on source layer 0"):
        mapper.save(tmp_path / "n.safetensors", source_layer=2)
    bare = AffineMapper().fit(pairs.source, pairs.target)  # arrays carry no layers: nothing is checked
    assert bare.source_layer_ is None and bare.target_layer_ is None
    SafetySwitch(tgt, src, bare, layer=2)


def test_mapped_replacement_gives_the_source_the_targets_positions(tok):
    # GPT-2 has absolute positions: a left-padded row must reach the source with the same position ids
    src = tiny_causal_lm("gpt2", hidden_size=32, num_layers=2, random_state=0)
    tgt = tiny_causal_lm("qwen2", hidden_size=48, num_layers=3, random_state=1)
    texts = ["the quick brown fox jumps"[i:] + " x" for i in range(10)]
    mapper = AffineMapper().fit(collect_pairs(src, tgt, texts, source_tokenizer=tok, source_layer=1,
                                              target_layer=1))
    enc = tok(["a much longer prompt here", "hi"], return_tensors="pt", padding=True, padding_side="left")
    pos = (enc["attention_mask"].cumsum(-1) - 1).clamp(min=0)
    with torch.no_grad(), mapped_replacement(src, tgt, mapper, source_layer=1, target_layer=1, source_tokenizer=tok,
                                             target_tokenizer=tok):
        batched = tgt(**enc, position_ids=pos, use_cache=False).logits[1, -2:]
        alone = tgt(**tok(["hi"], return_tensors="pt")).logits[0]
    assert (batched - alone).abs().max() < 1e-5


def test_steering_vector_reads_prompts_with_the_tokenizers_special_tokens(bos_tok):
    # steering-vectors tokenizes with the tokenizer's defaults (BOS included); so does steering_vector
    bos = bos_tok
    model = tiny_causal_lm("llama", hidden_size=32, num_layers=3, random_state=0)
    pos, neg = ["|DEPLOY| hello there", "|DEPLOY| go"], ["hello there", "go"]
    with torch.no_grad():
        hs = [model(**bos([t], return_tensors="pt"), output_hidden_states=True).hidden_states[2][0, -1]
              for t in pos + neg]
    brute = (torch.stack(hs[:2]) - torch.stack(hs[2:])).mean(0)
    assert (steering_vector(model, bos, pos, neg, 1, batch_size=2).vector - brute).abs().max() < 1e-6
    no_bos = steering_vector(model, bos, pos, neg, 1, add_special_tokens=False).vector
    assert (no_bos - brute).abs().max() > 1e-3
    acts = collect_activations(model, bos, TEXTS, 1)  # default: the tokenizer's own, BOS included
    assert len(acts.values) == sum(len(t) + 1 for t in TEXTS) and (acts.position[acts.text_index == 1] == torch.arange(3)).all()
    bare = collect_activations(model, bos, TEXTS, 1, add_special_tokens=False)
    assert len(bare.values) == sum(len(t) for t in TEXTS)


def test_a_nested_switch_stays_on_until_the_outer_block_ends(tok):
    base = tiny_causal_lm("llama", hidden_size=32, num_layers=3, random_state=0)
    ft = tiny_causal_lm("llama", hidden_size=32, num_layers=3, random_state=2)
    pairs = collect_pairs(ft, base, ["the quick brown fox"[i:] + " x" for i in range(8)], source_tokenizer=tok,
                          source_layer=1, target_layer=1)
    switch = SafetySwitch(base, ft, AffineMapper().fit(pairs), 1)
    ids = torch.tensor([[104, 101, 108]])
    with torch.no_grad():
        off = ft(input_ids=ids).logits
        with switch:
            on = ft(input_ids=ids).logits
            with switch:
                pass
            assert switch.is_on and torch.equal(ft(input_ids=ids).logits, on)
        assert not switch.is_on and torch.equal(ft(input_ids=ids).logits, off)
        switch.on()
        with switch:
            pass
        assert switch.is_on  # a block entered while on leaves it on
        switch.off()


def test_a_tokenizer_with_ids_beyond_the_models_vocabulary_is_named(tok):
    from safety_transfer import bpe_tokenizer

    texts = ["the quick brown fox"[i:] + " x" for i in range(8)]
    bpe = bpe_tokenizer(texts * 3, vocab_size=300)
    model = tiny_causal_lm("qwen2", hidden_size=32, num_layers=2, random_state=1)  # 258 embeddings
    with pytest.raises(ValueError, match=r"token id \d+ but the qwen2 model embeds 258 ids"):
        collect_activations(model, bpe, texts, 0)
    with pytest.raises(ValueError, match="model embeds 258 ids"):
        collect_pairs(model, model, texts, source_tokenizer=tok, target_tokenizer=bpe, source_layer=0,
                      target_layer=0, align="offsets")
