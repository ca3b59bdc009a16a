"""The scaling analysis against closed forms, the scaling command, and the README tables against results/."""

import json
import math
from pathlib import Path

import numpy as np
import pytest
import torch

from quest.__main__ import main
from quest.experiments import reproduction_table
from quest.lm import TinyLlama, TinyLlamaConfig
from quest.scaling import SCALING_BITS, _BF16Forward, _quantized_params, bits_params_at_equal_loss

PACKAGE = Path(__file__).resolve().parents[1]
SIZES = [6_656, 26_624, 100_352]


def _law(a, c, noise=(0.0, 0.0, 0.0)):
    return [a + c * math.log(n) + e for n, e in zip(SIZES, noise, strict=True)]


def test_parameters_needed_and_memory_match_the_closed_form():
    # L_p = a_p + c_p ln N exactly: N_p = exp((L* - a_p) / c_p) with L* the BF16 law at the middle size
    laws = {"W1A1": (6.0, -0.25), "W2A2": (5.7, -0.24), "W4A4": (5.2, -0.22), "W8A8": (5.12, -0.22),
            "BF16": (5.1, -0.22)}
    losses = {p: [_law(a, c), _law(a, c)] for p, (a, c) in laws.items()}
    out = bits_params_at_equal_loss(SIZES, losses)
    target = 5.1 - 0.22 * math.log(SIZES[1])
    assert out["mean"]["target_loss"] == pytest.approx(target, abs=1e-12)
    for p, (a, c) in laws.items():
        row = out["mean"]["precisions"][p]
        n_p = math.exp((target - a) / c)
        assert row["slope"] == pytest.approx(c, abs=1e-10)
        assert row["params_needed"] == pytest.approx(n_p, rel=1e-9)
        assert row["memory_bits"] == pytest.approx(SCALING_BITS[p] * n_p, rel=1e-9)
        assert row["params_per_memory"] == pytest.approx(16 * SIZES[1] / (SCALING_BITS[p] * n_p), rel=1e-9)
    # W4A4 needs e^(0.1/0.22) = 1.575x the BF16 parameters at a quarter of the bits: 2.54 per memory
    assert out["mean"]["precisions"]["W4A4"]["params_per_memory"] == pytest.approx(4 * math.exp(-0.1 / 0.22))
    # W1A1 needs exp((0.9 + 0.22 ln N_mid) / 0.25) = 2.9e5 parameters: beyond twice the largest size
    assert out["mean"]["precisions"]["W1A1"]["extrapolated"]
    assert not out["mean"]["precisions"]["W4A4"]["extrapolated"]
    assert out["mean"]["best"] == "W4A4" and out["per_seed_best"] == ["W4A4", "W4A4"]
    assert out["verdict"] == "holds"


def test_verdict_needs_a_majority_of_seeds_and_a_falling_loss():
    bf16 = _law(5.1, -0.22)
    # W2A2 cheaper than W4A4 on every seed -> "does not hold"
    cheap_w2 = {"W2A2": [_law(5.15, -0.22)] * 3, "W4A4": [_law(5.15, -0.22)] * 3, "BF16": [bf16] * 3}
    assert bits_params_at_equal_loss(SIZES, cheap_w2, SCALING_BITS)["verdict"] == "does not hold"
    # W4A4 best on the mean but W2A2 on 2 of 3 seeds -> "not resolved"
    w4 = [_law(5.15, -0.22)] * 3
    w2 = [_law(5.15, -0.22), _law(5.15, -0.22), _law(5.7, -0.22)]
    out = bits_params_at_equal_loss(SIZES, {"W2A2": w2, "W4A4": w4, "BF16": [bf16] * 3}, SCALING_BITS)
    assert out["mean"]["best"] == "W4A4" and out["per_seed_best"] == ["W2A2", "W2A2", "W4A4"]
    assert out["verdict"] == "not resolved"
    # a loss that does not fall with width never reaches the target: zero parameters per memory
    flat = {"W1A1": [[5.0, 5.0, 5.1]] * 2, "W4A4": [_law(5.15, -0.22)] * 2, "BF16": [bf16] * 2}
    row = bits_params_at_equal_loss(SIZES, flat, SCALING_BITS)["mean"]["precisions"]["W1A1"]
    assert math.isinf(row["params_needed"]) and row["params_per_memory"] == 0.0


