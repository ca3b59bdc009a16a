"""The README's in-context table is the rendering of the stored report."""

import json
from pathlib import Path

from looped_transformers.experiments import icl_table

ROOT = Path(__file__).resolve().parents[1]


def test_readme_icl_table_is_rendered_from_the_stored_json():
    readme = (ROOT / "README.md").read_text()
    start = readme.index("<!-- rendered from results/icl-cpu.json by looped_transformers.experiments.icl_table -->\n")
    end = readme.index("<!-- end icl-cpu -->")
    block = readme[start:end].split("\n", 1)[1]
    report = json.loads((ROOT / "results" / "icl-cpu.json").read_text())
    assert block == icl_table(report)
