import subprocess
import sys

import numpy as np
import pytest
from icml25_shared.testing import legible_saved_figures, run_command, run_module

from pomwu.__main__ import PAPER, main


def test_demo_quick_writes_table_and_figure(tmp_path, monkeypatch):
    with legible_saved_figures() as checked:  # every shown axis labelled, no overlapping text
        run = run_command(main, "demo", tmp_path)
    assert checked == ["demo"]
    lines = run.table.splitlines()
    assert lines[0].startswith("| learner") and len(lines) == 9
    cells = {tuple(c.strip() for c in line.strip("|").split("|")[:2]): line for line in lines[2:]}
    # seed 0, T = 400: POMWU with oracle predictions has the smallest regret, OMWU (context-blind) the largest
    pomwu_oracle = float(cells[("POMWU", "oracle")].split("|")[4])
    omwu = float(cells[("OMWU", "none")].split("|")[4])
    assert pomwu_oracle == pytest.approx(23.9, abs=0.05) and omwu == pytest.approx(134.1, abs=0.05)
    assert run.figure is not None


@pytest.mark.slow
def test_module_entry_point_reproduce_quick(tmp_path):
    out = run_module("pomwu", "reproduce", tmp_path, timeout=300).result
    assert out["setup"]["n_agents"] == 528 and out["setup"]["n_links"] == 76 and out["setup"]["n_contexts"] == 10
    assert out["setup"]["rounds"] == 120
    assert out["setup"]["prediction_accuracy"] == pytest.approx(0.5333, abs=1e-4)
    assert out["expected"]["results"]["POMWU (predicted)"]["avg_travel_time"] == pytest.approx(0.0196941, rel=1e-5)
    assert out["sampled"]["results"]["Hedge"]["avg_raw_travel_time"] == pytest.approx(50.4424, rel=1e-5)
    for feedback in ("expected", "sampled"):
        assert set(out[feedback]["results"]) == {
            "POMWU (predicted)",
            "cHedge (predicted)",
            "POMWU (true)",
            "cHedge (true)",
            "OMWU",
            "Hedge",
        }
        # the seed comparison's first seed is the main table's run; later seeds redraw the whole setup
        spread = out["seed_spread_predicted"][feedback]
        assert [r["seed"] for r in spread["per_seed"]] == [0, 1, 2, 3, 4]
        first = spread["per_seed"][0]
        for name in ("POMWU", "cHedge"):
            assert first[name] == out[feedback]["results"][f"{name} (predicted)"]["avg_travel_time"]
        rel = np.array([(r["POMWU"] - r["cHedge"]) / abs(r["cHedge"]) for r in spread["per_seed"]])
        assert spread["mean_relative_difference"] == pytest.approx(rel.mean(), abs=1e-15)
        assert spread["seeds_POMWU_faster"] == int(np.sum(rel < 0))
        assert len({r["POMWU"] for r in spread["per_seed"]}) == 5
        truth = out["seed_spread_predicted_file_under_truth"][feedback]
        assert [r["prediction_accuracy"] for r in truth["per_seed"]] == [
            r["prediction_accuracy"] for r in spread["per_seed"]
        ]
    block = out["seed_spread_predicted"]["expected"]
    assert block["mean_relative_difference"] == pytest.approx(-0.0236598, rel=1e-4)
    assert block["ci95_relative_difference"] == pytest.approx([-0.0492870, 0.0019675], rel=1e-4)


def test_seed_comparison_interval_matches_scipy():
    from scipy import stats

    from pomwu.experiments import compare_over_seeds

    a = np.array([-0.0041, -0.0030, -0.0035, -0.0029, -0.0044])
    b = np.array([-0.0040, -0.0031, -0.0033, -0.0028, -0.0044])
    res = compare_over_seeds([{"seed": i, "POMWU": x, "cHedge": y} for i, (x, y) in enumerate(zip(a, b, strict=True))])
    rel = (a - b) / np.abs(b)  # below 0 when POMWU is faster, although the values are negative
    half = stats.t.ppf(0.975, 4) * rel.std(ddof=1) / np.sqrt(5)
    assert res["ci95_relative_difference"] == pytest.approx([rel.mean() - half, rel.mean() + half], rel=1e-10)
    assert res["sd_relative_difference"] == pytest.approx(rel.std(ddof=1))
    assert res["seeds_POMWU_faster"] == 3 and res["mean_POMWU"] == pytest.approx(a.mean())
    assert [r["relative_difference"] for r in res["per_seed"]] == pytest.approx(rel)


def test_seed_streams_are_the_seed_sequence_spawn():
    """The setup and path-sampling streams are ``SeedSequence(seed).spawn(2)`` (the layout of the stored results)."""
    from icml25_shared.random import spawn

    for seed in (0, 3):
        ref = [np.random.default_rng(s) for s in np.random.SeedSequence(seed).spawn(2)]
        for got, want in zip(spawn(seed, 2), ref, strict=True):
            assert np.array_equal(got.random(8), want.random(8))


def test_random_state_reproduces_the_noisy_oracle():
    from pomwu import NoisyOracle, predict_contexts

    z = np.random.default_rng(5).integers(4, size=300)
    old = NoisyOracle(n_contexts=4, error_rate=0.3, random_state=7)
    new = NoisyOracle(n_contexts=4, error_rate=0.3, random_state=7)
    assert np.array_equal(predict_contexts(old, z), predict_contexts(new, z))
    # the default (random_state=0) draws what default_rng(0) draws, as the old seed=0 default did
    rng = np.random.default_rng(0)
    expected = []
    for zt in z[:50]:
        rng.random()  # the error draw (always an error at error_rate=1)
        other = int(rng.integers(3))
        expected.append(other + (other >= zt))
    assert predict_contexts(NoisyOracle(n_contexts=4, error_rate=1.0), z[:50]).tolist() == expected


def test_help_names_the_paper(capsys):
    with pytest.raises(SystemExit) as exc:
        main(["--help"])
    assert exc.value.code == 0
    assert "Prediction-aware Learning in Multi-agent Systems" in capsys.readouterr().out
    assert "ICML 2025" in PAPER


def test_importing_the_cli_is_light():
    code = (
        "import sys, pomwu.__main__; assert 'matplotlib' not in sys.modules and 'pomwu.experiments' not in sys.modules"
    )
    subprocess.run([sys.executable, "-c", code], check=True)
