"""What users bring: long answers, every PIL mode, models on other devices and dtypes, blank answers,
the official judge prompt and both ROUGE-L variants."""

import os
import types
import warnings

import numpy as np
import pytest
import torch
from PIL import Image

from wmarkgpt.analyzer import DEFAULT_MAX_NEW_TOKENS, GenerationLimitWarning, WatermarkAnalyzer
from wmarkgpt.data import DESCRIBE_QUESTION, make_synthetic_dataset, read_wqa
from wmarkgpt.metrics import JUDGE_PROMPT, JUDGE_SYSTEM_PROMPT, LLMJudge, evaluate_answers, rouge_l
from wmarkgpt.modeling import WMarkGPTForCausalLM, tiny_config
from wmarkgpt.processing import build_image_processor, build_word_tokenizer, to_pil
from wmarkgpt.scoring import VISIBILITY_LEVELS
from wmarkgpt.training import train_stage

# the GPU script sets this to "cuda"; on CPU the device tests run on the meta device below
DEVICE = os.environ.get("WMARKGPT_TEST_DEVICE", "cpu")


@pytest.fixture(scope="module")
def tok():
    return build_word_tokenizer([f"USER: ASSISTANT: {DESCRIBE_QUESTION} The watermark visibility is: "
                                 + " ".join(VISIBILITY_LEVELS)])


def _model(tok, seed=1):
    torch.manual_seed(seed)
    return WMarkGPTForCausalLM(tiny_config(vocab_size=len(tok), eos_token_id=tok.eos_token_id))


def _images(n=2):
    rng = np.random.default_rng(0)
    return [rng.integers(0, 256, (16, 16, 3), dtype=np.uint8) for _ in range(n)]


# ---- generation budget -------------------------------------------------------------------------------

def _forbid_eos(model, eos):
    def hook(module, args, output):
        return output.index_fill(-1, torch.tensor([eos], device=output.device), -1e9)
    return model.lm_head.register_forward_hook(hook)


def _force_eos(model, eos):
    def hook(module, args, output):
        out = output.clone()
        out[..., eos] = 1e9
        return out
    return model.lm_head.register_forward_hook(hook)


def test_default_budget_is_the_official_512_and_the_limit_warns(tok):
    model = _model(tok)
    analyzer = WatermarkAnalyzer(model, tok, build_image_processor(16))
    assert analyzer.max_new_tokens == DEFAULT_MAX_NEW_TOKENS == 512
    handle = _forbid_eos(model, tok.eos_token_id)  # a model that would talk past any budget
    try:
        with pytest.warns(GenerationLimitWarning, match="2 of 2 answers reached max_new_tokens=6"):
            texts = analyzer.generate(_images(), max_new_tokens=6)
        assert all(len(t.split()) == 6 for t in texts)  # word-level tokenizer: one word per token
    finally:
        handle.remove()
    handle = _force_eos(model, tok.eos_token_id)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("error", GenerationLimitWarning)
            assert analyzer.generate(_images(), max_new_tokens=6) == ["", ""]
    finally:
        handle.remove()


# ---- every PIL mode ----------------------------------------------------------------------------------

_RGB = np.random.default_rng(3).integers(0, 256, (6, 5, 3), dtype=np.uint8)
EIGHT_BIT_MODES = ["1", "L", "LA", "P", "PA", "RGB", "RGBA", "RGBa", "RGBX", "CMYK", "YCbCr", "LAB", "HSV"]


@pytest.mark.parametrize("mode", EIGHT_BIT_MODES)
def test_eight_bit_modes_convert_as_pil_does(mode):
    image = Image.fromarray(_RGB, "RGB").convert(mode)
    got = to_pil(image)
    assert got.mode == "RGB" and got.size == (5, 6)
    assert np.array_equal(np.asarray(got), np.asarray(image.convert("RGB")))


def test_premultiplied_la_goes_through_la():
    image = Image.fromarray(_RGB, "RGB").convert("LA").convert("La")
    assert np.array_equal(np.asarray(to_pil(image)), np.asarray(image.convert("LA").convert("RGB")))


