"""The command line: demo writes the numbers it reports; reproduce's seed loop on a tiny setting."""

import subprocess
import sys

import numpy as np
import pytest
from icml25_shared.testing import run_command

from equigx.__main__ import main


def test_demo_quick_writes_table_json_and_figure(tmp_path):
    run = run_command(main, "demo", tmp_path, expect=("md", "json", "png"))
    assert run.table.startswith("| explainer | AUROC |")
    rows = {r["explainer"]: r["AUROC"] for r in run.result["rows"]}
    assert set(rows) == {"equigx-node", "equigx-split", "gradient", "gradcam", "input_x_gradient", "degree", "random"}
    assert all({"low", "high"} <= set(r) for r in run.result["rows"])  # the figure's intervals are stored too
    assert all(0.0 <= v <= 1.0 for v in rows.values())
    assert 0.0 <= run.result["test_accuracy"] <= 1.0


def test_run_seed_reports_every_metric(monkeypatch):
    from equigx import experiments

    small = {t: {**cfg, "epochs": {True: 1}, "n_train": {True: 8}, "n_test": {True: 6},
                 "gnnexplainer_graphs": {True: 3},
                 "model": {**cfg["model"], "mul": 2, "lmax": 1 if t == "shapes" else 2}}
             for t, cfg in experiments.SETTINGS.items()}
    monkeypatch.setattr(experiments, "SETTINGS", small)
    for task in ("shapes", "decoy", "spiral"):
        out = experiments.run_seed(task, np.random.default_rng(0), quick=True, slow_baselines=False)
        assert out["n_test"] == 6 and "degree" in out["explainers"]
        for name, row in out["explainers"].items():
            assert 0.0 <= row["auroc"] <= 1.0, name
            assert -1.0 <= row["fid_plus"] <= 1.0 and row["seconds"] >= 0
            assert row["n_graphs"] == 6
        if task == "spiral":
            assert 0.0 <= out["accuracy_without_l_ge_1"] <= 1.0
            assert out["edge_direction"]["direction_share"] > 0


def test_importing_the_command_line_imports_no_experiment_code():
    code = "import sys, equigx.__main__; assert 'equigx.experiments' not in sys.modules; print('ok')"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.returncode == 0 and done.stdout.strip() == "ok", done.stderr


def test_help_shows_the_paper(capsys):
    with pytest.raises(SystemExit):
        main(["--help"])
    assert "On Explaining Equivariant Graph Networks" in capsys.readouterr().out
