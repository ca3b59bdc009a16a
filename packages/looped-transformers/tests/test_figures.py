"""The figure check itself, the figures of the stored results, and the in-context protocol's figure (demo and
families: test_smoke)."""

import json
from pathlib import Path

import pytest

from looped_transformers.__main__ import main


def test_the_check_catches_a_label_over_the_neighbouring_panel(figure_check):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (a, b) = plt.subplots(1, 2, figsize=(4, 2))  # no layout engine: b's y label sits inside a
    for ax in (a, b):
        ax.set_xlabel("x")
        ax.set_ylabel("y")
    b.yaxis.set_label_coords(-0.6, 0.5)
    with pytest.raises(AssertionError, match="overlaps"):
        figure_check(fig)
    plt.close(fig)


def test_icl_protocol_smoke_run_writes_a_checked_figure_and_applies_its_rules(tmp_path, figures):
    import json

    assert main(["reproduce", "--protocol", "icl-cpu", "--quick", "--out", str(tmp_path)]) == 0
    assert figures == ["icl-cpu"]
    report = json.loads((tmp_path / "icl-cpu.json").read_text())
    assert set(report["models"]) == {"LT r=1", "LT r=2", "LT r=4", "LT r=8", "TMLT r=8"}
    assert report["models"]["LT r=8"]["seeds"] == [0, 1]
    assert "0 gate" in report["rules"]
    zero = report["baselines"]["zero"]
    assert zero["low"] <= zero["mean"] <= zero["high"]
    assert (tmp_path / "icl-cpu" / "LT-r8-steps4-seed1.json").exists()


def test_icl_cells_leave_the_global_rng_alone_and_do_not_depend_on_the_cells_before(tmp_path):
    import torch

    from looped_transformers.experiments import ICL_PROTOCOLS, run_icl_cells

    tiny = {**ICL_PROTOCOLS["converged"], "steps": 2, "seeds": 1, "test": 4, "task": {"n_dims": 2, "n_points": 3},
            "d": 16, "cells": [["LT", 1], ["TMLT", 2]]}
    before = torch.random.get_rng_state()
    run_icl_cells(tiny, tmp_path, random_state=3)
    assert torch.equal(torch.random.get_rng_state(), before)  # initial weights come from a forked generator
    first = json.loads((tmp_path / "TMLT-r2-steps2-seed0.json").read_text())["mean_error"]
    (tmp_path / "TMLT-r2-steps2-seed0.json").unlink()
    torch.manual_seed(12345)  # whatever the global state and whichever cells ran before (LT r=1), the same cell
    run_icl_cells(tiny, tmp_path, random_state=3)
    assert json.loads((tmp_path / "TMLT-r2-steps2-seed0.json").read_text())["mean_error"] == first


RESULTS = Path(__file__).resolve().parents[1] / "results"


@pytest.mark.parametrize("name", ["reproduce", "reproduce-seed1"])
def test_stored_families_figures_are_legible(name, figure_check):
    from looped_transformers.experiments import families_figure

    stored = json.loads((RESULTS / f"{name}.json").read_text())
    figure_check(families_figure(stored["results"], stored["protocol"]["seeds"]))


@pytest.mark.parametrize("name", ["icl-cpu", "icl-converged", "icl-converged-seed4", "icl-equal-compute",
                                  "icl-equal-compute-seed8"])
def test_stored_icl_figures_are_legible(name, figure_check):
    from looped_transformers.experiments import icl_figure

    path = RESULTS / f"{name}.json"
    if not path.exists():
        pytest.skip(f"{path.name} is not stored")
    stored = json.loads(path.read_text())
    figure_check(icl_figure(stored, n_seeds=stored["protocol"]["seeds"], steps=stored["protocol"]["steps"]))
