"""Training stages: the loss falls, the right parameters move, checkpoints reload, LoRA trains only adapters."""

import pytest
import torch

from wmarkgpt.data import make_position_dataset, make_synthetic_dataset
from wmarkgpt.modeling import WMarkGPTForCausalLM, tiny_config
from wmarkgpt.processing import build_image_processor, build_word_tokenizer
from wmarkgpt.training import encode_samples, train_curriculum, train_stage


@pytest.fixture(scope="module")
def setup():
    pos = make_position_dataset(16, size=16, random_state=0)
    syn = make_synthetic_dataset(16, size=16, random_state=1)
    tok = build_word_tokenizer([x.question + " " + x.answer for x in pos + syn] + ["USER: ASSISTANT:"])
    return pos, syn, tok, build_image_processor(16)


def _model(tok, seed=0):
    torch.manual_seed(seed)
    return WMarkGPTForCausalLM(tiny_config(vocab_size=len(tok), eos_token_id=tok.eos_token_id))


def test_labels_cover_only_the_answer(setup):
    pos, _, tok, proc = setup
    enc = encode_samples(pos[:2], tok, proc)
    for ids, labels, sample in zip(enc.input_ids, enc.labels, pos, strict=False):
        answer = tok(sample.answer, add_special_tokens=False).input_ids + [tok.eos_token_id]
        assert labels[-len(answer):] == answer and set(labels[:-len(answer)]) == {-100}
        assert ids[-len(answer):] == answer


def test_stage_lowers_the_loss_and_freezes_what_it_should(setup):
    pos, _, tok, proc = setup
    model = _model(tok)
    before = {n: p.detach().clone() for n, p in model.named_parameters()}
    res = train_stage(model, pos, tokenizer=tok, image_processor=proc, stage=1, trainable="visual", epochs=3,
                      batch_size=8, lr=3e-3, random_state=0)
    assert res.steps == 6 and len(res.losses) == 3 and res.losses[-1] < res.losses[0]
    for n, p in model.named_parameters():
        visual = "vision_model" in n or "visual_abstractor" in n
        if not visual:  # everything outside the vision tower and the abstractor stays put
            assert torch.equal(before[n], p), n
    assert not any(torch.equal(before[n], p) for n, p in model.named_parameters() if "visual_fc" in n)
    assert not any(torch.equal(before[n], p) for n, p in model.named_parameters() if "patch_embed" in n)


def test_same_seed_same_weights(setup):
    pos, _, tok, proc = setup
    a, b = _model(tok), _model(tok)
    for m in (a, b):
        train_stage(m, pos[:8], tokenizer=tok, image_processor=proc, stage=1, epochs=1, batch_size=4, random_state=3)
    assert all(torch.equal(x, y) for x, y in zip(a.parameters(), b.parameters(), strict=False))


def test_epoch_callback_sees_each_epoch_and_leaves_the_training_unchanged(setup):
    pos, _, tok, proc = setup
    a, b = _model(tok), _model(tok)
    seen = []

    def evaluate(epoch, model):
        seen.append((epoch, model.training))
        model.eval()  # an evaluation switches modes, as the analyzer does; the next epoch trains in train mode

    ra = train_stage(a, pos[:8], tokenizer=tok, image_processor=proc, stage=1, epochs=2, batch_size=4, random_state=3,
                     on_epoch_end=evaluate)
    rb = train_stage(b, pos[:8], tokenizer=tok, image_processor=proc, stage=1, epochs=2, batch_size=4, random_state=3)
    assert seen == [(1, True), (2, True)] and ra.losses == rb.losses
    assert all(torch.equal(x, y) for x, y in zip(a.parameters(), b.parameters(), strict=True))
    with pytest.raises(TypeError, match="on_epoch_end"):
        train_stage(a, pos[:8], tokenizer=tok, image_processor=proc, stage=1, on_epoch_end="print")


def test_curriculum_writes_a_reloadable_checkpoint_per_stage(setup, tmp_path):
    pos, syn, tok, proc = setup
    model = _model(tok)
    res = train_curriculum(model, [pos[:8], syn[:8]], tokenizer=tok, image_processor=proc, epochs=1,
                           batch_size=8, random_state=0, checkpoint_dir=tmp_path)
    assert [r.stage for r in res.stages] == [1, 2]
    again = WMarkGPTForCausalLM.from_pretrained(res.stages[-1].checkpoint)
    assert all(torch.equal(x, y) for x, y in zip(model.state_dict().values(), again.state_dict().values(), strict=False))


