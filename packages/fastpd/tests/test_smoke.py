import json
import re
import subprocess
import sys

import pytest
from icml25_shared.testing import run_command, run_module

from fastpd.__main__ import main
from fastpd.experiments import consistency_experiment


def test_demo_quick_writes_table_and_figure(tmp_path):
    run = run_command(main, "demo", tmp_path)
    rows = [line.split("|")[1:-1] for line in run.table.splitlines() if line.startswith("| ") and "rank" not in line]
    assert len(rows) == 5
    # measured (seed 0, 60 trees): s5 22.98 and bmi 21.12 mean |SHAP|; bmi x s5 is the top pair at 4.56
    assert [r[1].strip() for r in rows[:2]] == ["s5", "bmi"]
    assert float(rows[0][2]) == pytest.approx(22.98, abs=0.05)
    assert float(rows[1][2]) == pytest.approx(21.12, abs=0.05)
    assert rows[0][3].strip() == "bmi x s5" and float(rows[0][4]) == pytest.approx(4.56, abs=0.05)
    err = float(re.search(r"prediction\| = ([0-9.e+-]+);", run.table).group(1))
    assert err < 1e-9  # the components sum to the prediction
    assert run.figure is not None


def test_consistency_experiment_in_process():
    """The paper's claim at a small scale: FastPD's error falls with n, path-dependent stays biased."""
    res = consistency_experiment([300, 3000], 1, random_state=0, n_eval=200, quick=True)
    mse = res["mse"]
    for t in ("m12", "shap1"):
        assert mse["fastpd"]["3000"][t]["mean"] < 0.5 * mse["fastpd"]["300"][t]["mean"]
        assert mse["path-dependent"]["3000"][t]["mean"] > 2 * mse["fastpd"]["3000"][t]["mean"]
    assert mse["fastpd"]["3000"]["m1"]["mean"] < 0.1
    # one replication: sd and se are 0 by definition
    assert mse["fastpd"]["300"]["m1"]["se"] == 0.0
    again = consistency_experiment([300], 1, random_state=0, n_eval=200, quick=True)
    assert again["raw"]["fastpd"]["300"] == res["raw"]["fastpd"]["300"]  # seeded: identical


@pytest.mark.slow
def test_module_entry_point(tmp_path):
    run = run_module("fastpd", "reproduce", tmp_path, timeout=300)
    mse = run.result["mse"]
    assert run.result["reps"] == 1 and run.result["sizes"] == [500, 5000]
    for t in ("m12", "shap1"):
        assert mse["fastpd"]["5000"][t]["mean"] < 0.5 * mse["fastpd"]["500"][t]["mean"]
        assert mse["path-dependent"]["5000"][t]["mean"] > 2 * mse["fastpd"]["5000"][t]["mean"]
    assert mse["fastpd"]["5000"]["m1"]["mean"] < 0.05
    assert run.figure is not None


def test_missing_extra_exits_2_with_one_line(monkeypatch, capsys, tmp_path):
    import icml25_shared.cli

    monkeypatch.setattr(icml25_shared.cli, "missing_extra", lambda dist, extra: ["xgboost"])
    assert main(["reproduce", "--quick", "--out", str(tmp_path)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "pip install" in err[0] and "fastpd[cli,xgboost]" in err[0]
    assert not (tmp_path / "reproduce.json").exists()


def test_entry_point_imports_no_extra():
    code = ("import sys, json, fastpd.__main__; "
            "print(json.dumps([m for m in ('xgboost', 'lightgbm', 'shap', 'dask', 'matplotlib') if m in sys.modules]))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True)
    assert json.loads(done.stdout) == []


def test_help_names_the_paper(capsys):
    with pytest.raises(SystemExit) as exit_info:
        main(["--help"])
    assert exit_info.value.code == 0
    out = capsys.readouterr().out
    assert "Fast Estimation of Partial Dependence Functions using Trees" in out
    assert "ICML 2025" in out
