import json
import subprocess
import sys

from quest.__main__ import main


def test_demo_quick_writes_table_and_figure(tmp_path):
    assert main(["demo", "--quick", "--out", str(tmp_path)]) == 0
    table = (tmp_path / "demo.md").read_text()
    assert table.startswith("|") and table.count("\n") >= 3
    assert "| int4 |" in table and "(default)" in table
    assert (tmp_path / "demo.png").stat().st_size > 1000


def test_module_entry_point(tmp_path):
    done = subprocess.run([sys.executable, "-m", "quest", "reproduce", "--quick", "--out", str(tmp_path)],
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    result = json.loads((tmp_path / "reproduce.json").read_text())
    assert set(result["runs"]) == {"full precision", "QuEST W4A4", "STE W4A4 (no Hadamard)", "LSQ W4A4",
                                   "QuEST W1A1"}
    assert all(not run["diverged"] for run in result["runs"].values())
    assert (tmp_path / "reproduce.png").stat().st_size > 1000