def test_lora_stage_trains_only_the_adapter(setup):
    from peft import LoraConfig

    pos, _, tok, proc = setup
    model = _model(tok)
    before = {n: p.detach().clone() for n, p in model.named_parameters()}
    res = train_curriculum(model, [pos[:8]], tokenizer=tok, image_processor=proc, trainable="none",
                           lora=LoraConfig(r=2, target_modules=["q_proj", "o_proj"]), epochs=1, batch_size=8,
                           random_state=0)
    assert res.stages[0].n_trainable == sum(p.numel() for n, p in res.model.named_parameters() if "lora_" in n)
    assert all(torch.equal(before[n], p) for n, p in model.named_parameters() if "lora_" not in n and n in before)


@pytest.mark.parametrize(("kwargs", "match"), [({"stage": 4}, "stage"), ({"stage": 1, "trainable": "head"},
                                                                          "trainable"),
                                                ({"stage": 1, "epochs": 0}, "epochs")])
def test_bad_stage_arguments(setup, kwargs, match):
    pos, _, tok, proc = setup
    with pytest.raises(ValueError, match=match):
        train_stage(_model(tok), pos[:2], tokenizer=tok, image_processor=proc, **kwargs)


@pytest.mark.parametrize("how", ["curriculum", "stage"])
def test_lora_without_trainable_freezes_the_base_model(setup, how):
    # with lora given and trainable left out, only the adapter trains (the base was silently fully tuned)
    from peft import LoraConfig

    pos, _, tok, proc = setup
    model = _model(tok)
    before = {n: p.detach().clone() for n, p in model.named_parameters()}
    cfg = LoraConfig(r=2, target_modules=["q_proj", "o_proj"])
    if how == "curriculum":
        res = train_curriculum(model, [pos[:8]], tokenizer=tok, image_processor=proc, lora=cfg, epochs=1,
                               batch_size=8, random_state=0).stages[0]
    else:
        res = train_stage(model, pos[:8], tokenizer=tok, image_processor=proc, stage=1, lora=cfg, epochs=1,
                          batch_size=8, random_state=0)
    assert res.trainable == "none"
    assert all(torch.equal(before[n], p) for n, p in model.named_parameters() if "lora_" not in n and n in before)
    assert train_stage(_model(tok), pos[:8], tokenizer=tok, image_processor=proc, stage=1, epochs=1,
                       batch_size=8, random_state=0).trainable == "all"


def _tower_model(tok, seed=0):
    torch.manual_seed(seed)
    return WMarkGPTForCausalLM(tiny_config(vocab_size=len(tok), eos_token_id=tok.eos_token_id, patch_size=4,
                                           conv_stem=(8, 8, 8), aux_head=True))


def test_stage0_pretraining_moves_only_the_tower_and_learns(setup, tmp_path):
    from wmarkgpt.training import aux_targets, pretrain_vision

    _, syn, tok, proc = setup
    model = _tower_model(tok)
    before = {n: p.detach().clone() for n, p in model.named_parameters()}
    res = pretrain_vision(model, syn, image_processor=proc, epochs=4, batch_size=8, random_state=0)
    assert res.stage == 0 and res.losses[-1] < res.losses[0]
    moved = {n for n, p in model.named_parameters() if not torch.equal(before[n], p)}
    assert moved and all(n.startswith(("model.vision_model.", "visual_aux_head.")) for n in moved)
    assert any("patch_embed.layers" in n for n in moved)  # the conv stem trains
    target, mask = aux_targets(syn)
    assert torch.allclose(target[:, 0], torch.tensor([(x.gt_score - 2.5) / (5 / 12**0.5) for x in syn]))
    assert mask.sum() == 5 * len(syn)
    # BatchNorm statistics survive a save/load round trip: same auxiliary outputs
    model.save_pretrained(tmp_path)
    again = WMarkGPTForCausalLM.from_pretrained(tmp_path, local_files_only=True).eval()
    px = torch.randn(3, 3, 16, 16)
    with torch.no_grad():
        assert torch.allclose(again.visual_aux(px), model.visual_aux(px), atol=1e-6)
    with pytest.raises(ValueError, match="auxiliary"):
        pretrain_vision(_model(tok), syn, image_processor=proc)
    with pytest.raises(ValueError, match="gt_score"):
        pretrain_vision(model, make_position_dataset(2, size=16, random_state=0), image_processor=proc)


def test_auxiliary_loss_is_added_in_the_text_stages(setup):
    _, syn, tok, proc = setup
    plain = train_stage(_tower_model(tok), syn[:8], tokenizer=tok, image_processor=proc, stage=2, epochs=1,
                        batch_size=8, random_state=0)
    with_aux = train_stage(_tower_model(tok), syn[:8], tokenizer=tok, image_processor=proc, stage=2, epochs=1,
                           batch_size=8, random_state=0, aux_weight=1.0)
    assert with_aux.losses[0] > plain.losses[0]  # same first batch, plus a positive squared error
    with pytest.raises(ValueError, match="auxiliary visual head"):
        train_stage(_model(tok), syn[:2], tokenizer=tok, image_processor=proc, stage=2, aux_weight=1.0)
