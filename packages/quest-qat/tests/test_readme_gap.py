"""The README's precision-gap tables are the renderings of the stored reports."""

import json
import re
from pathlib import Path

import pytest

from quest.experiments import gap_table

ROOT = Path(__file__).resolve().parents[1]
BLOCK = re.compile(r"<!-- rendered from ((?:results/gap-[a-z]+\.json(?: and )?)+) by quest\.experiments\.gap_table -->\n"
                   r"(.*?)<!-- end ((?:gap-[a-z]+(?: and )?)+) -->", re.S)


def _load(name):
    return json.loads((ROOT / "results" / f"{name}.json").read_text())


def test_readme_gap_tables_are_rendered_from_the_stored_json():
    blocks = BLOCK.findall((ROOT / "README.md").read_text())
    assert blocks, "no rendered gap table in the README"
    for sources, block, end in blocks:
        names = re.findall(r"gap-[a-z]+", sources)
        assert names == re.findall(r"gap-[a-z]+", end)
        assert block == gap_table(*(_load(n) for n in names)), names


def test_gap_table_of_two_reports_lists_the_baselines_once_and_labels_the_gates():
    confirm = _load("gap-confirm")
    wider = json.loads(json.dumps(confirm).replace("d=64", "d=128").replace('"width": 64', '"width": 128'))
    one, two = gap_table(confirm), gap_table(confirm, wider)
    assert two.count("order-2 Markov table") == 1 and two.count("| FP32 d=") == 2
    assert "| 0 gate (d=64) | passes |" in two and "| 0 gate (d=128) | passes |" in two and "| 0 gate | passes |" in one
    assert {line for line in one.splitlines() if not line.startswith("| 0 gate")} <= set(two.splitlines())
    with pytest.raises(ValueError, match="n-gram baselines differ"):
        gap_table(confirm, {**wider, "ngram": {}})
