"""The precision-gap protocol: n-gram tables against brute force, the gate, the rules and the stored report."""

import json
import math

import torch

from quest.__main__ import main
from quest.lm import ngram_loss


def test_ngram_loss_equals_a_brute_force_count():
    g = torch.Generator().manual_seed(0)
    train = torch.randint(0, 3, (400,), generator=g)
    val = torch.randint(0, 3, (100,), generator=g)
    alpha = 0.5
    counts, context = {}, {}
    for a, b, c in zip(train[:-2].tolist(), train[1:-1].tolist(), train[2:].tolist(), strict=True):
        counts[(a, b, c)] = counts.get((a, b, c), 0) + 1
        context[(a, b)] = context.get((a, b), 0) + 1
    expected = -sum(math.log((counts.get((a, b, c), 0) + alpha) / (context.get((a, b), 0) + 3 * alpha))
                    for a, b, c in zip(val[:-2].tolist(), val[1:-1].tolist(), val[2:].tolist(), strict=True)) / 98
    assert math.isclose(ngram_loss(train, val, order=2, alphas=(alpha,), vocab_size=3)["loss"], expected,
                        rel_tol=1e-12)


def test_gap_protocol_quick_applies_the_gate_first(tmp_path, figures):
    assert main(["reproduce", "--gap", "cpu", "--quick", "--out", str(tmp_path)]) == 0
    assert figures == ["gap-cpu"]
    report = json.loads((tmp_path / "gap-cpu.json").read_text())
    assert set(report["runs"]) == {"FP32 d=16", "W4A4 d=16", "W1A1 d=16"}
    assert report["rules"]["0 gate"]["verdict"] == "fails"  # 2 steps cannot beat the order-2 table
    assert report["rules"]["1 W1A1 costs more than W4A4 (d=16)"]["verdict"] == "not read (trivial regime)"
    gap = report["runs"]["W4A4 d=16"]["gap_to_fp32"]
    fp, w4 = report["runs"]["FP32 d=16"]["losses"], report["runs"]["W4A4 d=16"]["losses"]
    assert gap["per_seed"] == [b - a for a, b in zip(fp, w4, strict=True)]
    assert (tmp_path / "gap-cpu.png").exists() and (tmp_path / "gap-cpu.md").read_text().startswith("| run |")


def test_gap_runs_leave_the_global_torch_rng_alone(tmp_path):
    from quest.scaling import GAP_PROTOCOLS, run_gap_cells

    tiny = {**GAP_PROTOCOLS["confirm"], "widths": [16], "steps": 2, "n_seeds": 1, "eval_every": 2, "eval_batches": 1,
            "corpus_bytes": 30_000, "precisions": {"W4A4": [4, "quest", "half"]}}
    before = torch.random.get_rng_state()
    run_gap_cells(tiny, tmp_path, random_state=3)
    assert torch.equal(torch.random.get_rng_state(), before)  # inits and quantize_ draw from forked generators
    first = json.loads((tmp_path / "W4A4-d16-seed0.json").read_text())["final_val_loss"]
    (tmp_path / "W4A4-d16-seed0.json").unlink()
    torch.manual_seed(12345)  # whatever the caller's global state, the run is the same
    run_gap_cells(tiny, tmp_path, random_state=3)
    assert json.loads((tmp_path / "W4A4-d16-seed0.json").read_text())["final_val_loss"] == first
