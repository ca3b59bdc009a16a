"""The command line: demo and reproduce write the numbers the README reports; a missing extra is one line."""

import subprocess
import sys

import icml25_shared.cli
import numpy as np
import pytest
from icml25_shared.testing import run_command, run_module

from corrgcv.__main__ import main


@pytest.fixture(scope="module")
def quick_reproduce(tmp_path_factory):
    return run_command(main, "reproduce", tmp_path_factory.mktemp("reproduce")).result


def _rows(result, method):
    return [r for r in result["rows"] if r["method"].startswith(method)]


def test_demo_quick_reports_co2_penalties_and_held_out_error(tmp_path):
    pytest.importorskip("statsmodels")
    run = run_command(main, "demo", tmp_path, expect=("md", "json", "png"))
    assert run.table.startswith("| series |")
    ridge_cv = _rows(run.result, "RidgeCV")[0]
    corr = _rows(run.result, "RidgeCorrGCV (exponential")[0]
    # co2, h = 13 weeks, 52 lags: the lagged changes are nearly white, so the default ties RidgeCV.
    assert ridge_cv["alpha"] == pytest.approx(0.5623, rel=1e-3)
    assert corr["alpha"] == ridge_cv["alpha"]
    assert corr["xi"] == pytest.approx(0.42, abs=0.01)
    assert ridge_cv["held_out_mse"] == pytest.approx(0.3747, rel=1e-3)
    oracle = _rows(run.result, "oracle")[0]
    assert oracle["held_out_mse"] <= ridge_cv["held_out_mse"]


def test_reproduce_quick_strong_correlation_fools_gcv_not_corrgcv(quick_reproduce):
    strong, weak = quick_reproduce["regimes"]["strong"], quick_reproduce["regimes"]["weak"]
    assert quick_reproduce["T"] == [10, 32, 100, 316]
    # 3 seeds: CorrGCV within 10% of the risk from T = 32 on; GCV below 3% of it at every T.
    np.testing.assert_allclose(strong["corrgcv_over_risk"][1:], 1.0, atol=0.1)
    assert max(strong["gcv_over_risk"]) < 0.03
    np.testing.assert_allclose(weak["gcv_over_risk"], weak["corrgcv_over_risk"], rtol=1e-9)
    assert quick_reproduce["test_point"]["max_rel_error"] < 0.05
    assert quick_reproduce["sweep"]["argmin"]["gcv"] == pytest.approx(1e-5)


@pytest.mark.slow
def test_module_entry_point_reproduce_quick_matches_in_process(tmp_path, quick_reproduce):
    result = run_module("corrgcv", "reproduce", tmp_path, timeout=300).result
    np.testing.assert_allclose(result["regimes"]["strong"]["corrgcv_over_risk"],
                               quick_reproduce["regimes"]["strong"]["corrgcv_over_risk"], rtol=1e-9)


def test_missing_demo_extra_is_one_line_and_exit_2(monkeypatch, capsys):
    monkeypatch.setattr(icml25_shared.cli, "missing_extra", lambda dist, extra: ["statsmodels"])
    assert main(["demo"]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "pip install" in err and "corrgcv[cli,demo]" in err


def test_command_line_imports_no_extra_module():
    code = "import sys, corrgcv, corrgcv.__main__; assert 'statsmodels' not in sys.modules, 'statsmodels imported'"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
