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
        assert set(out[feedback]["results"]) == {
            "POMWU (predicted)",
            "cHedge (predicted)",
            "POMWU (true)",
            "cHedge (true)",
            "OMWU",
            "Hedge",
        }
        # the seed spread's first seed is the main table's run; later seeds redraw the whole setup
        spread = out["seed_spread_predicted"][feedback]
        assert [r["seed"] for r in spread["per_seed"]] == [0, 1, 2, 3, 4]
        first = spread["per_seed"][0]
        for name in ("POMWU", "cHedge"):
            assert first[name] == out[feedback]["results"][f"{name} (predicted)"]["avg_travel_time"]
        rel = [(r["POMWU"] - r["cHedge"]) / abs(r["cHedge"]) for r in spread["per_seed"]]
        assert spread["mean_relative_difference"] == pytest.approx(sum(rel) / 5, abs=1e-15)
        assert len({r["POMWU"] for r in spread["per_seed"]}) == 5
        lo, hi = spread["ci95_relative_difference"]
        assert lo < spread["mean_relative_difference"] < hi
        # the variant filing losses under the revealed true context runs on the same seeds and setups
        truth = out["seed_spread_predicted_file_under_truth"][feedback]
        assert [r["seed"] for r in truth["per_seed"]] == [0, 1, 2, 3, 4]
        assert [r["prediction_accuracy"] for r in truth["per_seed"]] == [
            r["prediction_accuracy"] for r in spread["per_seed"]
        ]
    assert run.figure is not None


def test_t_interval_and_verdict_rule():
    import numpy as np
    from scipy import stats

    from pomwu.experiments import t_interval, verdict

    x = np.array([-0.004, -0.001, -0.003, -0.002, -0.0025])
    lo, hi = t_interval(x)
    half = stats.t.ppf(0.975, 4) * x.std(ddof=1) / np.sqrt(5)
    assert (lo, hi) == pytest.approx((x.mean() - half, x.mean() + half), rel=1e-12)
    assert verdict((lo, hi)) == "POMWU <= cHedge"
    assert verdict((-0.002, 0.003)).startswith("tie")
    assert verdict((0.001, 0.003)) == "POMWU > cHedge"
