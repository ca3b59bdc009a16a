"""Rewrite the README's reproduction tables from results/*.json (the test in tests/test_scaling.py checks them).

    python packages/quest-qat/studies/render_readme.py
"""

from __future__ import annotations

import json
from pathlib import Path

from quest.experiments import reproduction_table

PACKAGE = Path(__file__).resolve().parents[1]
BEGIN = "<!-- rendered from results/reproduce.json and results/scaling*.json -->\n"
END = "<!-- end rendered -->"


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
    readme.write_text(f"{head}{BEGIN}{table}\n{END}{tail}")


if __name__ == "__main__":
    main()
