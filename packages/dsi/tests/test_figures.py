"""The reproduce figure is legible: every shown axis is labelled and no two texts overlap (the demo figure is
checked where the demo runs, in test_smoke)."""

import json
from pathlib import Path

import pytest
from icml25_shared.testing import figure_problems

from dsi.experiments import reproduce_figure

pytest.importorskip("matplotlib")
STORED = Path(__file__).resolve().parents[1] / "results" / "reproduce_seeds345.json"


@pytest.mark.skipif(not STORED.exists(), reason="needs the repository checkout")
def test_reproduce_figure_of_the_stored_run_is_legible():
    summary = json.loads(STORED.read_text())["summary"]
    regimes = list(dict.fromkeys(e["regime"] for e in summary if e["task"] == "memorisation" and e["regime"] != "none"))
    assert figure_problems(reproduce_figure(summary, regimes)) == []
