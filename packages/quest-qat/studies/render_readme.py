"""Rewrite the README's reproduction tables from results/*.json (tests/test_scaling.py and tests/test_readme_gap.py
check them): the ablation and scaling block, and every gap block (one or more `results/gap-*.json` each).

    python packages/quest-qat/studies/render_readme.py
"""

from __future__ import annotations

import json
import re
from pathlib import Path

from quest.experiments import gap_table, reproduction_table

PACKAGE = Path(__file__).resolve().parents[1]
BEGIN = "<!-- rendered from results/reproduce.json and results/scaling*.json -->\n"
END = "<!-- end rendered -->"
# one gap block renders one or more reports: "results/gap-a.json and results/gap-b.json" ... "<!-- end gap-a and gap-b -->"
GAP_BLOCK = (r"(<!-- rendered from ((?:results/gap-[a-z]+\.json(?: and )?)+) by quest\.experiments\.gap_table -->\n)"
             r".*?(<!-- end (?:gap-[a-z]+(?: and )?)+ -->)")
GAP_NAME = re.compile(r"gap-[a-z]+")


def main() -> None:
    """Replace the text between the README's markers with the rendered tables."""
    results = PACKAGE / "results"
    load = lambda name: json.loads((results / name).read_text())  # noqa: E731
    rerun = load("scaling_seed1.json") if (results / "scaling_seed1.json").exists() else None
    table = reproduction_table(load("reproduce.json"), load("scaling.json"), rerun)
    readme = PACKAGE / "README.md"
    text = readme.read_text()
    head, rest = text.split(BEGIN, 1)
    _, tail = rest.split(END, 1)
    text = f"{head}{BEGIN}{table}\n{END}{tail}"
    gap_block = re.compile(GAP_BLOCK, re.S)
    text = gap_block.sub(lambda m: m.group(1) + gap_table(*(load(f"{n}.json") for n in GAP_NAME.findall(m.group(2))))
                         + m.group(3), text)
    readme.write_text(text)


if __name__ == "__main__":
    main()