def test_analysis_rejects_bad_shapes_and_missing_reference():
    with pytest.raises(ValueError, match="shape"):
        bits_params_at_equal_loss(SIZES, {"W4A4": [[1.0, 2.0]], "BF16": [[1.0, 2.0, 3.0]]})
    with pytest.raises(ValueError, match="'BF16' must be in losses"):
        bits_params_at_equal_loss(SIZES, {"W4A4": [[1.0, 2.0, 3.0]]})
    with pytest.raises(ValueError, match="at least two positive sizes"):
        bits_params_at_equal_loss([10.0], {"W4A4": [[1.0]], "BF16": [[1.0]]})


def test_quantized_parameter_count_is_the_ten_block_linears():
    for d, n in zip((16, 32, 64), SIZES, strict=True):
        model = TinyLlama(TinyLlamaConfig(d_model=d, n_layers=2, n_heads=2, multiple_of=16))
        hidden = model.config.ffn_hidden
        assert _quantized_params(model) == 2 * (4 * d * d + 3 * d * hidden) == n


def test_bf16_forward_runs_the_model_in_bfloat16_and_keeps_float32_weights():
    torch.manual_seed(0)
    model = TinyLlama(TinyLlamaConfig(d_model=32, n_layers=1, n_heads=2, multiple_of=32))
    idx = torch.randint(0, 256, (2, 16))
    with torch.no_grad():
        logits = _BF16Forward(model)(idx)
        ref = model(idx)
    assert logits.dtype == torch.bfloat16 and model.lm_head.weight.dtype == torch.float32
    assert float((logits.float() - ref).abs().max() / ref.abs().max()) < 0.02  # bf16 rounding, not garbage


@pytest.mark.slow
def test_scaling_command_quick_stores_every_run_and_its_analysis(tmp_path, figures):
    assert main(["reproduce", "--scaling", "--quick", "--out", str(tmp_path)]) == 0
    assert figures == ["scaling"]
    result = json.loads((tmp_path / "scaling.json").read_text())
    assert result["params"] == SIZES and result["precisions"] == list(SCALING_BITS)
    losses = {p: [[result["runs"][p][str(w)]["final_val_loss"][s] for w in result["widths"]] for s in range(2)]
              for p in SCALING_BITS}
    assert all(np.isfinite(v).all() for v in losses.values())
    # the stored analysis is the analysis of the stored losses
    again = bits_params_at_equal_loss(result["params"], losses)
    assert again["verdict"] == result["analysis"]["verdict"]
    for p in SCALING_BITS:
        assert again["mean"]["precisions"][p]["slope"] == pytest.approx(
            result["analysis"]["mean"]["precisions"][p]["slope"], abs=1e-12)
    # same init per seed and width: after 3 steps W8A8 is within 0.02 of BF16 at every width
    for j in range(3):
        assert abs(np.mean([s[j] for s in losses["W8A8"]]) - np.mean([s[j] for s in losses["BF16"]])) < 0.02
    assert (tmp_path / "scaling.png").stat().st_size > 0 and "params per memory" in (tmp_path / "scaling.md").read_text()



def test_readme_reproduction_table_is_rendered_from_the_stored_results():
    results = PACKAGE / "results"
    stored = {path.stem: json.loads(path.read_text()) for path in results.glob("*.json")}
    assert not stored["scaling"].get("quick") and len(stored["scaling"]["init_seeds"]) == 3
    readme = (PACKAGE / "README.md").read_text()
    begin, end = "<!-- rendered from results/reproduce.json and results/scaling*.json -->\n", "<!-- end rendered -->"
    assert readme.count(begin) == 1 and readme.count(end) == 1
    in_readme = readme.split(begin, 1)[1].split(end, 1)[0].strip()
    rendered = reproduction_table(stored["reproduce"], stored["scaling"], stored.get("scaling_seed1"))
    assert in_readme == rendered.strip()