@pytest.mark.parametrize("mode", ["I;16", "I;16B", "I;16L", "I;16N", "I"])
def test_sixteen_bit_grey_is_scaled_not_saturated(mode):
    rng = np.random.default_rng(0)
    values = rng.integers(0, 65536, (8, 7)).astype(np.uint16)
    if mode == "I":  # how older Pillow opens a 16-bit PNG
        image = Image.fromarray(values.astype(np.int32), "I")
    else:
        raw = values.astype(">u2" if mode == "I;16B" else "<u2").tobytes()
        image = Image.frombytes(mode, (7, 8), raw)
    assert image.mode == mode and np.array_equal(np.asarray(image).astype(np.int64), values)
    got = np.asarray(to_pil(image))
    want = np.rint(values / 257.0).astype(np.uint8)
    assert np.array_equal(got[..., 0], want) and np.array_equal(got[..., 1], want)
    assert (got == 255).mean() < 0.01  # Image.convert("RGB") turned 99.6% of such pixels white


def test_float_and_out_of_range_images_are_refused():
    with pytest.raises(ValueError, match="floating-point"):
        to_pil(Image.new("F", (4, 4), 0.5))
    with pytest.raises(ValueError, match=r"\[0, 65535\]"):
        to_pil(Image.fromarray(np.full((2, 2), -5, np.int32), "I"))


@pytest.mark.parametrize("shape", [(6, 5), (6, 5, 1), (6, 5, 3), (6, 5, 4)])
def test_arrays_in_eight_and_sixteen_bits(shape):
    rng = np.random.default_rng(1)
    eight = rng.integers(0, 256, shape, dtype=np.uint8)
    sixteen = eight.astype(np.uint16) * 257
    a, b = np.asarray(to_pil(eight)), np.asarray(to_pil(sixteen))
    assert a.shape == (6, 5, 3) and np.array_equal(a, b)
    grey = eight if eight.ndim == 2 else eight[..., 0]
    assert np.array_equal(a[..., 0], grey if len(shape) == 2 or shape[2] == 1 else eight[..., 0])
    with pytest.raises(ValueError, match="uint8 or"):
        to_pil(eight.astype(np.float32))


def test_a_sixteen_bit_png_file_scores_like_its_eight_bit_copy(tok, tmp_path):
    analyzer = WatermarkAnalyzer(_model(tok), tok, build_image_processor(16))
    grey = np.random.default_rng(2).integers(0, 256, (16, 16), dtype=np.uint8)
    Image.fromarray(grey.astype(np.uint16) * 257).save(tmp_path / "g16.png")
    Image.fromarray(grey).save(tmp_path / "g8.png")
    s16 = analyzer.visibility_score([Image.open(tmp_path / "g16.png")])
    s8 = analyzer.visibility_score([Image.open(tmp_path / "g8.png")])
    assert np.array_equal(s16, s8)


# ---- inputs follow the model's device and dtype -----------------------------------------------------

class _Reached(Exception):
    """Raised by the hook once the forward pass was entered with inputs on the right device."""


def _check_inputs_hook(model):
    target = next(model.parameters()).device

    def hook(module, args, kwargs):
        tensors = [v for v in [*args, *kwargs.values()] if isinstance(v, torch.Tensor)]
        wrong = [t.device for t in tensors if t.device != target]
        assert tensors and not wrong, f"inputs on {wrong}, model on {target}"
        raise _Reached
    return model.register_forward_pre_hook(hook, with_kwargs=True)


@pytest.mark.parametrize("call", ["visibility_logits", "generate", "train_stage"])
def test_inputs_go_to_the_model_device(tok, call):
    # on CPU the model sits on the meta device: any input left on the CPU fails the hook's check
    device = "meta" if DEVICE == "cpu" else DEVICE
    model = _model(tok).to(device)
    analyzer = WatermarkAnalyzer(model, tok, build_image_processor(16))
    handle = _check_inputs_hook(model)
    try:
        with pytest.raises(_Reached):
            if call == "train_stage":
                items = make_synthetic_dataset(2, size=16, random_state=0)
                train_stage(model, items, tokenizer=tok, image_processor=build_image_processor(16), stage=2,
                            epochs=1, batch_size=2, random_state=0)
            else:
                getattr(analyzer, call)(_images())
    finally:
        handle.remove()


@pytest.mark.parametrize("dtype", [torch.float64, torch.bfloat16])
def test_scores_and_training_follow_the_model_dtype(tok, dtype):
    ref = WatermarkAnalyzer(_model(tok), tok, build_image_processor(16), max_new_tokens=4)
    model = _model(tok).to(device=DEVICE, dtype=dtype)
    other = WatermarkAnalyzer(model, tok, build_image_processor(16), max_new_tokens=4)
    tol = 1e-6 if dtype == torch.float64 else 0.1
    assert np.allclose(other.visibility_score(_images()), ref.visibility_score(_images()), atol=tol)
    items = make_synthetic_dataset(4, size=16, random_state=0)
    res = train_stage(model, items, tokenizer=tok, image_processor=build_image_processor(16), stage=2, epochs=1,
                      batch_size=2, random_state=0)
    assert np.isfinite(res.losses).all() and next(model.parameters()).dtype == dtype


