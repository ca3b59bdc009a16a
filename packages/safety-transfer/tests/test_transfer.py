"""Transfer and the safety switch: identities of both variants, controls, restoration, errors."""

import pytest
import torch

from safety_transfer import (
    AffineMapper,
    AutoEncoderMapper,
    SafetySwitch,
    add_vector,
    collect_activations,
    collect_pairs,
    lm_loss,
    mapped_replacement,
    mapped_vector,
    pad_or_truncate,
    random_like,
    read_layer,
    refine_with_lm_loss,
    replace_layer,
    substitution_metrics,
    tiny_causal_lm,
)

TEXTS = ["hello world and more", "the cat sat on the mat", "abc def"]


def identity(d):
    eye = torch.eye(d, dtype=torch.float64)
    return AffineMapper().fit(torch.cat([eye, torch.zeros(1, d, dtype=torch.float64)]),
                              torch.cat([eye, torch.zeros(1, d, dtype=torch.float64)]))


def test_mapped_vector_of_an_affine_map_is_w_v(source_model, target_model, tok, corpus):
    pairs = collect_pairs(source_model, target_model, corpus[:20], source_tokenizer=tok, source_layer=1,
                          target_layer=2)
    m = AffineMapper().fit(pairs)
    v = torch.randn(64, generator=torch.Generator().manual_seed(0))
    got = mapped_vector(m, pairs.source[:50], v, alpha=3.0)
    assert torch.allclose(got, 3.0 * (m.weight_.float() @ v), atol=1e-5)
    ae = AutoEncoderMapper(64, 128, epochs=1, random_state=0).fit(pairs)
    h = pairs.source[:30]
    brute = torch.stack([ae.transform(h[i] + v) - ae.transform(h[i]) for i in range(30)]).mean(0)
    assert torch.allclose(mapped_vector(ae, h, v), brute, atol=1e-6)


def test_replacement_with_the_identity_equals_steering_the_model_itself(tok):
    model = tiny_causal_lm("llama", hidden_size=32, num_layers=3, random_state=7)
    twin = tiny_causal_lm("llama", hidden_size=32, num_layers=3, random_state=7)
    v = torch.randn(32, generator=torch.Generator().manual_seed(1))
    ids = tok(TEXTS, return_tensors="pt", padding=True, add_special_tokens=False)
    with torch.no_grad():
        with add_vector(model, 1, v, alpha=2.0):
            steered = model(**ids).logits
        with mapped_replacement(twin, model, identity(32), source_layer=1, target_layer=1, vector=v, alpha=2.0,
                                source_tokenizer=tok, target_tokenizer=tok):
            mapped = model(**ids).logits
        plain = model(**ids).logits
    assert torch.allclose(mapped, steered, atol=1e-5) and not torch.allclose(plain, steered, atol=1e-3)
    assert torch.equal(model(**ids).logits, plain)  # hooks gone


def test_substitution_metrics_equal_brute_force(source_model, target_model, tok, corpus):
    pairs = collect_pairs(source_model, target_model, corpus[:30], source_tokenizer=tok, source_layer=1,
                          target_layer=2)
    m = AffineMapper().fit(pairs)
    texts = corpus[30:34]
    got = substitution_metrics(source_model, target_model, m, tok, texts, source_layer=1, target_layer=2)
    assert got.lm_loss == pytest.approx(lm_loss(target_model, tok, texts), rel=1e-12)
    # brute force: one text at a time, mapped activations computed first and written into the layer
    nll, nll_m, kls, n = [], [], [], 0
    for text in texts:
        ids = tok([text], return_tensors="pt")["input_ids"]
        h_s = collect_activations(source_model, tok, [text], 1).values
        mapped = m.transform(h_s).float()
        with torch.no_grad():
            logp = torch.log_softmax(target_model(input_ids=ids).logits[0].double(), -1)
            with replace_layer(target_model, 2, lambda h, mapped=mapped: mapped[None]):
                logq = torch.log_softmax(target_model(input_ids=ids).logits[0].double(), -1)
        nxt = ids[0, 1:]
        nll.append(-logp[:-1].gather(1, nxt[:, None]).sum())
        nll_m.append(-logq[:-1].gather(1, nxt[:, None]).sum())
        kls.append((logp.exp() * (logp - logq)).sum(-1)[:-1].sum())
        n += len(nxt)
    assert got.n_tokens == n
    assert got.lm_loss_mapped == pytest.approx(float(sum(nll_m)) / n, rel=1e-5)
    assert got.kl == pytest.approx(float(sum(kls)) / n, rel=1e-4)
    assert got.kl > 0 and got.lm_loss_mapped != got.lm_loss


