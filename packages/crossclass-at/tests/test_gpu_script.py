"""The GPU script runs end to end at a tiny size on the CPU."""

import importlib.util
import json
from pathlib import Path

import pytest


def test_gpu_script_runs_tiny_on_cpu(tmp_path):
    path = Path(__file__).resolve().parents[1] / "benchmarks/gpu.py"
    spec = importlib.util.spec_from_file_location("crossclass_gpu", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    out = module.main(["--device", "cpu", "--tiny", "--out", str(tmp_path / "gpu.json")])
    stored = json.loads((tmp_path / "gpu.json").read_text())
    assert stored["checks"].keys() == out["checks"].keys()
    assert stored["checks"]["trainer_pgd-at_with_cas_monitor"]["parameters_on"] == "cpu"
    assert len(stored["checks"]["trainer_trades_with_cas_monitor"]["cas"]) == 2
    assert stored["checks"]["class_attribution_pgd-at_shape"][0] == 10


def test_gpu_grid_runs_tiny_on_cpu_and_reads_the_rules(tmp_path):
    pytest.importorskip("mlxtend")
    path = Path(__file__).resolve().parents[1] / "benchmarks/gpu.py"
    spec = importlib.util.spec_from_file_location("crossclass_gpu_grid", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    module.main(["--device", "cpu", "--tiny", "--grid", "--grid-model", "small", "--grid-epochs", "2",
                 "--grid-seeds", "3", "--out", str(tmp_path / "gpu-grid.json")])
    grid = json.loads((tmp_path / "gpu-grid.json").read_text())["grid"]
    variants = ["pgd-at", "trades", "label-smoothing", "self-distillation"]
    assert [(c["variant"], c["seed"]) for c in grid["cells"]] == [(v, 3) for v in variants]
    assert grid["complete_seeds"] == 1
    for v in variants:  # one file per finished cell, with every epoch and the eps warm-up of the training attack
        cell = json.loads((tmp_path / "grid" / f"grid-small-noise20-{v}-seed3.json").read_text())
        assert [h["epoch"] for h in cell["history"]] == [1, 2]
        assert [h["train_eps"] for h in cell["history"]] == pytest.approx([0.06, 0.12])
        assert cell["variant"] == v and cell["label_noise"] == 0.2
    rules = grid["summary"]["rules"]
    pgd = grid["summary"]["variants"]["pgd-at"]
    pgd_cell = grid["cells"][0]
    assert rules["best_exceeds_last_on_test_all_seeds"] == (pgd_cell["test"]["best"]["robust"]
                                                            > pgd_cell["test"]["last"]["robust"])
    assert pgd["test_gap"] == pytest.approx(pgd_cell["test_robust_best_minus_last"])
    assert set(rules["soft_labels"]) == {"label-smoothing", "self-distillation"}
