"""WatermarkAnalyzer: one-pass scores equal the softmax of the level logits; descriptions; errors."""

import numpy as np
import pytest
import torch

from wmarkgpt.analyzer import WatermarkAnalyzer, WatermarkReport, parse_visibility
from wmarkgpt.data import DESCRIBE_QUESTION
from wmarkgpt.modeling import IMAGE_TOKEN_INDEX, WMarkGPTForCausalLM, tiny_config
from wmarkgpt.processing import (
    build_image_processor,
    build_word_tokenizer,
    mplug_owl2_prompt,
    preprocess_images,
    tokenizer_image_token,
)
from wmarkgpt.scoring import SCORE_PROMPT_SUFFIX, VISIBILITY_LEVELS, predict_score


@pytest.fixture(scope="module")
def analyzer():
    tok = build_word_tokenizer([f"USER: ASSISTANT: {DESCRIBE_QUESTION} The watermark visibility is: "
                                + " ".join(VISIBILITY_LEVELS)])
    torch.manual_seed(1)
    model = WMarkGPTForCausalLM(tiny_config(vocab_size=len(tok), eos_token_id=tok.eos_token_id))
    return WatermarkAnalyzer(model, tok, build_image_processor(16), max_new_tokens=5)


@pytest.fixture(scope="module")
def images():
    rng = np.random.default_rng(0)
    return [rng.integers(0, 256, (16, 16, 3), dtype=np.uint8) for _ in range(3)]


def test_score_is_the_softmax_of_the_five_logits_after_the_suffix(analyzer, images):
    prompt = mplug_owl2_prompt(DESCRIBE_QUESTION) + " " + SCORE_PROMPT_SUFFIX
    assert prompt == "USER: Describe the watermark in the image.\n<|image|> ASSISTANT: The watermark visibility is: "
    ids = tokenizer_image_token(prompt, analyzer.tokenizer)
    assert ids.count(IMAGE_TOKEN_INDEX) == 1
    px = preprocess_images(images, analyzer.image_processor)
    with torch.no_grad():
        last = analyzer.model(input_ids=torch.tensor([ids] * 3), images=px).logits[:, -1]
    expected = [predict_score(last[i, analyzer.level_ids].double().numpy()) for i in range(3)]
    got = analyzer.visibility_score(images)
    assert np.allclose(got, expected, atol=1e-12)
    assert np.allclose(analyzer.visibility_score(images, batch_size=1), got, atol=1e-5)  # batching invariant


def test_describe_returns_typed_reports(analyzer, images):
    reports = analyzer.describe(images[:2])
    assert len(reports) == 2 and all(isinstance(r, WatermarkReport) for r in reports)
    assert all(1.0 <= r.score <= 5.0 for r in reports)
    assert all(r.visibility is None or r.visibility in VISIBILITY_LEVELS for r in reports)
    assert analyzer.generate(images[:2]) == [r.text for r in reports]  # greedy decoding is deterministic


def test_parse_visibility():
    assert parse_visibility("the watermark visibility is : obvious .") == "obvious"
    assert parse_visibility("barely faint, maybe moderate") == "moderate"
    assert parse_visibility("") is None


def test_bad_inputs(analyzer):
    with pytest.raises(ValueError, match="empty"):
        analyzer.visibility_score([])
    with pytest.raises(TypeError, match="PIL image"):
        analyzer.visibility_score([[1, 2, 3]])
    with pytest.raises(TypeError, match="list of images"):
        analyzer.describe("image.png")
    with pytest.raises(ValueError, match="max_new_tokens"):
        WatermarkAnalyzer(analyzer.model, analyzer.tokenizer, analyzer.image_processor, max_new_tokens=0)


def test_round_trip_through_a_folder(analyzer, images, tmp_path):
    analyzer.model.save_pretrained(tmp_path)
    analyzer.tokenizer.save_pretrained(tmp_path)
    analyzer.image_processor.save_pretrained(tmp_path)
    again = WatermarkAnalyzer.from_pretrained(tmp_path, max_new_tokens=5)
    assert np.array_equal(again.visibility_score(images), analyzer.visibility_score(images))


def test_zero_or_empty_generation_arguments_are_errors_not_the_defaults(analyzer, images):
    # max_new_tokens=0 used to fall back to the analyzer's 5 tokens, question="" to the default question
    with pytest.raises(ValueError, match="max_new_tokens"):
        analyzer.generate(images[:1], max_new_tokens=0)
    with pytest.raises(ValueError, match="max_new_tokens"):
        analyzer.generate(images[:1], max_new_tokens=-1)
    with pytest.raises(ValueError, match="question"):
        analyzer.generate(images[:1], question="")
    for call in (analyzer.generate, analyzer.visibility_logits):
        with pytest.raises(ValueError, match="batch_size"):
            call(images[:1], batch_size=0)


def test_generate_with_the_cache_equals_recomputing_every_step(analyzer, images):
    # reference: feed the whole sequence (image included) at every step, as generation did before the cache
    px = preprocess_images(images, build_image_processor(16))
    prompt = tokenizer_image_token(mplug_owl2_prompt(DESCRIBE_QUESTION), analyzer.tokenizer)
    ids, eos, want = torch.tensor([prompt] * len(images)), analyzer.tokenizer.eos_token_id, []
    with torch.no_grad():
        for _ in range(12):
            nxt = analyzer.model(input_ids=ids, images=px).logits[:, -1].argmax(-1)
            want.append(nxt)
            ids = torch.cat([ids, nxt[:, None]], dim=1)
    rows = []
    for row in torch.stack(want, dim=1).tolist():
        row = row[: row.index(eos)] if eos in row else row
        rows.append(analyzer.tokenizer.decode(row, skip_special_tokens=True).strip())
    assert analyzer.generate(images, max_new_tokens=12) == rows
    assert any(len(r.split()) >= 3 for r in rows)  # the comparison covers several cached steps
