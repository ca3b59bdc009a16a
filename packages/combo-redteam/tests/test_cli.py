"""The command line: demo and reproduce write the tables, figures, JSON and the audit log."""

import json
import subprocess
import sys

import pytest
from icml25_shared.testing import run_command

from combo_redteam import replay
from combo_redteam.__main__ import main


def test_demo_quick_writes_table_chart_and_audit_log(tmp_path):
    out = run_command(main, "demo", tmp_path, expect=("md", "json", "png"))
    rows = {r["strategy"]: r for r in out.result["rows"]}
    assert set(rows) == {"single-strong", "single-weak", "manual", "automated-k3"}
    assert rows["single-strong"]["success"] == 0.0 and rows["single-strong"]["refusal_rate"] == 1.0
    assert rows["single-strong"]["calls_per_success"] is None  # no success: null, not Infinity
    json.loads((tmp_path / "demo.json").read_text(), parse_constant=lambda c: pytest.fail(f"non-standard {c}"))
    assert rows["automated-k3"]["success"] == 1.0 and rows["automated-k3"]["uplift"] == 1.0
    assert "| automated-k3 | 12 | 12 | 0 | 1.000" in out.table
    log = tmp_path / out.result["audit_log"]
    result = replay(log)
    assert result.success_rate("manual").estimate == rows["manual"]["success"]


def test_reproduce_quick_covers_strategies_grid_and_placements(tmp_path):
    result = run_command(main, "reproduce", tmp_path, expect=("md", "json", "png")).result
    names = [r["strategy"] for r in result["exact"]["rows"]]
    assert names == ["single-strong", "single-weak", "manual", "automated-k1", "automated-k3", "automated-k5"]
    assert {r["placement"] for r in result["monitors"]} == {"strong-input", "strong-output", "weak-input",
                                                            "final-output", "episode"}
    assert len(result["grid"]["automated"]) == 4 and len(result["grid"]["automated"][0]) == 4


def test_importing_the_command_line_imports_no_experiment_code():
    code = "import sys, combo_redteam.__main__; assert 'combo_redteam.experiments' not in sys.modules; print('ok')"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.returncode == 0 and done.stdout.strip() == "ok", done.stderr


def test_importing_the_package_imports_no_torch():
    code = "import sys, combo_redteam; assert 'torch' not in sys.modules and 'transformers' not in sys.modules"
    assert subprocess.run([sys.executable, "-c", code]).returncode == 0


def test_help_shows_the_paper(capsys):
    with pytest.raises(SystemExit):
        main(["--help"])
    assert "Adversaries Can Misuse Combinations of Safe Models" in capsys.readouterr().out


def test_readme_example_runs(tmp_path, monkeypatch):
    from pathlib import Path

    text = (Path(__file__).parents[1] / "README.md").read_text()
    code = text.split("```python\n", 1)[1].split("```", 1)[0]
    monkeypatch.chdir(tmp_path)
    exec(compile(code, "README.md", "exec"), {})
    assert (tmp_path / "out" / "audit.jsonl").exists()
