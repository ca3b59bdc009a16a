"""The README's zero-sum regret-growth row is the one rendered from the stored results."""

import importlib.util
import json
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1]
SCRIPT = PACKAGE / "studies" / "regret-growth" / "confirm_zero_sum.py"
STORED = PACKAGE / "results" / "regret_growth_zero_sum.json"


@pytest.mark.skipif(not STORED.exists(), reason="needs the repository checkout")
def test_zero_sum_regret_row_matches_the_stored_results():
    spec = importlib.util.spec_from_file_location("pomwu_confirm_zero_sum", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    assert module.readme_row(json.loads(STORED.read_text())) in (PACKAGE / "README.md").read_text()
