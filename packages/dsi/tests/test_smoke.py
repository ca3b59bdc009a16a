"""The command line: demo in-process (numbers of its table), reproduce --quick in a subprocess (slow), the
one-line exit for a missing extra, and a base-install import of the entry point."""

import json
import subprocess
import sys

import numpy as np
import pytest
from icml25_shared.testing import legible_saved_figures, run_command, run_module

from dsi.__main__ import main


def _rows(table):
    rows = {}
    for line in table.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) > 7 and cells[0] not in ("differences", "---"):
            rows[cells[0]] = cells
    return rows


def test_demo_quick_table_holds_the_closed_forms(tmp_path, monkeypatch):
    with legible_saved_figures() as checked:  # every shown axis labelled, no overlapping text
        rows = _rows(run_command(main, "demo", tmp_path).table)
    assert checked == ["demo"]
    # orthogonal differences of norms 1 and 2: Sigma = diag(1, 4), trace 5 against isotropic 8
    assert float(rows["orthogonal [[1,0],[0,2]]"][4]) == pytest.approx(5.0, rel=1e-4)
    assert float(rows["orthogonal [[1,0],[0,2]]"][7]) == pytest.approx(0.625, abs=1e-3)
    # collinear differences: rank 1, DSI = isotropic in the span (trace 9)
    assert rows["collinear [[1,0],[3,0]]"][3] == "1"
    assert float(rows["collinear [[1,0],[3,0]]"][4]) == pytest.approx(9.0, rel=1e-4)
    # the notes' seed-0 Gaussian 6 x 20 problem: 103.39 against 163.76
    assert float(rows["Gaussian 6 x 20 (notes)"][4]) == pytest.approx(103.4, abs=0.05)
    assert float(rows["Gaussian 6 x 20 (notes)"][5]) == pytest.approx(163.8, abs=0.05)
    for cells in rows.values():  # every constraint is met, and DSI never needs more noise than isotropic
        assert float(cells[8]) <= 1.0 + 1e-9 and float(cells[7]) <= 1.0 + 1e-9


@pytest.mark.slow
def test_reproduce_quick_module_entry_point(tmp_path):
    run = run_module("dsi", "reproduce", tmp_path, timeout=300)
    summary = {(e["task"], e["regime"], e["epsilon"]): e for e in run.result["summary"]}
    assert run.result["n_references"] == 63 and run.result["seeds"] == [0]
    none = summary[("memorisation", "none", None)]
    dsi_2 = summary[("memorisation", "dsi", 2.0)]
    iso_2 = summary[("memorisation", "isotropic", 2.0)]
    # measured on torch 2.13 CPU: none 0.631 / 2.38 bits, dsi 0.627 / 2.34, isotropic 0.409 / 1.87
    # (isotropic noise runs at DSI's validation-chosen cell)
    assert none["test_accuracy"][0] == pytest.approx(0.631, abs=0.03)
    assert dsi_2["test_accuracy"][0] == pytest.approx(0.627, abs=0.03)
    assert iso_2["test_accuracy"][0] == pytest.approx(0.409, abs=0.05)
    assert dsi_2["test_accuracy"][0] > iso_2["test_accuracy"][0] + 0.15  # same guarantee, far less noise
    for entry in summary.values():
        if entry["task"] == "memorisation":
            assert 0.0 <= entry["exposure"][0] <= np.log2(64)
    backdoor = summary[("backdoor", "dsi", 4.0)]
    assert 0.0 <= backdoor["attack_success_rate"][0] <= summary[("backdoor", "none", None)]["attack_success_rate"][0]


def test_missing_extra_exits_2_with_one_line(monkeypatch, capsys, tmp_path):
    import icml25_shared.cli

    monkeypatch.setattr(icml25_shared.cli, "missing_extra", lambda dist, extra: ["opacus"])
    assert main(["reproduce", "--quick", "--out", str(tmp_path)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "pip install" in err[0] and "dsi[cli,peers]" in err[0]
    assert not (tmp_path / "reproduce.json").exists()


def test_entry_point_imports_no_extra():
    code = (
        "import sys, json, dsi.__main__; "
        "print(json.dumps([m for m in ('torch', 'opacus', 'cvxpy', 'matplotlib', 'tqdm', 'sklearn', 'scipy.optimize')"
        " if m in sys.modules]))"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True)
    assert json.loads(done.stdout) == []
