"""The command line: demo writes the mapper table the README reports."""

import subprocess
import sys

import pytest
from icml25_shared.testing import run_command

from safety_transfer.__main__ import PAPER, main


def test_demo_quick_writes_the_mapper_table(tmp_path):
    run = run_command(main, "demo", tmp_path, expect=("md", "json", "png"))
    rows = {r["mapper"]: r for r in run.result["rows"]}
    assert set(rows) == {"affine (lstsq)", "autoencoder"}
    for r in rows.values():
        assert 0 < r["test FVU"] < 1 and 0 < r["test cosine"] <= 1 and r["KL"] > 0
        assert r["loss mapped"] > 0 and r["target loss"] > 0
    assert run.table.startswith("| mapper | train pairs | test FVU |")


def test_importing_the_command_line_imports_no_experiment_code():
    code = "import sys, safety_transfer.__main__; assert 'safety_transfer.experiments' not in sys.modules; print('ok')"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.returncode == 0 and done.stdout.strip() == "ok", done.stderr


def test_help_shows_the_paper(capsys):
    with pytest.raises(SystemExit):
        main(["--help"])
    assert PAPER[:40] in capsys.readouterr().out


def test_reproduce_figure_is_drawn_from_the_stored_json_and_legible():
    import json
    from pathlib import Path

    import matplotlib

    matplotlib.use("Agg")
    from icml25_shared.testing import assert_figure_legible

    from safety_transfer.experiments import reproduce_figure

    stored = json.loads((Path(__file__).parents[1] / "results" / "reproduce.json").read_text())
    assert_figure_legible(reproduce_figure(stored))
    one = dict(stored, seeds=stored["seeds"][:1])  # one seed: no interval to draw
    fig = reproduce_figure(one)
    assert "1 seed(s)" in fig.axes[0].get_title() and "interval" not in fig.axes[0].get_title()
