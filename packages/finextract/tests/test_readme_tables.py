"""The README's memorising-cells table is the one rendered from the confirmatory run's stored per-seed results."""

import importlib.util
import json
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1]
SCRIPT = PACKAGE / "studies" / "memorising_cells" / "analyse.py"
SUMMARY = PACKAGE / "results" / "memorising-cells-confirm" / "summary.json"


@pytest.mark.skipif(not SUMMARY.exists(), reason="needs the repository checkout")
def test_memorising_cells_tables_match_the_stored_summary(tmp_path):
    pytest.importorskip("scipy")
    spec = importlib.util.spec_from_file_location("finextract_memorising_cells", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    for path in SUMMARY.parent.glob("*.json"):  # recompute from the per-seed files, not from the stored summary
        if path.name != "summary.json":
            (tmp_path / path.name).write_text(path.read_text())
    summary = module.analyse(tmp_path)
    stored = json.loads(SUMMARY.read_text())
    assert json.dumps(summary, sort_keys=True) == json.dumps(stored, sort_keys=True), "stale summary.json"
    readme = (PACKAGE / "README.md").read_text()
    assert module.render(summary).split("\n\n")[0] in readme, "README differs from analyse.render(summary.json)"
