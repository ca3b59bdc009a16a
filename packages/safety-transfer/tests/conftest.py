"""Shared tiny models, tokenizers and texts (built in code, no downloads)."""

import inspect
import json
import re

import pytest
import torch

from safety_transfer import byte_tokenizer, tiny_causal_lm

torch.set_num_threads(1)


@pytest.fixture(scope="session")
def tok():
    return byte_tokenizer()


@pytest.fixture(scope="session")
def bos_tok():
    """The byte tokenizer with a BOS (id 257) prepended by its post-processor, as Llama and Gemma tokenizers do."""
    from tokenizers import processors

    bos = byte_tokenizer()
    bos._tokenizer.post_processor = processors.TemplateProcessing(single="<eos> $A", special_tokens=[("<eos>", 257)])
    assert bos("hi")["input_ids"] == [257, 104, 105]
    return bos


@pytest.fixture(scope="session")
def corpus():
    """Stdlib source text over 21 characters (a-t and space), in windows of 48."""
    text = re.sub(r"[^a-t ]", "", (inspect.getsource(json) + inspect.getsource(inspect)).lower())
    return [text[i:i + 48] for i in range(0, 48 * 150, 48)]


@pytest.fixture(scope="session")
def source_model():
    return tiny_causal_lm("llama", hidden_size=64, num_layers=2, random_state=0)


@pytest.fixture(scope="session")
def target_model():
    return tiny_causal_lm("qwen2", hidden_size=128, num_layers=4, random_state=1)


@pytest.fixture(scope="session")
def families():
    return {f: tiny_causal_lm(f, hidden_size=32, num_layers=3, random_state=i)
            for i, f in enumerate(["llama", "qwen2", "gemma2", "mistral", "gpt2"])}
