"""The accelerator script runs end to end at its tiny size on the CPU (it is run on a GPU separately)."""

import importlib.util
import json
from pathlib import Path

SCRIPT = Path(__file__).resolve().parents[1] / "benchmarks" / "gpu.py"


def test_gpu_script_runs_tiny_on_cpu(tmp_path, capsys):
    spec = importlib.util.spec_from_file_location("wmarkgpt_gpu_script", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    out = tmp_path / "gpu.json"
    assert module.main(["--device", "cpu", "--tiny", "--no-tests", "--out", str(out)]) == 0
    res = json.loads(out.read_text())
    assert set(res["timings"]) == {"cpu float32", "cpu bfloat16"}
    assert all(r["score_seconds"] > 0 and len(r["first_scores"]) == 4 for r in res["timings"].values())
    assert all(1.0 <= s <= 5.0 for r in res["timings"].values() for s in r["first_scores"])
