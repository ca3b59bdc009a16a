"""The precision-gap protocol: n-gram tables against brute force, the gate, the rules and the stored report."""

import json
import math

import numpy as np
import pytest
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
    # The folder's runs are reused only under the protocol that made them: a longer run or another root seed
    # into the same folder would have read the 2-step files (and the small corpus's n-gram gate) as its own.
    with pytest.raises(ValueError, match="holds runs of another protocol or root seed"):
        run_gap_cells({**tiny, "steps": 2000}, tmp_path, random_state=3)
    with pytest.raises(ValueError, match="holds runs of another protocol or root seed"):
        run_gap_cells(tiny, tmp_path, random_state=4)


def test_welch_interval_matches_scipy():
    from scipy import stats

    from quest.scaling import _welch_interval

    a, b = np.array([0.05, 0.02, 0.04, 0.03]), np.array([0.30, 0.41, 0.36])
    iv = _welch_interval(a, b)
    assert math.isclose(iv.estimate, a.mean() - b.mean(), rel_tol=1e-12)
    for end in (iv.low, iv.high):  # each end is where Welch's two-sided test rejects at exactly 5%
        assert math.isclose(stats.ttest_ind(a - end, b, equal_var=False).pvalue, 0.05, rel_tol=1e-6)
    with pytest.raises(ValueError, match="at least two values"):
        _welch_interval([1.0], b)


def _report(width, fp, w4, gate="passes"):
    gaps = [b - a for a, b in zip(fp, w4, strict=True)]
    return {"rules": {"0 gate": {"verdict": gate}},
            "runs": {f"FP32 d={width}": {"precision": "FP32", "width": width, "complete": True, "losses": fp},
                     f"W4A4 d={width}": {"precision": "W4A4", "width": width, "complete": True, "losses": w4,
                                         "gap_to_fp32": {"per_seed": gaps}}}}


def test_gap_width_trend_reads_shrinks_grows_and_the_gate():
    from quest.scaling import _welch_interval, gap_width_trend

    narrow = _report(64, [1.70, 1.68, 1.71], [1.75, 1.74, 1.76])  # gaps 0.05, 0.06, 0.05
    wide = _report(128, [1.50, 1.52, 1.51], [1.51, 1.54, 1.52])  # gaps 0.01, 0.02, 0.01
    rule = gap_width_trend(narrow, wide, precisions=["W4A4"])["3 W4A4 gap to FP32, d=64 -> d=128"]
    iv = _welch_interval([0.01, 0.02, 0.01], [0.05, 0.06, 0.05])
    assert rule["verdict"] == "shrinks" and math.isclose(rule["difference"], iv.estimate, abs_tol=1e-12)
    assert math.isclose(rule["Welch ci95"][1], iv.high, abs_tol=1e-12) and iv.high < 0
    assert gap_width_trend(wide, narrow, precisions=["W4A4"])["3 W4A4 gap to FP32, d=128 -> d=64"]["verdict"] == "grows"
    noisy = _report(128, [1.50, 1.52, 1.51], [1.60, 1.52, 1.51])  # gaps 0.10, 0.00, 0.00
    assert gap_width_trend(narrow, noisy, precisions=["W4A4"])["3 W4A4 gap to FP32, d=64 -> d=128"]["verdict"] == \
        "not resolved"
    trivial = _report(128, [2.50, 2.52, 2.51], [2.51, 2.54, 2.52], gate="fails")
    assert gap_width_trend(narrow, trivial, precisions=["W4A4"])["3 W4A4 gap to FP32, d=64 -> d=128"]["verdict"] \
        .startswith("not read")
    assert gap_width_trend(narrow, wide)["3 W1A1 gap to FP32, d=64 -> d=128"]["verdict"] == "not run (W1A1 incomplete)"


def test_gap_width_protocol_quick_reads_the_narrow_report(tmp_path, figures):
    assert main(["reproduce", "--gap", "width", "--quick", "--out", str(tmp_path)]) == 0
    report = json.loads((tmp_path / "gap-width.json").read_text())
    assert report["rules"]["3 gap to FP32 against width"]["verdict"] == "not run (no gap-confirm.json)"
    stored = _report(16, [1.0, 1.1], [1.2, 1.3])
    (tmp_path / "gap-confirm.json").write_text(json.dumps(stored))
    assert main(["reproduce", "--gap", "width", "--quick", "--out", str(tmp_path)]) == 0
    rules = json.loads((tmp_path / "gap-width.json").read_text())["rules"]
    assert rules["3 W4A4 gap to FP32, d=16 -> d=16"]["verdict"].startswith("not read")  # 2 steps: gate fails


