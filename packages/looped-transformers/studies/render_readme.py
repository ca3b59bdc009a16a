"""Rewrite the rendered tables of the README and studies/reproduction-tables.md from results/*.json.

tests/test_readme_results.py checks them.

    python packages/looped-transformers/studies/render_readme.py
"""

from __future__ import annotations

import json
import re
from pathlib import Path

from looped_transformers.experiments import icl_table

PACKAGE = Path(__file__).resolve().parents[1]
BLOCK = re.compile(r"(<!-- rendered from results/((?:icl|charlm)-[a-z0-9-]+)\.json by looped_transformers\.experiments\.icl_table -->\n)"
                   r".*?(<!-- end \2 -->)", re.S)


def main() -> None:
    """Replace the text of every rendered block with the table of its stored report."""
    load = lambda name: json.loads((PACKAGE / "results" / f"{name}.json").read_text())  # noqa: E731
    for page in (PACKAGE / "README.md", PACKAGE / "studies" / "reproduction-tables.md"):
        page.write_text(BLOCK.sub(lambda m: m.group(1) + icl_table(load(m.group(2))) + m.group(3), page.read_text()))


if __name__ == "__main__":
    main()
