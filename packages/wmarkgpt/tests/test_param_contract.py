"""Every public entry point names the parameter in TypeError (wrong type) and ValueError (wrong value)."""

import numpy as np
import pytest
import torch
from icml25_shared.testing import assert_rejects

from wmarkgpt import WatermarkAnalyzer, rouge_l
from wmarkgpt.data import make_position_dataset, make_scene, make_synthetic_dataset
from wmarkgpt.modeling import WMarkGPTForCausalLM, tiny_config
from wmarkgpt.processing import build_image_processor, build_word_tokenizer
from wmarkgpt.scoring import VISIBILITY_LEVELS
from wmarkgpt.training import pretrain_vision, train_stage


@pytest.fixture(scope="module")
def parts():
    tok = build_word_tokenizer(["USER: ASSISTANT: The watermark visibility is: " + " ".join(VISIBILITY_LEVELS)])
    torch.manual_seed(0)
    model = WMarkGPTForCausalLM(tiny_config(vocab_size=len(tok), eos_token_id=tok.eos_token_id, aux_head=True))
    return model, tok, build_image_processor(16)


def test_analyzer(parts):
    model, tok, proc = parts
    valid = {"model": model, "tokenizer": tok, "image_processor": proc}
    assert_rejects(WatermarkAnalyzer, "max_new_tokens", wrong_type="64", wrong_value=0, **valid)
    with pytest.raises(TypeError, match="model"):
        WatermarkAnalyzer("model.bin", tok, proc)
    image = [np.zeros((16, 16, 3), np.uint8)]
    analyzer = WatermarkAnalyzer(**valid)
    assert_rejects(lambda **kw: analyzer.visibility_score(image, **kw), "batch_size", wrong_type=2.5, wrong_value=0)
    assert_rejects(lambda **kw: analyzer.generate(image, **kw), "max_new_tokens", wrong_type="8", wrong_value=-1)


def test_metrics():
    assert_rejects(rouge_l, "variant", wrong_type=1, wrong_value="rougeL", candidate="a b", reference="a c")


def test_training(parts):
    model, tok, proc = parts
    items = make_synthetic_dataset(2, size=16, random_state=0)
    valid = {"model": model, "samples": items, "tokenizer": tok, "image_processor": proc, "stage": 2}
    for name, wrong_type, wrong_value in (("epochs", 1.5, 0), ("batch_size", "8", 0), ("lr", "fast", 0.0),
                                          ("aux_weight", "1", -1.0), ("random_state", "seed", -1)):
        assert_rejects(train_stage, name, wrong_type=wrong_type, wrong_value=wrong_value, **valid)
    assert_rejects(train_stage, "stage", wrong_type="2", wrong_value=4,
                   **{k: v for k, v in valid.items() if k != "stage"})
    assert_rejects(pretrain_vision, "epochs", wrong_type=2.0, wrong_value=0, model=model, samples=items,
                   image_processor=proc)


def test_data():
    assert_rejects(make_synthetic_dataset, "n", wrong_type="10", wrong_value=0)
    assert_rejects(make_synthetic_dataset, "max_weight", wrong_type="0.2", wrong_value=0.5, n=1)
    assert_rejects(make_synthetic_dataset, "short_answer_rate", wrong_type=None, wrong_value=1.5, n=1)
    assert_rejects(make_position_dataset, "n", wrong_type=2.0, wrong_value=-3)
    assert_rejects(make_scene, "size", wrong_type="32", wrong_value=8)
    assert_rejects(make_scene, "n_objects", wrong_type=2.5, wrong_value=7)
