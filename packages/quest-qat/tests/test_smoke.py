import os
import subprocess
import sys
from pathlib import Path

import pytest
from icml25_shared.testing import run_command, run_module

from quest.__main__ import main


def _grid_rows(table: str) -> dict[str, list[float]]:
    rows = {}
    for line in table.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) == 5 and cells[0] in ("int1", "ternary", "int2", "int3", "int4", "int8"):
            rows[cells[0]] = [float(c) for c in cells[1:]]
    return rows


def test_demo_quick_writes_table_and_figure(tmp_path, figures):
    table = run_command(main, "demo", tmp_path).table
    assert figures == ["demo"]  # labelled, no overlapping text
    rows = _grid_rows(table)
    assert list(rows) == ["int1", "ternary", "int2", "int3", "int4", "int8"]
    absmax, grid, hadamard, optimum = rows["int4"]
    # with Hadamard the 4-bit error of outlier data is near the N(0,1) optimum 0.0115; without, absmax
    # scaling is ~40x worse (measured 0.468 / 0.484 / 0.0112 on 256 quick rows)
    assert optimum == pytest.approx(0.0115, abs=1e-4)
    assert hadamard == pytest.approx(optimum, rel=0.15)
    assert absmax > 20 * hadamard and grid > 20 * hadamard
    assert "(default)" in table


def test_help_names_the_paper(capsys):
    with pytest.raises(SystemExit) as stop:
        main(["--help"])
    assert stop.value.code == 0
    assert "QuEST: Stable Training of LLMs" in capsys.readouterr().out


@pytest.mark.slow
def test_module_entry_point(tmp_path):
    run = run_module("quest", "reproduce", tmp_path, timeout=300)
    runs = run.result["runs"]
    assert set(runs) == {"full precision", "QuEST W4A4", "STE W4A4 (no Hadamard)", "trust W4A4 (no Hadamard)",
                         "LSQ W4A4", "QuEST W1A1"}
    assert all(not r["diverged"] for r in runs.values())
    # 6 steps from the same init and batches: measured 4.192 (full precision), 4.211 (QuEST W4A4), 4.365 (W1A1)
    assert runs["full precision"]["final_val_loss"] == pytest.approx(4.192, abs=0.05)
    assert runs["QuEST W4A4"]["final_val_loss"] == pytest.approx(4.211, abs=0.05)
    assert runs["trust W4A4 (no Hadamard)"]["final_val_loss"] == pytest.approx(4.200, abs=0.05)  # measured 4.2003
    assert runs["QuEST W1A1"]["final_val_loss"] > runs["QuEST W4A4"]["final_val_loss"]
    assert run.figure is not None


@pytest.mark.slow
def test_import_main_does_not_import_optional_extras():
    code = "import sys, quest.__main__; assert 'transformers' not in sys.modules and 'torchao' not in sys.modules"
    assert subprocess.run([sys.executable, "-c", code], check=False).returncode == 0


@pytest.mark.slow
def test_readme_example_runs_as_written_and_prints_what_it_says():
    """The README's python block, executed verbatim: bit-identical convert_ and '10 layers, 0.138'."""
    readme = (Path(__file__).resolve().parents[1] / "README.md").read_text()
    code = readme.split("```python\n", 1)[1].split("```", 1)[0]
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300,
                         env={**os.environ, "OMP_NUM_THREADS": "1"})
    assert out.returncode == 0, out.stderr[-2000:]
    lines = out.stdout.strip().splitlines()
    assert lines[0].startswith("val loss ") and lines[0].endswith(" nats/byte")
    assert float(lines[0].split()[2]) < 5.6  # 20 steps from ln(256) = 5.55 at init
    assert lines[1] == "10 layers, weights at 0.138 of float32"
