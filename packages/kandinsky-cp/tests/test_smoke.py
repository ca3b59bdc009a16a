
from icml25_shared.testing import run_command, run_module

from kandinsky_cp.__main__ import main


def test_demo_quick_writes_table_and_figure(tmp_path):
    table = run_command(main, "demo", tmp_path).table
    assert table.startswith("|") and table.count("\n") >= 3


def test_module_entry_point(tmp_path):
    run = run_module("kandinsky_cp", "reproduce", tmp_path, timeout=120)
    out = run.result
    assert set(out["results"]) == {"CPS1988 log wage", "digits"}
    synthetic = out["synthetic"]
    assert synthetic["kandinsky_worst_dev_mean"] < synthetic["marginal_worst_dev_mean"]