def test_controls_have_the_promised_norm_and_shape():
    v = torch.arange(1.0, 7.0)
    r = random_like(v, dim=10, random_state=0)
    assert r.shape == (10,) and torch.isclose(r.norm(), v.norm())
    assert torch.equal(random_like(v, random_state=3), random_like(v, random_state=3))
    assert torch.equal(pad_or_truncate(v, 8), torch.tensor([1.0, 2, 3, 4, 5, 6, 0, 0]))
    assert torch.equal(pad_or_truncate(v, 4), v[:4])


def test_switch_off_is_bitwise_the_finetuned_model_and_on_maps_it(tok):
    base = tiny_causal_lm("gemma2", hidden_size=32, num_layers=2, random_state=0)
    ft = tiny_causal_lm("gemma2", hidden_size=32, num_layers=2, random_state=1)
    ids = tok(TEXTS, return_tensors="pt", padding=True, add_special_tokens=False)
    with torch.no_grad():
        before = ft(**ids).logits
        pairs = collect_pairs(ft, base, TEXTS * 4, source_tokenizer=tok, source_layer=0, target_layer=0)
        switch = SafetySwitch(base, ft, AffineMapper().fit(pairs), layer=0)
        with switch:
            on = ft(**ids).logits
            with read_layer(ft, 0) as rec:
                ft(**ids)
        off = ft(**ids).logits
        switch.on()
        assert torch.equal(ft(**ids).logits, on)
        switch.off().off()
        assert torch.equal(ft(**ids).logits, before)
    assert torch.equal(off, before) and not torch.allclose(on, before, atol=1e-3)
    with torch.no_grad(), read_layer(ft, 0) as plain:
        ft(**ids)
    assert torch.allclose(rec[0], switch.mapper.transform(plain[0]), atol=1e-5)


def test_transfer_errors_name_the_cause(source_model, target_model, tok):
    wrong = AffineMapper().fit(torch.randn(40, 32), torch.randn(40, 128))
    with pytest.raises(ValueError, match=r"maps width 32 to 128 but the models' hidden sizes are 64 \(source\)"):
        with mapped_replacement(source_model, target_model, wrong, source_layer=1, target_layer=2):
            pass
    right = AffineMapper().fit(torch.randn(200, 64), torch.randn(200, 128))
    with pytest.raises(ValueError, match="target_layer 4 is out of range.*has 4 decoder layers"):
        with mapped_replacement(source_model, target_model, right, source_layer=1, target_layer=4):
            pass
    with pytest.raises(ValueError, match="alpha must be a f"):
        mapped_vector(right, torch.zeros(3, 64), torch.zeros(64), alpha=float("nan"))
    other_vocab = tiny_causal_lm("qwen2", vocab_size=300, hidden_size=128, num_layers=4, random_state=0)
    with pytest.warns(UserWarning, match="pass source_tokenizer and target_tokenizer"):
        with mapped_replacement(source_model, other_vocab, right, source_layer=1, target_layer=2):
            pass
    from safety_transfer import bpe_tokenizer, byte_tokenizer

    other = bpe_tokenizer(["the cat sat on the mat"] * 20, vocab_size=275)
    with pytest.raises(ValueError, match="one shared tokenizer"):
        with mapped_replacement(source_model, other_vocab, right, source_layer=1, target_layer=2,
                                source_tokenizer=byte_tokenizer(), target_tokenizer=other):
            pass
    with pytest.raises(ValueError, match="share one architecture"):
        SafetySwitch(source_model, tiny_causal_lm("gpt2", hidden_size=64), identity(64), layer=0)
    with pytest.raises(ValueError, match="maps width 64 to 128"):
        SafetySwitch(source_model, source_model, right, layer=0)


def test_refining_with_the_lm_loss_lowers_the_substituted_loss_and_leaves_the_models(source_model, target_model,
                                                                                      tok, corpus):
    pairs = collect_pairs(source_model, target_model, corpus[:40], source_tokenizer=tok, source_layer=1,
                          target_layer=2)
    m = AffineMapper(solver="adam", epochs=2, lr=1e-2, random_state=0).fit(pairs)
    before = substitution_metrics(source_model, target_model, m, tok, corpus[40:56], source_layer=1, target_layer=2)
    weights = [p.clone() for p in target_model.parameters()]
    losses = refine_with_lm_loss(m, source_model, target_model, tok, corpus[:40], source_layer=1, target_layer=2,
                                 lm_weight=1.0, epochs=2, lr=3e-3, random_state=0)
    after = substitution_metrics(source_model, target_model, m, tok, corpus[40:56], source_layer=1, target_layer=2)
    # the LM term pulls the substituted loss down (on a random target, below the target's own loss)
    assert len(losses) == 10 and losses[-1] < losses[0]
    assert after.lm_loss_mapped < before.lm_loss_mapped - 0.1 and after.lm_loss == before.lm_loss
    assert all(torch.equal(a, b) for a, b in zip(weights, target_model.parameters(), strict=True))
    assert all(p.requires_grad for p in target_model.parameters())
