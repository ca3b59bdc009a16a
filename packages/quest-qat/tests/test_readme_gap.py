"""The README's precision-gap tables are the renderings of the stored reports."""

import json
import re
from pathlib import Path

from quest.experiments import gap_table

ROOT = Path(__file__).resolve().parents[1]
BLOCK = re.compile(r"<!-- rendered from results/(gap-[a-z]+)\.json by quest\.experiments\.gap_table -->\n"
                   r"(.*?)<!-- end \1 -->", re.S)


def test_readme_gap_tables_are_rendered_from_the_stored_json():
    blocks = BLOCK.findall((ROOT / "README.md").read_text())
    assert blocks, "no rendered gap table in the README"
    for name, block in blocks:
        assert block == gap_table(json.loads((ROOT / "results" / f"{name}.json").read_text())), name
