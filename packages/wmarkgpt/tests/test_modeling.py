"""The mPLUG-Owl2 architecture: official parameter names, save/load, modality routing, LoRA, errors."""

import json

import numpy as np
import pytest
import torch

from wmarkgpt.modeling import IMAGE_TOKEN_INDEX, WMarkGPTConfig, WMarkGPTForCausalLM, output_cache, tiny_config
from wmarkgpt.processing import (
    build_image_processor,
    build_word_tokenizer,
    mplug_owl2_prompt,
    preprocess_images,
    tokenizer_image_token,
)


@pytest.fixture(scope="module")
def tok():
    return build_word_tokenizer(["USER: ASSISTANT: Describe the watermark. The watermark visibility is: "
                                 "invisible faint moderate visible obvious"])


@pytest.fixture(scope="module")
def model(tok):
    torch.manual_seed(0)
    return WMarkGPTForCausalLM(tiny_config(vocab_size=len(tok))).eval()


@pytest.fixture(scope="module")
def batch(tok):
    ids = tokenizer_image_token(mplug_owl2_prompt("Describe the watermark."), tok)
    rng = np.random.default_rng(0)
    images = [rng.integers(0, 256, (16, 16, 3), dtype=np.uint8) for _ in range(2)]
    return torch.tensor([ids, ids]), preprocess_images(images, build_image_processor(16))


def test_parameter_names_equal_the_official_architecture(data_dir):
    # the golden list comes from instantiating the official classes (studies/official_architecture_check.py)
    golden = json.loads((data_dir / "official_state_dict_tiny.json").read_text())
    ours = WMarkGPTForCausalLM(WMarkGPTConfig(**golden["config"]))
    assert [(k, list(v.shape)) for k, v in ours.state_dict().items()] == [tuple(x) for x in golden["state_dict"]]
    assert ours.config.model_type == "mplug_owl2"


def test_save_and_reload_offline_gives_identical_logits(model, batch, tmp_path):
    ids, px = batch
    model.save_pretrained(tmp_path)
    again = WMarkGPTForCausalLM.from_pretrained(tmp_path, local_files_only=True).eval()
    with torch.no_grad():
        assert torch.equal(model(input_ids=ids, images=px).logits, again(input_ids=ids, images=px).logits)


def test_visual_way_weights_do_not_touch_text_only_logits(model, tok, batch):
    ids, px = batch
    text = torch.tensor([tok("the watermark visibility is").input_ids])
    pert = WMarkGPTForCausalLM(model.config).eval()
    pert.load_state_dict(model.state_dict())
    with torch.no_grad():
        for name, p in pert.named_parameters():
            if ".multiway.1." in name or "vision_model" in name or "visual_abstractor" in name:
                p.add_(torch.randn_like(p))
        assert torch.equal(model(input_ids=text).logits, pert(input_ids=text).logits)
        # the same perturbation does change the logits of a prompt with an image
        assert not torch.allclose(model(input_ids=ids, images=px).logits, pert(input_ids=ids, images=px).logits)


def test_visual_tokens_use_the_visual_way(model, batch):
    ids, px = batch
    embeds, modality, mask, _ = model.build_inputs(ids, images=px)
    n_vis = model.config.visual_config["visual_abstractor"]["num_learnable_queries"] + 1
    p = int((ids[0] == IMAGE_TOKEN_INDEX).nonzero())
    assert embeds.shape[1] == ids.shape[1] - 1 + n_vis
    assert modality[0].tolist() == [0] * p + [1] * n_vis + [0] * (ids.shape[1] - p - 1)


def test_padding_does_not_change_real_positions(model, batch):
    ids, px = batch
    padded = torch.cat([ids, torch.zeros(2, 3, dtype=torch.long)], dim=1)
    mask = torch.cat([torch.ones_like(ids), torch.zeros(2, 3, dtype=torch.long)], dim=1)
    with torch.no_grad():
        a = model(input_ids=ids, images=px).logits
        b = model(input_ids=padded, attention_mask=mask, images=px).logits[:, : a.shape[1]]
    assert torch.allclose(a, b, atol=1e-5)


def test_lora_adapter_round_trips(model, batch, tmp_path):
    from peft import LoraConfig, PeftModel, get_peft_model

    ids, px = batch
    base_dir = tmp_path / "base"
    model.save_pretrained(base_dir)
    peft_model = get_peft_model(WMarkGPTForCausalLM.from_pretrained(base_dir),
                                LoraConfig(r=4, lora_alpha=8, target_modules=["q_proj", "o_proj", "down_proj"]))
    with torch.no_grad():
        for name, p in peft_model.named_parameters():
            if "lora_B" in name:
                p.normal_(0, 0.5)
    peft_model.eval()
    peft_model.save_pretrained(tmp_path / "adapter")
    loaded = PeftModel.from_pretrained(WMarkGPTForCausalLM.from_pretrained(base_dir), tmp_path / "adapter").eval()
    with torch.no_grad():
        a = peft_model(input_ids=ids, images=px).logits
        b = loaded(input_ids=ids, images=px).logits
        base = model(input_ids=ids, images=px).logits
    assert torch.equal(a, b) and not torch.allclose(a, base)
    assert {n.split(".")[-2] for n, _ in peft_model.named_parameters() if "lora_A" in n} == {"default"}


