"""The GPU script runs end to end at a tiny size on the CPU (where device and CPU agree exactly)."""

import importlib.util
import json
from pathlib import Path


def test_gpu_script_runs_tiny_on_cpu(tmp_path):
    path = Path(__file__).resolve().parents[1] / "benchmarks/gpu.py"
    spec = importlib.util.spec_from_file_location("equigx_gpu", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    module.main(["--device", "cpu", "--tiny", "--out", str(tmp_path / "gpu.json")])
    checks = json.loads((tmp_path / "gpu.json").read_text())["checks"]
    assert set(checks) == {"shapes", "decoy", "module_equigx_gate_points"}
    for name in ("shapes", "decoy"):
        assert checks[name]["equigx_split_max_rel_diff_vs_cpu"] < 1e-12
        assert checks[name]["degree_max_abs_diff_vs_cpu"] == 0
        assert checks[name]["pgexplainer_finite"] and checks[name]["lri_bernoulli_finite"]
    assert checks["module_equigx_gate_points"]["max_rel_diff_vs_cpu"] < 1e-12
    assert checks["module_equigx_gate_points"]["relative_leak"] < 1e-6
