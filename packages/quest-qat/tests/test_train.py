"""Training entry point: loss falls, checkpoints resume exactly, torchrun (gloo) equals one process
(acceptance 6), and a Hugging Face LlamaForCausalLM built in code quantizes, trains and converts."""

import json
import math
import os
import subprocess
import sys

import pytest
import torch

from quest import Int4Linear, QuestConfig, QuestLinear, convert_, quantize_
from quest.lm import ByteTokenizer, TinyLlama, TinyLlamaConfig, stdlib_corpus
from quest.train import TrainConfig, make_splits, train_lm
from quest.train import main as train_main

SMALL = TinyLlamaConfig(d_model=128, n_layers=1, n_heads=2)


@pytest.fixture(scope="module")
def splits():
    return make_splits(stdlib_corpus(120_000))


def test_corpus_and_tokenizer_roundtrip():
    corpus = stdlib_corpus(5000)
    assert len(corpus) == 5000 and corpus == stdlib_corpus(5000)
    tok = ByteTokenizer()
    text = corpus.decode("utf-8", errors="ignore")[:500] + " é∑"
    assert tok.decode(tok.encode(text)) == text
    assert int(tok.encode(corpus).max()) < 256


def test_quest_w4a4_training_loss_falls(splits):
    torch.manual_seed(0)
    model = quantize_(TinyLlama(SMALL), QuestConfig())
    cfg = TrainConfig(steps=24, batch_size=8, seq_len=48, lr=3e-3, eval_every=12, eval_batches=2)
    res = train_lm(model, *splits, cfg)
    assert not res.diverged and len(res.train_loss) == 24 and res.tokens_seen == 24 * 8 * 48
    assert res.train_loss[0] == pytest.approx(math.log(256), abs=0.1)  # uniform over bytes at init
    assert res.val_loss[-1] < res.val_loss[0] < res.train_loss[0] - 1.0


def test_checkpoint_resume_reproduces_uninterrupted_run(splits, tmp_path):
    base = dict(steps=6, batch_size=4, seq_len=32, eval_every=3, eval_batches=1)
    torch.manual_seed(1)
    straight = quantize_(TinyLlama(SMALL), QuestConfig())
    train_lm(straight, *splits, TrainConfig(**base))
    torch.manual_seed(1)
    first = quantize_(TinyLlama(SMALL), QuestConfig())
    train_lm(first, *splits, TrainConfig(**base, checkpoint_dir=str(tmp_path), checkpoint_every=3))
    torch.manual_seed(2)  # different init: everything must come from the checkpoint
    resumed = quantize_(TinyLlama(SMALL), QuestConfig())
    train_lm(resumed, *splits, TrainConfig(**base, resume_from=str(tmp_path / "step_3.pt")))
    for (name, a), b in zip(straight.state_dict().items(), resumed.state_dict().values(), strict=True):
        assert torch.equal(a, b), name


def test_torchrun_two_processes_equal_one_process(tmp_path):
    """2 gloo ranks x 2 sequences == 1 process x 4 sequences; parameters agree to 2e-5 after 3 steps
    (DDP averages per-rank gradients: a different float summation order, nothing else)."""
    common = ["--steps", "3", "--batch-size", "4", "--seq-len", "32", "--eval-every", "3", "--n-layers", "1",
              "--corpus-bytes", "60000"]
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    assert train_main([*common, "--out", str(tmp_path / "one")]) == 0
    two = subprocess.run([sys.executable, "-m", "torch.distributed.run", "--nproc_per_node", "2",
                          "--master_port", "29731", "-m", "quest.train", *common, "--out", str(tmp_path / "two")],
                         capture_output=True, text=True, timeout=300, env=env)
    assert two.returncode == 0, two.stderr[-3000:]
    a = torch.load(tmp_path / "one" / "final.pt")
    b = torch.load(tmp_path / "two" / "final.pt")
    assert a.keys() == b.keys()
    diffs = {k: (a[k].float() - b[k].float()).abs().max().item() for k in a}
    assert max(diffs.values()) < 2e-5, diffs
    moved = torch.load(tmp_path / "one" / "final.pt")["blocks.0.w1.weight"].std()
    assert moved > 0
    la = json.loads((tmp_path / "one" / "result.json").read_text())["train_loss"]
    lb = json.loads((tmp_path / "two" / "result.json").read_text())["train_loss"]
    assert la == pytest.approx(lb, abs=1e-5)


def test_hugging_face_llama_quantize_train_convert(splits):
    pytest.importorskip("transformers")
    from quest.lm import hf_tiny_llama

    model = hf_tiny_llama(d_model=128, n_layers=2, n_heads=2, hidden=256, random_state=0)
    quantize_(model, QuestConfig())
    swapped = [n for n, m in model.named_modules() if isinstance(m, QuestLinear)]
    assert len(swapped) == 14 and not any("lm_head" in n for n in swapped)  # 7 linears per block
    res = train_lm(model, *splits, TrainConfig(steps=4, batch_size=4, seq_len=32, eval_every=4, eval_batches=1))
    assert not res.diverged and res.train_loss[-1] < res.train_loss[0]
    model.eval()
    idx = torch.randint(0, 256, (2, 16))
    with torch.no_grad():
        fake = model(idx).logits
    convert_(model)
    assert sum(isinstance(m, Int4Linear) for m in model.modules()) == 14
    with torch.no_grad():
        real = model(idx).logits
    assert torch.allclose(real, fake, rtol=1e-5, atol=1e-5 * fake.abs().max().item())


def test_train_config_validation(splits):
    with pytest.raises(ValueError, match="steps must be an int >= 1"):
        train_lm(TinyLlama(SMALL), *splits, TrainConfig(steps=0))
    with pytest.raises(ValueError, match="shorter than seq_len"):
        train_lm(TinyLlama(SMALL), splits[0][:10], splits[1], TrainConfig(steps=1, seq_len=64))


def test_train_config_rejects_wrong_types_and_values():
    from quest.train import TrainConfig

    with pytest.raises(TypeError, match="TrainConfig: steps must be an int >= 1; got str"):
        TrainConfig(steps="10").validate()
    with pytest.raises(ValueError, match="TrainConfig: warmup_frac must be a float in \\[0, 1\\); got 1.0"):
        TrainConfig(warmup_frac=1.0).validate()
    with pytest.raises(TypeError, match="seed"):
        TrainConfig(seed=7)  # the field is random_state
