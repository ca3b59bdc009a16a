"""Figures: the stored results re-rendered and checked (labels, no overlapping text); the commands' figures are
checked where their tests run them (demo: test_smoke, gap: test_gap, scaling: test_scaling)."""

import json
from pathlib import Path
from types import SimpleNamespace

import pytest

from quest.experiments import gap_figure, scaling_figure, training_figure

RESULTS = Path(__file__).resolve().parents[1] / "results"


def test_the_check_catches_an_unlabelled_axis_and_overlapping_labels(figure_check):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (a, b) = plt.subplots(1, 2, figsize=(4, 2))
    a.set_xlabel("x")
    b.set_xlabel("x")
    b.set_ylabel("y")
    with pytest.raises(AssertionError, match="no y label"):
        figure_check(fig)
    a.set_ylabel("y")
    for ax in (a, b):  # each title is wider than its panel: they run into each other
        ax.set_title("a title far wider than its own panel")
    with pytest.raises(AssertionError, match="overlaps"):
        figure_check(fig)
    plt.close(fig)


@pytest.mark.parametrize("name", ["scaling", "scaling_seed1"])
def test_stored_scaling_figures_are_legible(name, figure_check):
    figure_check(scaling_figure(json.loads((RESULTS / f"{name}.json").read_text())))


@pytest.mark.parametrize("name", ["gap-cpu", "gap-confirm", "gap-width"])
def test_stored_gap_figures_are_legible(name, figure_check):
    path = RESULTS / f"{name}.json"
    if not path.exists():
        pytest.skip(f"{path.name} is not stored")
    stored = json.loads(path.read_text())
    figure_check(gap_figure(stored, n_seeds=stored["protocol"]["n_seeds"]))


def test_training_figure_of_six_runs_is_legible(figure_check):
    names = ["full precision", "QuEST W4A4", "STE W4A4 (no Hadamard)", "trust W4A4 (no Hadamard)", "LSQ W4A4",
             "QuEST W1A1"]
    runs = {name: SimpleNamespace(eval_steps=[100, 200, 300, 400], val_loss=[3.0 - 0.1 * k - 0.2 * j for j in range(4)],
                                  train_loss=[3.5 - 0.004 * j - 0.05 * k for j in range(400)])
            for k, name in enumerate(names)}
    figure_check(training_figure(runs))
