import os

import numpy as np
import pytest
from icml25_shared.testing import figure_problems, legible_saved_figures, run_command, run_module

from finextract.__main__ import PAPER, main


def _table_rows(table):
    lines = [line for line in table.splitlines() if line.startswith("|")]
    header = [c.strip() for c in lines[0].strip("|").split("|")]
    return [dict(zip(header, (c.strip() for c in line.strip("|").split("|")), strict=True)) for line in lines[2:]]


def test_demo_quick_writes_table_and_figure(tmp_path, monkeypatch):
    with legible_saved_figures() as checked:  # every shown axis labelled, no overlapping text
        table = run_command(main, "demo", tmp_path).table
    assert checked == ["demo"]
    assert table.startswith("| method") and "FineXtract" in table and "CFG baseline" in table
    rows = {r["method"]: r for r in _table_rows(table)}
    # measured with torch 2.13 CPU; the quick models are tiny, so AS is far below the full run's
    assert float(rows["FineXtract"]["AS"]) == pytest.approx(DEMO_QUICK_AS["FineXtract"], abs=0.03)
    assert float(rows["CFG baseline"]["AS"]) == pytest.approx(DEMO_QUICK_AS["CFG baseline"], abs=0.03)


DEMO_QUICK_AS = {"FineXtract": 0.447, "CFG baseline": 0.662}


@pytest.mark.slow
def test_module_entry_point(tmp_path):
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    run = run_module("finextract", "reproduce", tmp_path, timeout=600, env=env)
    out = run.result
    assert {(r["setting"], r["method"]) for r in out["summary"]} == {
        (s, m)
        for s in ("full", "lora")
        for m in ("FineXtract", "CFG baseline", "FineXtract (calibrated)", "CFG baseline (calibrated)")
    }
    cal = out["calibration"]
    assert cal["seed"] not in out["seeds"]  # calibrated on a held-out seed only
    for chosen in cal["chosen"].values():
        assert chosen["FineXtract (calibrated)"][1] in cal["w_grid"]
        assert chosen["CFG baseline (calibrated)"][1] in cal["cfg_grid"]
    assert out["design"] == "instance" and out["esr_thresholds"] == [0.93, 0.9]
    # model-free: 8 random other 3s against 8 training 3s (the rule behind the 0.93 threshold)
    assert out["no_extraction_reference"]["AS"] == pytest.approx(0.8592, abs=1e-3)
    summary = {(r["setting"], r["method"]): r for r in out["summary"]}
    for key, value in REPRODUCE_QUICK_AS.items():
        assert summary[key]["AS"] == pytest.approx(value, abs=0.03), key


REPRODUCE_QUICK_AS = {
    ("full", "FineXtract"): 0.5385,
    ("full", "CFG baseline (calibrated)"): 0.7658,
    ("lora", "FineXtract (calibrated)"): 0.6718,
}


def test_help_names_the_paper(capsys):
    with pytest.raises(SystemExit) as exit_info:
        main(["--help"])
    assert exit_info.value.code == 0
    text = capsys.readouterr().out
    assert PAPER in " ".join(text.split()) and "audit" in text


def test_seed_streams_are_independent_seedsequence_children():
    from icml25_shared.random import child_seeds

    from finextract.experiments import STREAMS, seed_streams

    assert list(seed_streams(4).values()) == child_seeds(4, len(STREAMS))
    values = [v for s in range(6) for v in seed_streams(s).values()]
    assert len(set(values)) == len(values)


def test_random_state_reproduces_data_and_selection():
    from finextract import cluster_extract
    from finextract.training import digits_data, instance_data

    assert np.array_equal(digits_data(4, random_state=3).finetune_indices, digits_data(4, random_state=3).finetune_indices)
    assert np.array_equal(instance_data(8, random_state=2).finetune_indices,
                          instance_data(8, random_state=2).finetune_indices)
    feats = np.random.default_rng(0).normal(size=(12, 5))
    a, b = cluster_extract(feats, 3, random_state=1), cluster_extract(feats, 3, random_state=1)
    assert np.array_equal(a.selected, b.selected) and a.threshold == b.threshold
    with pytest.raises(TypeError, match="seed"):
        digits_data(4, seed=3)
    with pytest.raises(ValueError, match="pool block"):
        instance_data(8, random_state=np.random.default_rng(0))


def test_calibrate_picks_best_mean_held_out_as_per_mode_and_method():
    from finextract.experiments import calibrate, grid_methods

    grid = grid_methods(w_grid=(2.0, 3.0), k_grid=(0.0,), cfg_grid=(1.0, 3.0))
    scores = {
        "full": {
            "mg w=2.0 k=0.0": [0.8, 0.6],
            "mg w=3.0 k=0.0": [0.9, 0.6],
            "cfg s=1.0": [0.7, 0.7],
            "cfg s=3.0": [0.7, 0.7],
        },
        "lora": {
            "mg w=2.0 k=0.0": [0.5, 0.9],
            "mg w=3.0 k=0.0": [0.6, 0.6],
            "cfg s=1.0": [0.1, 0.1],
            "cfg s=3.0": [0.2, 0.1],
        },
    }
    chosen = calibrate(scores, grid)
    assert chosen["full"] == {"FineXtract (calibrated)": ("mg", 3.0, 0.0), "CFG baseline (calibrated)": ("cfg", 1.0)}
    assert chosen["lora"] == {"FineXtract (calibrated)": ("mg", 2.0, 0.0), "CFG baseline (calibrated)": ("cfg", 3.0)}


def test_help_and_import_load_no_torch():
    import json
    import subprocess
    import sys

    code = (
        "import sys, json, runpy; sys.argv = ['finextract', '--help']\n"
        "try:\n    runpy.run_module('finextract', run_name='__main__')\nexcept SystemExit:\n    pass\n"
        "print(json.dumps([m for m in ('torch', 'diffusers', 'transformers', 'sklearn', 'matplotlib', 'tqdm')"
        " if m in sys.modules]))"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True)
    assert json.loads(done.stdout.strip().splitlines()[-1]) == []


def test_reproduce_figure_layout_is_legible():
    """The reproduce grid (training row and four methods per fine-tuning mode, 8 images each) at its real size."""
    import torch

    from finextract.experiments import _grid

    rows = []
    for mode in ("full", "lora"):
        rows.append((f"train ({mode})", torch.zeros(8, 1, 8, 8)))
        for m in ("FineXtract", "CFG baseline", "FineXtract (calibrated)", "CFG baseline (calibrated)"):
            rows.append((f"{m} ({mode})", torch.zeros(8, 1, 8, 8)))
    fig = _grid(rows, "instance, light fine-tuning, seed 0: training images and best extracted match")
    assert figure_problems(fig) == []
