"""Device-following training and the GPU scripts: the scripts run on CPU at a tiny size; CUDA checks when present."""

import importlib.util
import json
import sys
from pathlib import Path

import pytest
import torch

HERE = Path(__file__).resolve().parents[1]


def _script(name):
    spec = importlib.util.spec_from_file_location(name, HERE / "benchmarks" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


TINY = ["--widths", "16,32", "--tokens-per-param", "0.005", "--batch-size", "2", "--seq-len", "16", "--seeds", "2",
        "--corpus-bytes", "50000", "--device", "cpu"]


def test_pareto_pilot_in_process_writes_losses_and_the_equal_loss_analysis(tmp_path):
    pareto = _script("gpu_pareto")
    assert pareto.main([*TINY, "--precisions", "BF16,W4A4,W1A1", "--workers", "0", "--out", str(tmp_path)]) == 0
    summary = json.loads((tmp_path / "summary.json").read_text())
    assert set(summary["losses"]) == {"BF16", "W4A4", "W1A1"}
    assert set(summary["runs"].values()) == {"done"}
    assert set(summary["analysis"]["mean"]["precisions"]) == {"BF16", "W4A4", "W1A1"}
    assert summary["ngram"]["order-2 Markov"]["loss"] > 0


def test_pareto_pilot_as_a_subprocess_and_its_budget(tmp_path):
    pareto = _script("gpu_pareto")
    assert pareto.main([*TINY, "--seeds", "1", "--precisions", "W4A4", "--out", str(tmp_path)]) == 0
    assert json.loads((tmp_path / "summary.json").read_text())["runs"] == {"W4A4 seed 0": "done"}
    assert pareto.main([*TINY, "--seeds", "1", "--precisions", "W2A2", "--budget-seconds", "0", "--workers", "0",
                        "--out", str(tmp_path / "none")]) == 0
    assert json.loads((tmp_path / "none" / "summary.json").read_text())["runs"] == {"W2A2 seed 0": "not started (budget)"}


def test_train_lm_moves_batches_to_the_models_device():
    from quest.lm import TinyLlama, TinyLlamaConfig
    from quest.train import TrainConfig, train_lm

    class Reached(Exception):
        pass

    seen = []
    model = TinyLlama(TinyLlamaConfig(d_model=16, n_layers=1, n_heads=2)).to("meta")

    def forward(idx):
        seen.append(idx.device)
        raise Reached

    model.forward = forward
    tokens = torch.randint(0, 256, (500,))
    with pytest.raises(Reached):
        train_lm(model, tokens, tokens, TrainConfig(steps=1, batch_size=2, seq_len=8))
    assert seen == [torch.device("meta")]


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")
def test_quantized_training_and_int4_inference_on_cuda():
    from quest import QuestConfig, convert_, quantize_
    from quest.lm import TinyLlama, TinyLlamaConfig
    from quest.train import TrainConfig, train_lm

    torch.manual_seed(0)
    model = TinyLlama(TinyLlamaConfig(d_model=64, n_layers=1, n_heads=2))
    quantize_(model, QuestConfig(weight_bits=4, act_bits=4))
    model = model.cuda()
    tokens = torch.randint(0, 256, (5000,))
    result = train_lm(model, tokens, tokens, TrainConfig(steps=20, batch_size=4, seq_len=32, eval_every=20))
    assert result.train_loss[-1] < result.train_loss[0]
    convert_(model)
    with torch.no_grad():
        assert model(tokens[:64].view(2, 32).cuda()).isfinite().all()