def _write_runs(folder, precision, losses, *, diverged=False):
    folder.mkdir(parents=True, exist_ok=True)
    for i, loss in enumerate(losses):
        (folder / f"{precision.replace(' ', '_')}-d64-seed{i}.json").write_text(json.dumps(
            {"precision": precision, "width": 64, "seed_index": i, "final_val_loss": loss, "diverged": diverged,
             "cpu_seconds": 1.0}))


def test_gap_ablation_rules_pair_new_cells_with_stored_runs_across_folders(tmp_path):
    from scipy import stats

    from quest.experiments import gap_table
    from quest.scaling import gap_verdicts

    stored, extra = tmp_path / "stored", tmp_path / "extra"
    _write_runs(stored, "FP32", [1.70, 1.68, 1.72])
    _write_runs(stored, "W4A4", [1.75, 1.74, 1.76])
    (stored / "ngram.json").write_text(json.dumps({"order-2 Markov": {"loss": 2.0, "alpha": 0.1}}))
    _write_runs(extra, "W4A4 no Hadamard", [1.80, 1.77, 1.83])  # +0.05, +0.03, +0.07 over W4A4: holds
    _write_runs(extra, "STE W4A4", [1.75, 1.79, 1.72])  # 0, +0.05, -0.04: not resolved
    report = gap_verdicts([stored, extra], n_seeds=3)
    assert "1 W1A1 costs more than W4A4 (d=64)" not in report["rules"]  # no W1A1 run: no rule about it
    hadamard = report["rules"]["4 Hadamard helps W4A4 (d=64)"]
    diff = np.array([1.80, 1.77, 1.83]) - [1.75, 1.74, 1.76]
    low, high = stats.t.interval(0.95, 2, loc=diff.mean(), scale=stats.sem(diff))
    assert hadamard["verdict"] == "holds"
    assert np.allclose(hadamard["W4A4 no Hadamard - W4A4 per seed"], diff)
    assert np.allclose(hadamard["ci95"], [low, high]) and low > 0
    assert report["rules"]["5 trust beats STE (d=64)"]["verdict"] == "not resolved"
    gap = report["runs"]["STE W4A4 d=64"]["gap_to_fp32"]
    assert np.allclose(gap["per_seed"], [0.05, 0.11, 0.0])
    _write_runs(extra, "STE W4A4", [1.70, 1.69])  # lower than W4A4 on every seed, but seed 2 missing
    (extra / "STE_W4A4-d64-seed2.json").unlink()
    report = gap_verdicts([stored, extra], n_seeds=3)
    assert report["rules"]["5 trust beats STE (d=64)"]["verdict"] == "not run (W4A4 or STE W4A4 incomplete)"
    _write_runs(extra, "STE W4A4", [1.70, 1.69, 1.71])
    assert gap_verdicts([stored, extra], n_seeds=3)["rules"]["5 trust beats STE (d=64)"]["verdict"] == "does not hold"
    # a second report pairing with the same stored runs lists them (and the same gate) once
    alone = gap_verdicts(stored, n_seeds=3)
    table = gap_table(alone, report)
    assert table.count("| FP32 d=64 |") == 1 and table.count("| 0 gate (d=64) | passes |") == 1
    assert table.count("| W4A4 no Hadamard d=64 |") == 1


def test_gap_width_trend_refuses_a_string_of_precisions_mixed_widths_and_nan_gaps():
    from quest.scaling import gap_width_trend

    narrow = _report(64, [1.70, 1.68, 1.71], [1.75, 1.74, 1.76])
    wide = _report(128, [1.50, 1.52, 1.51], [1.51, 1.54, 1.52])
    with pytest.raises(TypeError, match="precisions must be a sequence of precision names, got 'W4A4'"):
        gap_width_trend(narrow, wide, precisions="W4A4")  # read letter by letter before
    mixed = {**narrow, "runs": {**narrow["runs"], **{f"{k} (wide)": v for k, v in wide["runs"].items()}}}
    with pytest.raises(ValueError, match=r"small must be a report of one width, got widths \[64, 128\]"):
        gap_width_trend(mixed, wide, precisions=["W4A4"])
    broken = _report(128, [1.50, float("nan"), 1.51], [1.51, 1.54, 1.52])
    with pytest.raises(ValueError, match="W4A4 gaps to FP32 must be finite"):
        gap_width_trend(narrow, broken, precisions=["W4A4"])
