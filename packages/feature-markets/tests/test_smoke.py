import subprocess
import sys

import pytest
from icml25_shared.testing import run_command, run_module

from feature_markets.__main__ import main


def _rows(section: str) -> dict[str, list[str]]:
    """Method name -> cells of one markdown table in the demo's output."""
    rows = {}
    for line in section.splitlines():
        cells = [cell.strip() for cell in line.strip().strip("|").split("|")]
        if len(cells) == 8 and cells[0] not in ("method", "---"):
            rows[cells[0]] = cells[1:]
    return rows


def test_demo_quick_writes_table_and_figure(tmp_path):
    table = run_command(main, "demo", tmp_path).table
    uniform, unequal, _ = table.split("**")[2::2]
    uniform_rows, unequal_rows = _rows(uniform), _rows(unequal)
    assert len(uniform_rows) == len(unequal_rows) == 5
    # uniform budgets: every method near chance in the long term (0.600 or less on these 90 test users)
    assert all(float(cells[2]) <= 0.6 for cells in uniform_rows.values()), uniform_rows
    # observable label-correlated budgets: budget-as-feature separates the test users exactly
    assert float(unequal_rows["budget-as-feature"][2]) == pytest.approx(1.0)
    assert float(unequal_rows["market-aware (MASC)"][2]) == pytest.approx(0.611, abs=0.03)


def test_help_names_the_paper(capsys):
    with pytest.raises(SystemExit) as stop:
        main(["--help"])
    assert stop.value.code == 0
    assert "Learning Classifiers That Induce Markets" in capsys.readouterr().out


@pytest.mark.slow
def test_module_entry_point_reproduce(tmp_path):
    payload = run_module("feature_markets", "reproduce", tmp_path, timeout=300).result
    assert payload["exponents"] == [2, 6, 10] and payload["splits"] == 2
    results = payload["results"]
    # measured (2 splits of 300 users, 10 epochs): MASC 0.706 at 2^10, naive 0.539, budget-as-feature 0.978 at 2^6
    assert results["market-aware (MASC)"]["long"][2][0] == pytest.approx(0.706, abs=0.03)
    assert results["naive"]["long"][2][0] == pytest.approx(0.539, abs=0.03)
    assert results["budget-as-feature"]["long"][1][0] == pytest.approx(0.978, abs=0.02)
    assert payload["paired_long_term"]["MASC - naive"][2]["mean"] > 0


@pytest.mark.slow
def test_import_main_is_light():
    code = "import sys, feature_markets.__main__; assert 'matplotlib' not in sys.modules"
    assert subprocess.run([sys.executable, "-c", code], check=False).returncode == 0
