import json
import subprocess
import sys

from feature_markets.__main__ import main


def test_demo_quick_writes_table_and_figure(tmp_path):
    assert main(["demo", "--quick", "--out", str(tmp_path)]) == 0
    table = (tmp_path / "demo.md").read_text()
    assert "market-aware (MASC)" in table and "uniform budgets" in table
    assert (tmp_path / "demo.png").stat().st_size > 1000


def test_module_entry_point_reproduce(tmp_path):
    done = subprocess.run([sys.executable, "-m", "feature_markets", "reproduce", "--quick", "--out", str(tmp_path)],
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    payload = json.loads((tmp_path / "reproduce.json").read_text())
    assert payload["exponents"] == [2, 6, 10]
    assert set(payload["results"]) == {"naive", "budget-as-feature", "market line search",
                                       "strategic, fixed price", "market-aware (MASC)"}
    assert (tmp_path / "reproduce.png").exists()
