import json
import subprocess
import sys

from fastpd.__main__ import main


def test_demo_quick_writes_table_and_figure(tmp_path):
    assert main(["demo", "--quick", "--out", str(tmp_path)]) == 0
    table = (tmp_path / "demo.md").read_text()
    assert table.startswith("|") and table.count("\n") >= 3
    assert (tmp_path / "demo.png").stat().st_size > 1000


def test_module_entry_point(tmp_path):
    done = subprocess.run([sys.executable, "-m", "fastpd", "reproduce", "--quick", "--out", str(tmp_path)],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    res = json.loads((tmp_path / "reproduce.json").read_text())
    mse = res["mse"]
    # the paper's claim, at quick scale (seeded): FastPD's error falls with n, path-dependent stays biased
    for t in ("m12", "shap1"):
        assert mse["fastpd"]["5000"][t]["mean"] < 0.5 * mse["fastpd"]["500"][t]["mean"]
        assert mse["path-dependent"]["5000"][t]["mean"] > 2 * mse["fastpd"]["5000"][t]["mean"]
    assert (tmp_path / "reproduce.png").stat().st_size > 1000
