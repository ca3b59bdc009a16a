"""The README's in-context tables are the renderings of the stored reports."""

import json
import re
from pathlib import Path

from looped_transformers.experiments import icl_table

ROOT = Path(__file__).resolve().parents[1]
BLOCK = re.compile(r"<!-- rendered from results/((?:icl|charlm)-[a-z0-9-]+)\.json by looped_transformers\.experiments\.icl_table -->\n"
                   r"(.*?)<!-- end \1 -->", re.S)


def test_readme_icl_tables_are_rendered_from_the_stored_json():
    blocks = BLOCK.findall((ROOT / "README.md").read_text())
    assert blocks, "no rendered in-context table in the README"
    for name, block in blocks:
        assert block == icl_table(json.loads((ROOT / "results" / f"{name}.json").read_text())), name
