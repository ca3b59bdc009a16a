"""WikiText-103 presets (sizes against the reference configurations) and the local-folder token corpus."""

import numpy as np
import pytest
import torch

from looped_transformers import LoopedForCausalLM
from looped_transformers.presets import PRESETS, TokenCorpusTask, prepare_corpus, preset
from looped_transformers.train import TrainConfig, lm_loss, train


@pytest.mark.parametrize("name", list(PRESETS))
def test_presets_have_the_reference_parameter_counts(name):
    p = preset(name)
    with torch.device("meta"):  # shapes only: no memory, no initialisation time
        model = LoopedForCausalLM(p.config)
    total = sum(q.numel() for q in model.parameters())  # tied head: counted once
    if name == "wikitext103-gpt":  # its reference count leaves out the position table (nanoGPT)
        total -= model.model.embed_positions.weight.numel()
    # the references print 46.5M, 49.6M, 44.64M (3-4 digits); the GPT block here also has biases (+27,648)
    assert total == pytest.approx(p.reference_parameters, rel=2e-3), total
    assert model.lm_head.weight is model.model.embed_tokens.weight
    assert p.seq_len == p.config.max_position_embeddings == 1024
    assert (p.train.lr, p.train.lr * p.train.min_lr_ratio) == pytest.approx((2e-4, 6e-5))
    assert (p.train.warmup_steps, p.train.steps, p.train.batch_size) == (2000, 100_000, 48)


def test_preset_overrides_and_errors():
    p = preset("wikitext103-lt", n_loops=12, steps=10)
    assert (p.config.n_loops, p.train.steps, p.config.hidden_size) == (12, 10, 768)
    # a window longer than the position table would only fail at the first training step
    assert preset("wikitext103-lt", max_position_embeddings=256).seq_len == 256
    assert preset("wikitext103-lt", max_position_embeddings=2048).seq_len == 1024
    with pytest.raises(ValueError, match="unknown preset 'wikitext2'"):
        preset("wikitext2")
    with pytest.raises(ValueError, match="'n_layer' is neither"):
        preset("wikitext103-gpt", n_layer=3)


def byte_tokenizer(text):
    return list(text.encode("utf-8"))


def test_a_local_wikitext_folder_is_prepared_loaded_and_trained_on(tmp_path):
    rng = np.random.default_rng(0)
    words = ["the", "loop", "model", "= = Section = =", "of", "a", "@-@", "valley", "<unk>", "river"]
    for split, n in (("train", 400), ("valid", 60)):
        lines = [" ".join(rng.choice(words, size=12)) + " \n" for _ in range(n)]
        (tmp_path / f"wiki.{split}.tokens").write_text("".join(lines), encoding="utf-8")
    paths = prepare_corpus(tmp_path, byte_tokenizer, chunk_lines=7)
    train_text = (tmp_path / "wiki.train.tokens").read_text(encoding="utf-8")
    assert np.array_equal(np.fromfile(paths["train"], dtype=np.uint16), np.frombuffer(train_text.encode(), np.uint8))
    task = TokenCorpusTask(tmp_path, seq_len=16)
    assert task.vocab_size == max(max(train_text.encode()), max((tmp_path / "wiki.valid.tokens").read_bytes())) + 1
    batch = task.sample(4, random_state=0, split="val")
    assert batch.input_ids.shape == (4, 16) and torch.equal(batch.input_ids, batch.labels)
    model = LoopedForCausalLM(preset("wikitext103-tmlt", vocab_size=128, hidden_size=32, num_attention_heads=2,
                                     n_loops=2, max_position_embeddings=16).config)
    before = lm_loss(model, task, n=32, random_state=1)
    train(model, task, TrainConfig(steps=30, batch_size=8, lr=3e-3, warmup_steps=3), random_state=0)
    assert lm_loss(model, task, n=32, random_state=1) < before - 1.0
    with pytest.raises(ValueError, match=f"holds token id {task.vocab_size - 1} but the model.s vocab_size is 100"):
        task.check_vocab(100)


def test_corpus_errors(tmp_path):
    with pytest.raises(FileNotFoundError, match="train.bin is missing"):
        TokenCorpusTask(tmp_path)
    with pytest.raises(FileNotFoundError, match="no train text"):
        prepare_corpus(tmp_path, byte_tokenizer)
    (tmp_path / "wiki.train.tokens").write_text("abc\n")
    (tmp_path / "wiki.valid.tokens").write_text("abc\n")
    with pytest.raises(ValueError, match=r"ids in \[0, 70000\]"):
        prepare_corpus(tmp_path, lambda text: [0, 70000])
    prepare_corpus(tmp_path, byte_tokenizer)
    with pytest.raises(ValueError, match="fewer than seq_len"):
        TokenCorpusTask(tmp_path, seq_len=16)
    with pytest.raises(ValueError, match="split must be"):
        TokenCorpusTask(tmp_path, seq_len=2).sample(1, split="test")


def test_a_tokenizer_returning_non_integers_raises_instead_of_truncating(tmp_path):
    (tmp_path / "wiki.train.tokens").write_text("abc\n")
    (tmp_path / "wiki.valid.tokens").write_text("abc\n")
    with pytest.raises(ValueError, match="integer ids"):  # 1.9 would silently become id 1
        prepare_corpus(tmp_path, lambda text: [0.7, 1.9, 3.2])
    with pytest.raises(ValueError, match="flat list"):  # a batch of sequences is not one sequence
        prepare_corpus(tmp_path, lambda text: [[1, 2], [3, 4]])
    prepare_corpus(tmp_path, lambda text: np.array([1, 2, 3], dtype=np.int32))  # numpy integers are fine
    assert np.fromfile(tmp_path / "train.bin", dtype=np.uint16).tolist() == [1, 2, 3]


def test_an_empty_split_raises_a_clear_error(tmp_path):
    (tmp_path / "wiki.train.tokens").write_text("")
    (tmp_path / "wiki.valid.tokens").write_text("abc\n")
    with pytest.raises(ValueError, match="no tokens"):
        prepare_corpus(tmp_path, byte_tokenizer)
    (tmp_path / "train.bin").write_bytes(b"")  # e.g. written by another tool
    (tmp_path / "val.bin").write_bytes(np.arange(8, dtype=np.uint16).tobytes())
    with pytest.raises(ValueError, match="holds 0 tokens"):
        TokenCorpusTask(tmp_path, seq_len=4)


def test_a_transformers_style_tokenizer_adds_no_special_tokens_inside_the_corpus(tmp_path):
    class Tokenizer:  # the encode signature of transformers' tokenizers, with a BOS as Llama's adds
        def __call__(self, text):
            raise AssertionError("encode is the method to use")

        def encode(self, text, add_special_tokens=True):
            return ([1] if add_special_tokens else []) + [ord(c) for c in text]

    lines = "".join(f"line {i}\n" for i in range(9))
    (tmp_path / "wiki.train.tokens").write_text(lines)
    (tmp_path / "wiki.valid.tokens").write_text(lines)
    prepare_corpus(tmp_path, Tokenizer(), chunk_lines=2)  # five chunks: five BOS tokens before
    assert np.fromfile(tmp_path / "train.bin", dtype=np.uint16).tolist() == [ord(c) for c in lines]
