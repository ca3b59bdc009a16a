import subprocess
import sys

from corrgcv.__main__ import main


def test_demo_quick_writes_table_and_figure(tmp_path):
    assert main(["demo", "--quick", "--out", str(tmp_path)]) == 0
    table = (tmp_path / "demo.md").read_text()
    assert table.startswith("|") and table.count("\n") >= 3
    assert (tmp_path / "demo.png").stat().st_size > 1000


def test_module_entry_point(tmp_path):
    done = subprocess.run([sys.executable, "-m", "corrgcv", "reproduce", "--quick", "--out", str(tmp_path)],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert (tmp_path / "reproduce.json").exists()