@pytest.mark.parametrize("n_images", [0, 2])
def test_prompts_need_exactly_one_image_token(tok, n_images):
    prompt = "USER: hi" + " <|image|>" * n_images + " ASSISTANT:"
    with pytest.raises(ValueError, match=f"exactly one <\\|image\\|> token, got {n_images}"):
        tokenizer_image_token(prompt, tok)


def test_forward_rejects_inconsistent_inputs(model, batch):
    ids, px = batch
    with pytest.raises(ValueError, match="no images were given"):
        model(input_ids=ids)
    with pytest.raises(ValueError, match="row 0 has 2"):
        model(input_ids=torch.tensor([[1, IMAGE_TOKEN_INDEX, 5, IMAGE_TOKEN_INDEX]] * 2), images=px)
    with pytest.raises(ValueError, match="row 0 has 0"):
        model(input_ids=torch.tensor([[1, 5, 6]] * 2), images=px)
    with pytest.raises(ValueError, match="got 1 images for 2 prompts"):
        model(input_ids=ids, images=px[:1])
    with pytest.raises(ValueError, match="non-empty"):
        model(input_ids=torch.zeros(0, 4, dtype=torch.long))
    with pytest.raises(ValueError, match="expects 16x16"):
        model(input_ids=ids, images=torch.zeros(2, 3, 8, 8))
    with pytest.raises(ValueError, match="outside"):
        model(input_ids=torch.tensor([[10_000, 1]]))


def test_image_preprocessing_rejects_non_images():
    proc = build_image_processor(16)
    with pytest.raises(ValueError, match="empty"):
        preprocess_images([], proc)
    with pytest.raises(TypeError, match="PIL image or an"):
        preprocess_images(["not an image"], proc)
    with pytest.raises(ValueError, match="uint8"):
        preprocess_images([np.zeros((4, 4, 2), np.uint8)], proc)
    with pytest.raises(ValueError, match="uint8"):
        preprocess_images([np.zeros((4, 4, 3), np.float32)], proc)


def test_expand2square_pads_with_the_mean_colour():
    from PIL import Image

    from wmarkgpt.processing import expand2square

    sq = expand2square(Image.new("RGB", (8, 4), (0, 0, 0)), (122, 116, 104))
    assert sq.size == (8, 8) and sq.getpixel((0, 0)) == (122, 116, 104) and sq.getpixel((0, 3)) == (0, 0, 0)


def test_loading_a_folder_without_config_or_weights_names_the_problem(model, tmp_path):
    with pytest.raises(FileNotFoundError, match="does not exist"):
        WMarkGPTForCausalLM.from_pretrained(tmp_path / "nowhere")
    with pytest.raises(FileNotFoundError, match="no config.json"):
        WMarkGPTForCausalLM.from_pretrained(tmp_path)
    model.config.save_pretrained(tmp_path)
    with pytest.raises(FileNotFoundError, match="has no weights"):
        WMarkGPTForCausalLM.from_pretrained(tmp_path)
    (tmp_path / "config.json").write_text(json.dumps({"model_type": "llama"}))
    with pytest.raises(ValueError, match="expected 'mplug_owl2'"):
        WMarkGPTForCausalLM.from_pretrained(tmp_path)


def test_config_rejects_a_grid_that_does_not_match_the_patches():
    cfg = tiny_config(vocab_size=10)
    cfg.visual_config["visual_abstractor"]["grid_size"] = 3
    with pytest.raises(ValueError, match="grid_size 3 must equal"):
        WMarkGPTForCausalLM(cfg)


def test_left_padding_is_rejected_not_silently_shifted(model, batch):
    # positions count from the first token, so a left-padded row would be scored at shifted positions
    ids, px = batch
    padded = torch.cat([torch.zeros(2, 2, dtype=torch.long), ids], dim=1)
    mask = torch.cat([torch.zeros(2, 2, dtype=torch.long), torch.ones_like(ids)], dim=1)
    with pytest.raises(ValueError, match="right padding"):
        model(input_ids=padded, attention_mask=mask, images=px)
    with pytest.raises(ValueError, match="right padding"):
        model(input_ids=padded[:, :5].clamp(min=0), attention_mask=mask[:, :5])
    with pytest.raises(ValueError, match="0 or 1"):
        model(input_ids=ids, attention_mask=torch.full_like(ids, 2), images=px)


