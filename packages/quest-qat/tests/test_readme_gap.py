"""The README's precision-gap table is the rendering of the stored report."""

import json
from pathlib import Path

from quest.experiments import gap_table

ROOT = Path(__file__).resolve().parents[1]


def test_readme_gap_table_is_rendered_from_the_stored_json():
    readme = (ROOT / "README.md").read_text()
    start = readme.index("<!-- rendered from results/gap-cpu.json by quest.experiments.gap_table -->\n")
    end = readme.index("<!-- end gap-cpu -->")
    block = readme[start:end].split("\n", 1)[1]
    report = json.loads((ROOT / "results" / "gap-cpu.json").read_text())
    assert block == gap_table(report)
