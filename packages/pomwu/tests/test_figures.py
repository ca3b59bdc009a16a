"""The reproduce figure is legible (every shown axis labelled, no overlapping text); the demo figure is checked
where the demo runs, in test_smoke."""

import json
from pathlib import Path

import numpy as np
import pytest
from icml25_shared.testing import figure_problems

from pomwu.experiments import reproduce_figure

pytest.importorskip("matplotlib")
STORED = Path(__file__).resolve().parents[1] / "results" / "reproduce.json"


@pytest.mark.skipif(not STORED.exists(), reason="needs the repository checkout")
def test_reproduce_figure_of_the_stored_run_is_legible():
    payload = json.loads(STORED.read_text())
    T = payload["setup"]["rounds"]
    rng = np.random.default_rng(0)
    # the stored JSON keeps summaries, not per-round travel times: same labels and length, synthetic curves
    curves = {
        feedback: {label: 1.0 + rng.random(T) for label in payload[feedback]["results"]}
        for feedback in ("expected", "sampled")
    }
    assert figure_problems(reproduce_figure(payload, curves)) == []
