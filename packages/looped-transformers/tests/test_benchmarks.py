"""The GPU script runs on CPU at a tiny size, in-process and as parallel processes, and writes its summary."""

import importlib.util
import json
import sys
from pathlib import Path

import numpy as np

SCRIPT = Path(__file__).resolve().parents[1] / "benchmarks" / "gpu_ed.py"
TINY = ["--steps", "3", "--d", "16", "--heads", "2", "--batch", "4", "--seeds", "2", "--test", "8",
        "--min-length", "2", "--max-length", "4", "--alphabet", "3", "--device", "cpu"]


def _module():
    spec = importlib.util.spec_from_file_location("gpu_ed", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    sys.modules["gpu_ed"] = module
    spec.loader.exec_module(module)
    return module


def test_gpu_ed_in_process_writes_runs_baselines_and_summary(tmp_path):
    gpu_ed = _module()
    assert gpu_ed.main([*TINY, "--configs", "LT:2,TMLT:2", "--workers", "0", "--out", str(tmp_path)]) == 0
    summary = json.loads((tmp_path / "summary.json").read_text())
    assert set(summary["models"]) == {"LT r=2", "TMLT r=2"}
    assert set(summary["models"]["LT r=2"]) == {"r_test=2", "r_test=4", "r_test=8"}
    assert len(summary["models"]["LT r=2"]["r_test=2"]["values"]) == 2
    assert set(summary["runs"].values()) == {"done"}
    assert 0 < summary["baselines"]["majority answer"] <= summary["baselines"]["length-only predictor"] <= 1


def test_gpu_ed_baselines_score_the_problems_answer_accuracy_draws(tmp_path):
    from icml25_shared.random import spawn

    gpu_ed = _module()
    args = gpu_ed._parse([*TINY, "--out", str(tmp_path)])
    task = gpu_ed._task(args)
    test_seed = int(spawn(spawn(0, 2)[0], 2)[1].integers(2**31))
    drawn = task.sample(8, test_seed).answers
    rng = np.random.default_rng(test_seed)
    assert [task.problem(rng)[1] for _ in range(8)] == list(drawn)


def test_gpu_ed_parallel_processes_and_the_budget(tmp_path):
    gpu_ed = _module()
    assert gpu_ed.main([*TINY, "--seeds", "1", "--configs", "LT:2", "--out", str(tmp_path)]) == 0
    summary = json.loads((tmp_path / "summary.json").read_text())
    assert summary["runs"] == {"LT r=2 seed 0": "done"}
    assert (tmp_path / "ed-LT-r2-seed0.json").exists()
    assert gpu_ed.main([*TINY, "--seeds", "1", "--configs", "LT:4", "--budget-seconds", "0", "--workers", "0",
                        "--out", str(tmp_path / "none")]) == 0
    assert json.loads((tmp_path / "none" / "summary.json").read_text())["runs"] == {"LT r=4 seed 0": "not started (budget)"}