@pytest.mark.parametrize("kv_heads", [4, 2])
def test_cached_decoding_gives_the_logits_of_the_full_forward(tok, batch, kv_heads):
    torch.manual_seed(3)
    model = WMarkGPTForCausalLM(tiny_config(vocab_size=len(tok), num_key_value_heads=kv_heads)).eval()
    ids, px = batch
    more = torch.tensor([[5, 9, 11, 7], [8, 6, 12, 10]])
    with torch.no_grad():
        full = model(input_ids=torch.cat([ids, more], dim=1), images=px).logits
        out = model(input_ids=ids, images=px, use_cache=True)
        got = [out.logits]
        for chunk in (more[:, :1], more[:, 1:3], more[:, 3:]):  # one token, then two, then one
            out = model(input_ids=chunk, cache=output_cache(out), use_cache=True)  # the transformers 5 name
            got.append(out.logits)
    torch.testing.assert_close(torch.cat(got, dim=1), full, rtol=1e-5, atol=1e-5)
    assert output_cache(model(input_ids=ids, images=px)) is None  # only when asked for


def test_cached_decoding_rejects_inputs_it_cannot_continue(model, batch):
    ids, px = batch
    with torch.no_grad():
        past = output_cache(model(input_ids=ids, images=px, use_cache=True))
        nxt = torch.tensor([[5], [6]])
        seen = past[0][0].shape[2]
        with pytest.raises(ValueError, match="image is already cached"):
            model(input_ids=nxt, images=px, past_key_values=past)
        with pytest.raises(ValueError, match="batch=2"):
            model(input_ids=nxt[:1], past_key_values=past)
        with pytest.raises(ValueError, match=f"\\(2, {seen + 1}\\)"):
            model(input_ids=nxt, attention_mask=torch.ones(2, 1, dtype=torch.long), past_key_values=past)
        with pytest.raises(ValueError, match="use_cache=True"):
            model(input_ids=nxt, past_key_values=past[:1])
        with pytest.raises(ValueError, match="not both"):
            model(input_ids=nxt, past_key_values=past, cache=past)
        with pytest.raises(ValueError, match="<|image|>"):
            model(input_ids=torch.tensor([[IMAGE_TOKEN_INDEX], [5]]), past_key_values=past)


def test_a_padded_prompt_cannot_be_cached_or_continued_with_a_padded_mask(model, batch):
    # a right-padded row's next token would be numbered after its padding (and, without a mask, attend to it)
    ids, px = batch
    mask = torch.ones_like(ids)
    mask[1, -2:] = 0
    with torch.no_grad():
        with pytest.raises(ValueError, match="padding"):
            model(input_ids=ids, attention_mask=mask, images=px, use_cache=True)
        model(input_ids=ids, attention_mask=mask, images=px)  # without the cache padding is fine
        past = output_cache(model(input_ids=ids, images=px, use_cache=True))
        total = past[0][0].shape[2] + 1
        for bad in (torch.ones(2, total, dtype=torch.long).index_fill_(1, torch.tensor([total - 2]), 0),
                    torch.full((2, total), 2)):
            with pytest.raises(ValueError, match="all ones"):
                model(input_ids=torch.tensor([[5], [6]]), attention_mask=bad, past_key_values=past)
        ok = model(input_ids=torch.tensor([[5], [6]]), attention_mask=torch.ones(2, total, dtype=torch.long),
                   past_key_values=past).logits
        torch.testing.assert_close(ok, model(input_ids=torch.tensor([[5], [6]]), past_key_values=past).logits)


def test_a_cache_of_the_wrong_shape_or_dtype_is_named_not_broadcast(model, batch):
    ids, px = batch
    nxt = torch.tensor([[5], [6]])
    with torch.no_grad():
        past = output_cache(model(input_ids=ids, images=px, use_cache=True))
        junk = {
            "not tensors": tuple((1, 2) for _ in past),
            "3-D": tuple((k[0], v[0]) for k, v in past),
            "values one shorter": tuple((k, v[:, :, :-1]) for k, v in past),
            "layers of different lengths": (past[0],) + tuple((k[:, :, :-1], v[:, :, :-1]) for k, v in past[1:]),
            "twice the heads": tuple((k.repeat(1, 2, 1, 1), v.repeat(1, 2, 1, 1)) for k, v in past),
            "float64": tuple((k.double(), v.double()) for k, v in past),
        }
        for bad in junk.values():
            with pytest.raises(ValueError, match="use_cache=True"):
                model(input_ids=nxt, past_key_values=bad)
        with pytest.raises(ValueError, match="new tokens"):
            model(input_ids=nxt[:, :0], past_key_values=past)
