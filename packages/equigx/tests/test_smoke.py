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


def _demo_figure(split=0.7, gradcam=0.7):
    import matplotlib

    matplotlib.use("Agg")
    from equigx.data import make_shapes
    from equigx.experiments import demo_figure

    test = make_shapes(3, n_distractors=(3, 4), random_state=0)
    aurocs = {"equigx-node": 0.6, "equigx-split": split, "gradient": 0.8, "gradcam": gradcam, "input_x_gradient": 0.5,
              "degree": 0.9, "random": 0.5}
    rows = [{"explainer": n, "AUROC": v, "low": v - 0.1, "high": min(v + 0.1, 1.0)} for n, v in aurocs.items()]
    return demo_figure(test, np.linspace(-1, 1, test.n_nodes), rows, seed=0)


def test_demo_figure_has_labels_and_the_colour_bar_clears_the_3d_axes():
    fig = _demo_figure()
    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()
    ax3d, colour_bar, bars = fig.axes
    assert ax3d.get_xlabel() and ax3d.get_zlabel() and bars.get_xlabel() and bars.get_ylabel()
    assert colour_bar.get_ylabel() and "seed 0" in bars.get_title() and "95%" in bars.get_title()
    # no overlap between the 3-D axes' labels and ticks and the colour bar (with its label)
    a, b = ax3d.get_tightbbox(renderer), colour_bar.get_tightbbox(renderer)
    assert a.x1 <= b.x0 or b.x1 <= a.x0, (a, b)
    # signed relevance: the colour scale is symmetric, so white is zero
    low, high = ax3d.collections[0].get_clim()
    assert low == -high


@pytest.mark.parametrize(("split", "gradcam", "word"), [(0.6, 0.7, "below"), (0.8, 0.7, "above"), (0.7, 0.7, "level")])
def test_demo_caption_names_the_seed_the_interval_and_how_equigx_compares_with_gradcam(split, gradcam, word):
    caption = " ".join(t.get_text() for t in _demo_figure(split, gradcam).texts).replace("\n", " ")
    assert "seed 0" in caption and "95% t-interval over the test graphs, not over seeds" in caption
    assert f"EquiGX-split ({split:.3f}) is {word}" in caption


def _reproduce_results(quick=True):
    names = ["equigx-node", "equigx-split", "gradient", "gradcam", "input_x_gradient", "integrated_gradients",
             "gnnexplainer", "pgexplainer", "lri_bernoulli", "degree", "random"]
    rng = np.random.default_rng(0)
    summary = {t: {"summary": {n: {"auroc": dict(zip(("low", "mean", "high"), np.sort(rng.uniform(0.3, 1.0, 3)),
                                                     strict=True))} for n in names}}
               for t in ("shapes", "decoy", "spiral")}
    return {"seed": 7, "quick": quick, **summary}


def test_every_demo_and_reproduce_figure_is_legible():
    from icml25_shared.testing import figure_problems

    from equigx.experiments import reproduce_figure

    reproduce = reproduce_figure(_reproduce_results(), ("shapes", "decoy", "spiral"), n_seeds=3)
    for fig in (_demo_figure(0.6, 0.7), reproduce):
        assert figure_problems(fig) == []
    for ax in reproduce.axes:  # every panel lists the explainers top-down in the same order
        assert ax.get_ylim()[0] > ax.get_ylim()[1]
    caption = " ".join(t.get_text() for t in reproduce.texts).replace("\n", " ")
    assert "Mean over 3 seeds (root seed 7, quick sizes)" in caption and "95% t-interval over the seeds" in caption
