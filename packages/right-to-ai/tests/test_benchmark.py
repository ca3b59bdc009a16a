"""Speed bounds: assess_many on 100,000 answer sets under 5 s, 1,000 Markdown reports under 10 s (2 cores)."""

import time

import numpy as np
import pandas as pd
import pytest

from right_to_ai import assess, load
from right_to_ai.portfolio import assess_many
from right_to_ai.report import to_markdown


def answer_frame(n, seed):
    """``n`` answer sets: each answer yes with probability 0.6, else uniform over the accepted answers."""
    rng = np.random.default_rng(seed)
    cols = {}
    for q in load().questions:
        pick = rng.choice(np.array(q.accepted, dtype=object), size=n)
        cols[q.id] = np.where(rng.random(n) < 0.6, "yes", pick)
    cols["high_risk"] = rng.random(n) < 0.3
    return pd.DataFrame(cols)


@pytest.mark.slow
def test_assess_many_100k_under_5_s_and_1000_markdown_reports_under_10_s():
    load()
    frame = answer_frame(100_000, seed=7)
    start = time.perf_counter()
    result = assess_many(frame)
    seconds = time.perf_counter() - start
    assert len(result) == 100_000 and set(result.tier.tolist()) == {1, 2, 3, 4}
    assert seconds < 5.0, f"assess_many took {seconds:.2f} s for 100,000 answer sets"
    records = frame.head(1000).to_dict("records")
    start = time.perf_counter()
    reports = [to_markdown(assess({k: v for k, v in r.items() if k != "high_risk"}, high_risk=r["high_risk"]))
               for r in records]
    seconds = time.perf_counter() - start
    assert len(reports) == 1000 and all(r.startswith("# Right-to-AI assessment") for r in reports)
    assert seconds < 10.0, f"1,000 Markdown reports took {seconds:.2f} s"
