
from icml25_shared.testing import run_command, run_module

from janus_sa.__main__ import main


def test_demo_quick_writes_table_and_figure(tmp_path):
    table = run_command(main, "demo", tmp_path).table
    assert table.startswith("|") and table.count("\n") >= 3
    assert "AggregateMismatchError" in table and "0 accepted" in table  # the cheating round is caught


def test_module_entry_point(tmp_path):
    run = run_module("janus_sa", "reproduce", tmp_path, timeout=120)
    out = run.result
    janus = [r for r in out["costs"] if r["protocol"] == "janus-exact"]
    assert len({r["upload_bytes"] for r in janus}) == 1 and all(r["verified"] for r in janus)
