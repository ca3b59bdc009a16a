"""The command line: demo and reproduce write the numbers the README reports."""

import subprocess
import sys

import numpy as np
import pytest
from icml25_shared.testing import run_command

from crossclass_at.__main__ import PAPER, main


def test_demo_quick_writes_cas_and_robust_accuracy_per_epoch(tmp_path):
    run = run_command(main, "demo", tmp_path, expect=("md", "json", "png"))
    assert run.table.startswith("| epoch | clean acc | robust acc | CAS |")
    res = run.result
    assert [r["epoch"] for r in res["rows"]] == [1, 2, 3, 4, 5]
    assert all(0 <= r["CAS"] <= 90 for r in res["rows"])
    c = np.array(res["C_last"])
    assert c.shape == (10, 10) and np.allclose(np.diag(c), 1) and np.allclose(c, c.T)
    assert res["cas_last"] == pytest.approx(np.clip(c, 0, 1).sum() - 10)
    assert res["rows"][-1]["clean acc"] > 0.3  # chance is 0.1: five short epochs of PGD-AT already learn


def test_reproduce_runs_every_variant_and_applies_the_rules(tmp_path, monkeypatch):
    from crossclass_at import experiments

    tiny = {"seeds": 2, "n_train": 60, "hidden": 16, "eps": 0.1, "steps": 2, "epochs": 3, "batch_size": 32,
            "lr": 0.1, "eval_steps": 2, "monitor_every": 1}
    monkeypatch.setitem(experiments.PROTOCOL, "quick", tiny)
    res = run_command(main, "reproduce", tmp_path, expect=("json", "md", "png")).result
    assert set(res["runs"]) == set(experiments.VARIANTS) and len(res["seeds"]) == 2
    at = res["runs"]["pgd-at"]
    rules = res["summary"]["rules"]
    assert rules["cas_best_gt_last_seeds"] == sum(r["cas_best"] > r["cas_last"] for r in at)
    assert rules["best_exceeds_last_on_test_all_seeds"] == all(r["best_test_robust"] > r["last_test_robust"] for r in at)
    for r in at:
        assert r["best_robust"] == max(h["robust_accuracy"] for h in r["history"])

    def test_gap(variant):
        return np.mean([r["best_test_robust"] - r["last_test_robust"] for r in res["runs"][variant]])

    for variant in ("label-smoothing", "self-distillation"):
        assert rules["soft_labels"][variant]["smaller_test_gap"] == (test_gap(variant) < test_gap("pgd-at"))


def test_importing_the_command_line_imports_no_experiment_code():
    code = "import sys, crossclass_at.__main__; assert 'crossclass_at.experiments' not in sys.modules; print('ok')"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.returncode == 0 and done.stdout.strip() == "ok", done.stderr


def test_help_shows_the_paper(capsys):
    with pytest.raises(SystemExit):
        main(["--help"])
    assert PAPER[:40] in capsys.readouterr().out


def test_the_heatmaps_draw_c_best_minus_c_last():
    import matplotlib

    matplotlib.use("Agg")
    from crossclass_at.experiments import _heatmaps

    rng = np.random.default_rng(0)
    c_best, c_last = (np.corrcoef(rng.normal(size=(4, 9))) for _ in range(2))
    run = {"monitor_epochs": [1, 2], "cas": [1.0, 2.0], "history": [{"epoch": 1, "robust_accuracy": 0.2},
                                                                   {"epoch": 2, "robust_accuracy": 0.3}],
           "best_epoch": 2, "C_best": c_best, "C_last": c_last}
    figures = []

    class Ctx:
        def save_figure(self, fig, name=None):
            figures.append(fig)

    _heatmaps(Ctx(), run)
    panels = [ax for ax in figures[0].axes if ax.get_title()]
    diff = next(ax for ax in panels if ax.get_title() == "C_best - C_last")
    assert np.allclose(diff.images[0].get_array(), c_best - c_last)
    low, high = diff.images[0].get_clim()
    assert low == -high == -np.abs(c_best - c_last).max()  # a symmetric scale: 0 is white


def test_the_stored_runs_draw_legible_figures():
    import json
    from pathlib import Path

    from icml25_shared.testing import figure_problems

    from crossclass_at.experiments import heatmaps_figure, reproduce_figure

    runs = json.loads((Path(__file__).parents[1] / "results" / "reproduce.json").read_text())["runs"]
    assert figure_problems(reproduce_figure(runs)) == []
    assert figure_problems(heatmaps_figure(runs["pgd-at"][0])) == []
