"""The GPU script runs end to end at a tiny size on the CPU."""

import importlib.util
import json
from pathlib import Path


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
