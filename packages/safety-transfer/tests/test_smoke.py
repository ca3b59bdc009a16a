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