def test_from_pretrained_passes_device_map_and_dtype(tok, tmp_path):
    model = _model(tok)
    model.save_pretrained(tmp_path)
    tok.save_pretrained(tmp_path)
    build_image_processor(16).save_pretrained(tmp_path)
    loaded = WatermarkAnalyzer.from_pretrained(tmp_path, torch_dtype=torch.float64, device_map=DEVICE)
    p = next(loaded.model.parameters())
    assert p.dtype == torch.float64 and p.device.type == torch.device(DEVICE).type
    base = WatermarkAnalyzer(model, tok, build_image_processor(16))
    assert np.allclose(loaded.visibility_score(_images()), base.visibility_score(_images()), atol=1e-6)


# ---- evaluation ---------------------------------------------------------------------------------------

def _records(texts, vis):
    return [{"image": f"{i}.png", "visibility": v, "conversations": [{"value": "q"}, {"value": t}]}
            for i, (t, v) in enumerate(zip(texts, vis, strict=True))]


def test_blank_answers_score_zero_and_are_counted():
    ref = "A faint star logo in the top-left. The watermark visibility is: faint."
    labels = _records([ref] * 3, ["faint"] * 3)
    answers = _records([ref, "   ", "</s>"], ["faint", "", "faint"])  # "</s>" is "</" after the official strip
    calls = []
    ev = evaluate_answers(labels, answers[:2] + [_records([""], ["faint"])[0] | {"image": "2.png"}],
                          judge=lambda c, r: calls.append(c) or 1.0)
    assert ev.n_blank_answers == 2 and ev.n == 3 and len(calls) == 3
    assert ev.items["1.png"].bleu_1 == ev.items["1.png"].rouge_l == ev.items["1.png"].rouge_l_rouge_score == 0.0
    assert ev.bleu_1 == pytest.approx(1 / 3) and ev.rouge_l == pytest.approx(1 / 3, abs=1e-6)
    assert ev.items["0.png"].blank is False and ev.items["2.png"].blank is True
    with pytest.raises(ValueError, match="reference is empty"):
        evaluate_answers(_records(["s"], ["faint"]), _records(["a"], ["faint"]))


class _Client:
    def __init__(self):
        self.calls = []
        self.chat = types.SimpleNamespace(completions=types.SimpleNamespace(create=self._create))

    def _create(self, **kwargs):
        self.calls.append(kwargs)
        return types.SimpleNamespace(choices=[types.SimpleNamespace(message=types.SimpleNamespace(content="3"))])


def test_judge_sends_the_official_system_prompt():
    client = _Client()
    assert LLMJudge(client, model="gpt-4")("cand", "ref") == 3.0
    messages = client.calls[0]["messages"]
    assert messages[0] == {"role": "system", "content": "You are a helpful watermark discriminator."}
    assert JUDGE_SYSTEM_PROMPT == messages[0]["content"]
    assert messages[1] == {"role": "user", "content": JUDGE_PROMPT.format(candidate="cand", reference="ref")}


def test_both_rouge_l_variants_equal_their_packages(labels, data_dir):
    from rouge import Rouge
    from rouge_score import rouge_scorer

    answers = {a["image"]: a for a in read_wqa(data_dir / "WQA-Real_wmarkgpt-7b.json.gz")}
    scorer = rouge_scorer.RougeScorer(["rougeL"])
    biggest = 0.0
    for lab in labels[:60]:
        ref = lab["conversations"][1]["value"].strip("<\\s>")
        cand = answers[lab["image"]]["conversations"][1]["value"].strip("<\\s>")
        official = Rouge().get_scores(cand, ref)[0]["rouge-l"]["f"]
        google = scorer.score(ref, cand)["rougeL"].fmeasure
        assert rouge_l(cand, ref) == official
        assert rouge_l(cand, ref, variant="rouge-score") == pytest.approx(google, abs=1e-12)
        biggest = max(biggest, abs(official - google))
    assert biggest > 0.05  # the two are different numbers on real answers
    with pytest.raises(ValueError, match="variant"):
        rouge_l("a", "b", variant="rougeL")
