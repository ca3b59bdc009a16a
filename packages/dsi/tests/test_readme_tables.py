"""The README's benchmark and reproduction tables are the ones rendered from the stored results."""

import importlib.util
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1]
SCRIPT = PACKAGE / "benchmarks" / "readme_tables.py"


def _renderer():
    spec = importlib.util.spec_from_file_location("dsi_readme_tables", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.skipif(not (PACKAGE / "results" / "benchmark.json").exists(), reason="needs the repository checkout")
@pytest.mark.parametrize("name", ["benchmark_table", "ill_conditioned_table", "reproduction_table"])
def test_readme_table_matches_the_stored_results(name):
    table = getattr(_renderer(), name)()
    readme = (PACKAGE / "README.md").read_text()
    assert table in readme, f"README table differs from {name}(); run benchmarks/readme_tables.py --write"


def test_replace_table_swaps_only_the_table():
    module = _renderer()
    text = "intro\n\n| a | b |\n|---|---|\n| 1 | 2 |\n\nafter\n"
    assert (
        module.replace_table(text, "| a | b |\n|---|---|\n| 3 | 4 |")
        == "intro\n\n| a | b |\n|---|---|\n| 3 | 4 |\n\nafter\n"
    )
