
from icml25_shared.testing import run_command, run_module

from quest.__main__ import main


def test_demo_quick_writes_table_and_figure(tmp_path):
    table = run_command(main, "demo", tmp_path).table
    assert table.startswith("|") and table.count("\n") >= 3
    assert "| int4 |" in table and "(default)" in table


def test_module_entry_point(tmp_path):
    run = run_module("quest", "reproduce", tmp_path, timeout=300)
    result = run.result
    assert set(result["runs"]) == {"full precision", "QuEST W4A4", "STE W4A4 (no Hadamard)", "LSQ W4A4",
                                   "QuEST W1A1"}
    assert all(not run["diverged"] for run in result["runs"].values())
    assert run.figure is not None
