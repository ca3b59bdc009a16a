"""The tuned-step-size study (``studies/tuned-step-sizes/tune.py``): its search rule and its code path at --quick size."""

import importlib.util
import json
import math
import sys
from pathlib import Path

import numpy as np
import pytest

STUDY = Path(__file__).resolve().parents[1] / "studies" / "tuned-step-sizes" / "tune.py"
pytestmark = pytest.mark.skipif(not STUDY.exists(), reason="the studies folder is not shipped")


@pytest.fixture(scope="module")
def tune():
    spec = importlib.util.spec_from_file_location("pomwu_study_tune", STUDY)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    yield module
    sys.modules.pop(spec.name, None)


def test_search_widens_until_the_minimiser_is_interior(tune):
    calls = []

    def objective(eta):
        calls.append(eta)
        return (math.log(eta) - math.log(40.0)) ** 2

    s = tune.search_step_size(objective, (7.5, 15.0, 30.0))
    assert s.step_sizes == (7.5, 15.0, 30.0, 60.0) and s.best == 30.0 and s.interior
    assert sorted(calls) == list(s.step_sizes)  # every step size evaluated once
    assert s.values == tuple(objective(e) for e in s.step_sizes)


def test_search_stops_after_max_extensions_and_flags_the_edge(tune):
    s = tune.search_step_size(lambda eta: eta, (7.5, 15.0, 30.0), max_extensions=2)
    assert s.step_sizes == (1.875, 3.75, 7.5, 15.0, 30.0) and s.best == 1.875 and not s.interior
    with pytest.raises(ValueError, match="grid"):
        tune.search_step_size(lambda eta: eta, (0.0, 1.0))


def test_relative_difference_keeps_its_sign_for_negative_travel_times(tune):
    assert tune.relative_difference(2.0, 1.0) == pytest.approx(2.0 / 1.0 - 1)
    assert tune.relative_difference(-0.0035, -0.0034) < 0 < tune.relative_difference(-0.0034, -0.0035)
    assert tune.relative_difference(-0.0035, -0.0034) == pytest.approx(-0.0001 / 0.0034)


@pytest.mark.slow
def test_tuned_study_quick(tune, tmp_path):
    assert tune.main(["--quick", "--out", str(tmp_path)]) == 0
    out = json.loads((tmp_path / "reproduce_tuned.json").read_text())
    assert (tmp_path / "reproduce_tuned.png").exists() and (tmp_path / "reproduce_tuned.md").exists()
    proto = out["protocol"]
    assert proto["tuning_seeds"] == [10] and proto["test_seeds"] == [0, 1] and proto["rounds"] == 60
    for feedback in ("expected", "sampled"):
        for name, search in out["tuning"][feedback].items():
            # the chosen step size is the tuning minimiser, and the one the test used
            assert search["best"] == search["step_sizes"][int(np.argmin(search["values"]))]
            assert out["step_sizes"][feedback][name] == search["best"]
        block = out["test"][feedback]
        assert [r["seed"] for r in block["per_seed"]] == [0, 1]
        for clause in tune.CLAUSES:
            v = block["clauses"][clause.name]
            rel = [(r[clause.first] - r[clause.second]) / abs(r[clause.second]) for r in block["per_seed"]]
            assert v["mean_relative_difference"] == pytest.approx(np.mean(rel), abs=1e-15)
            lo, hi = v["ci95_relative_difference"]
            assert v["holds"] == (clause.low <= lo and hi <= clause.high)
    # seed 10, T = 60, grid 7.5-30 widened once: the objective falls with the step size up to 60
    search = out["tuning"]["expected"]["POMWU"]
    assert search["step_sizes"] == [7.5, 15.0, 30.0, 60.0] and not search["interior"]
    assert search["values"] == pytest.approx([0.0326012, 0.0283449, 0.0265888, 0.0262635], rel=1e-5)
    assert out["step_sizes"]["sampled"] == {"POMWU": 60.0, "cHedge": 60.0, "Hedge": 60.0}
