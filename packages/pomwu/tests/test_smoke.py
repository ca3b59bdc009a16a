
import pytest
from icml25_shared.testing import run_command, run_module

from pomwu.__main__ import main


def test_demo_quick_writes_table_and_figure(tmp_path):
    table = run_command(main, "demo", tmp_path).table
    assert table.startswith("| learner") and table.count("\n") >= 8
    assert "POMWU | oracle | 1.00" in table


def test_module_entry_point_reproduce_quick(tmp_path):
    run = run_module("pomwu", "reproduce", tmp_path, timeout=300)
    out = run.result
    assert out["setup"]["n_agents"] == 528 and out["setup"]["n_links"] == 76 and out["setup"]["n_contexts"] == 10
    for feedback in ("expected", "sampled"):
        assert set(out[feedback]["results"]) == {"POMWU (predicted)", "cHedge (predicted)", "POMWU (true)",
                                                 "cHedge (true)", "OMWU", "Hedge"}
        # the seed spread's first seed is the main table's run; later seeds redraw the whole setup
        spread = out["seed_spread_predicted"][feedback]
        assert [r["seed"] for r in spread["per_seed"]] == [0, 1, 2]
        first = spread["per_seed"][0]
        for name in ("POMWU", "cHedge"):
            assert first[name] == out[feedback]["results"][f"{name} (predicted)"]["avg_travel_time"]
        rel = [r["POMWU"] / r["cHedge"] - 1 for r in spread["per_seed"]]
        assert spread["mean_relative_difference"] == pytest.approx(sum(rel) / 3, abs=1e-15)
        assert len({r["POMWU"] for r in spread["per_seed"]}) == 3
    assert run.figure is not None
