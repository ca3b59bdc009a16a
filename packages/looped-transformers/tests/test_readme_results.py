"""The README's and studies/reproduction-tables.md's tables are the renderings of the stored reports."""

import json
import re
from pathlib import Path

import pytest

from looped_transformers.experiments import icl_table

ROOT = Path(__file__).resolve().parents[1]
BLOCK = re.compile(r"<!-- rendered from results/((?:icl|charlm)-[a-z0-9-]+)\.json by looped_transformers\.experiments\.icl_table -->\n"
                   r"(.*?)<!-- end \1 -->", re.S)


@pytest.mark.parametrize("page", ["README.md", "studies/reproduction-tables.md"])
def test_rendered_tables_equal_the_stored_json(page):
    blocks = BLOCK.findall((ROOT / page).read_text())
    assert blocks, f"no rendered table in {page}"
    for name, block in blocks:
        assert block == icl_table(json.loads((ROOT / "results" / f"{name}.json").read_text())), name
