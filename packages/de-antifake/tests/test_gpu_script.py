"""The accelerator script runs end to end at its tiny size on the CPU (it is run on a GPU separately)."""

import importlib.util
import json
from pathlib import Path

SCRIPT = Path(__file__).resolve().parents[1] / "benchmarks" / "gpu.py"


def test_gpu_script_runs_tiny_on_cpu(tmp_path):
    spec = importlib.util.spec_from_file_location("de_antifake_gpu_script", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    out = tmp_path / "gpu.json"
    assert module.main(["--device", "cpu", "--tiny", "--no-tests", "--out", str(out)]) == 0
    res = json.loads(out.read_text())
    assert set(res["timings"]) == {"cpu float32", "cpu bfloat16"}
    assert all(0 < r["max_abs_delta"] <= 0.01 and r["attack_seconds"] > 0 for r in res["timings"].values())
