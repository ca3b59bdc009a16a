from icml25_shared.testing import run_command, run_module

from feature_markets.__main__ import main


def test_demo_quick_writes_table_and_figure(tmp_path):
    table = run_command(main, "demo", tmp_path).table
    assert "market-aware (MASC)" in table and "uniform budgets" in table


def test_module_entry_point_reproduce(tmp_path):
    run = run_module("feature_markets", "reproduce", tmp_path, timeout=300)
    payload = run.result
    assert payload["exponents"] == [2, 6, 10]
    assert set(payload["results"]) == {
        "naive",
        "budget-as-feature",
        "market line search",
        "strategic, fixed price",
        "market-aware (MASC)",
    }
    assert run.figure is not None
