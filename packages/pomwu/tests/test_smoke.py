import json
import subprocess
import sys

import pytest

from pomwu.__main__ import main


def test_demo_quick_writes_table_and_figure(tmp_path):
    assert main(["demo", "--quick", "--out", str(tmp_path)]) == 0
    table = (tmp_path / "demo.md").read_text()
    assert table.startswith("| learner") and table.count("\n") >= 8
    assert "POMWU | oracle | 1.00" in table
    assert (tmp_path / "demo.png").stat().st_size > 1000


def test_module_entry_point_reproduce_quick(tmp_path):
    done = subprocess.run([sys.executable, "-m", "pomwu", "reproduce", "--quick", "--out", str(tmp_path)],
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    out = json.loads((tmp_path / "reproduce.json").read_text())
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
    assert (tmp_path / "reproduce.png").stat().st_size > 1000
