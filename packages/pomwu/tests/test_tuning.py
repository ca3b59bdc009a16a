"""The tuned-step-size path of ``reproduce`` (``--tune-step-size``): the search rule and the CLI at --quick size."""

import json
import math

import numpy as np
import pytest

from pomwu.__main__ import main
from pomwu.experiments import CLAUSES, search_step_size


def test_search_widens_until_the_minimiser_is_interior():
    calls = []

    def objective(eta):
        calls.append(eta)
        return (math.log(eta) - math.log(40.0)) ** 2

    s = search_step_size(objective, (7.5, 15.0, 30.0))
    assert s.step_sizes == (7.5, 15.0, 30.0, 60.0) and s.best == 30.0 and s.interior
    assert sorted(calls) == list(s.step_sizes)  # every step size evaluated once
    assert s.values == tuple(objective(e) for e in s.step_sizes)


def test_search_stops_after_max_extensions_and_flags_the_edge():
    s = search_step_size(lambda eta: eta, (7.5, 15.0, 30.0), max_extensions=2)
    assert s.step_sizes == (1.875, 3.75, 7.5, 15.0, 30.0) and s.best == 1.875 and not s.interior
    with pytest.raises(ValueError, match="grid"):
        search_step_size(lambda eta: eta, (0.0, 1.0))


def test_reproduce_tune_step_size_quick(tmp_path):
    assert main(["reproduce", "--quick", "--tune-step-size", "--out", str(tmp_path)]) == 0
    out = json.loads((tmp_path / "reproduce_tuned.json").read_text())
    assert (tmp_path / "reproduce_tuned.png").exists() and (tmp_path / "reproduce_tuned.md").exists()
    proto = out["protocol"]
    assert proto["tuning_seeds"] == [10] and proto["test_seeds"] == [0, 1]
    for feedback in ("expected", "sampled"):
        for name, search in out["tuning"][feedback].items():
            # the chosen step size is the tuning minimiser, and the one the test used
            assert search["best"] == search["step_sizes"][int(np.argmin(search["values"]))]
            assert out["step_sizes"][feedback][name] == search["best"]
        block = out["test"][feedback]
        assert [r["seed"] for r in block["per_seed"]] == [0, 1]
        for clause in CLAUSES:
            v = block["clauses"][clause.name]
            rel = [(r[clause.first] - r[clause.second]) / abs(r[clause.second]) for r in block["per_seed"]]
            assert v["mean_relative_difference"] == pytest.approx(np.mean(rel), abs=1e-15)
            lo, hi = v["ci95_relative_difference"]
            assert v["holds"] == (clause.low <= lo and hi <= clause.high)
    assert out["holds_in_both_feedback_models"] == {
        c.name: all(out["test"][fb]["clauses"][c.name]["holds"] for fb in ("expected", "sampled")) for c in CLAUSES
    }


def test_tune_flag_is_for_reproduce_only(tmp_path, capsys):
    with pytest.raises(SystemExit):
        main(["demo", "--tune-step-size", "--out", str(tmp_path)])
    assert "unrecognized arguments: --tune-step-size" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        main(["reproduce", "--help"])
    assert "--tune-step-size" in capsys.readouterr().out


def test_relative_difference_keeps_its_sign_for_negative_travel_times():
    """Normalised travel times go below 0 when agents beat the best random profile; 'smaller is better' must
    still read as a negative difference (the plain ratio first / second - 1 would flip it)."""
    from pomwu.experiments import relative_difference

    assert relative_difference(2.0, 1.0) == pytest.approx(2.0 / 1.0 - 1)
    assert relative_difference(-0.0035, -0.0034) < 0 < relative_difference(-0.0034, -0.0035)
    assert relative_difference(-0.0035, -0.0034) == pytest.approx(-0.0001 / 0.0034)
