import subprocess
import sys

from janus_sa.__main__ import main


def test_demo_quick_writes_table_and_figure(tmp_path):
    assert main(["demo", "--quick", "--out", str(tmp_path)]) == 0
    table = (tmp_path / "demo.md").read_text()
    assert table.startswith("|") and table.count("\n") >= 3
    assert (tmp_path / "demo.png").stat().st_size > 1000
    assert "AggregateMismatchError" in table and "0 accepted" in table  # the cheating round is caught


def test_module_entry_point(tmp_path):
    done = subprocess.run([sys.executable, "-m", "janus_sa", "reproduce", "--quick", "--out", str(tmp_path)],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    import json

    out = json.loads((tmp_path / "reproduce.json").read_text())
    janus = [r for r in out["costs"] if r["protocol"] == "janus-exact"]
    assert len({r["upload_bytes"] for r in janus}) == 1 and all(r["verified"] for r in janus)
