"""The powered comparison's pooled tests equal scipy's on hand-made paired outcomes."""

import importlib.util
from pathlib import Path

import numpy as np
import pytest
from scipy.stats import binomtest, ttest_rel

SCRIPT = Path(__file__).resolve().parents[1] / "studies" / "powered_comparison.py"


def _module():
    spec = importlib.util.spec_from_file_location("powered_comparison", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_pooled_tests_match_scipy():
    m = _module()
    rng = np.random.default_rng(0)
    runs = []
    for seed in (1, 2):
        rows = {}
        for name, p in (("PhonePuRe", 0.7), ("stage 1 (t=3)", 0.5), ("AudioPure t=5", 0.5),
                        ("PhonePuRe, shuffled alignment", 0.6)):
            rows[name] = {"accepted": [bool(x) for x in rng.random(30) < p],
                          "sims": [float(x) for x in rng.normal(0.9, 0.02, 30)]}
        runs.append({"seed": seed, "rows": rows})
    res = m.pool(runs)
    assert res["n_pairs"] == 60
    a = [x for r in runs for x in r["rows"]["PhonePuRe"]["accepted"]]
    b = [x for r in runs for x in r["rows"]["stage 1 (t=3)"]["accepted"]]
    only_a = sum(x and not y for x, y in zip(a, b, strict=True))
    only_b = sum(y and not x for x, y in zip(a, b, strict=True))
    test = res["tests"]["PhonePuRe vs stage 1 (t=3)"]
    assert (test["mcnemar"]["a_only"], test["mcnemar"]["b_only"]) == (only_a, only_b)
    assert test["mcnemar"]["p"] == pytest.approx(binomtest(only_a, only_a + only_b, 0.5).pvalue)
    sa = [x for r in runs for x in r["rows"]["PhonePuRe"]["sims"]]
    sb = [x for r in runs for x in r["rows"]["PhonePuRe, shuffled alignment"]["sims"]]
    assert res["tests"]["PhonePuRe vs PhonePuRe, shuffled alignment"]["sim_paired_t"]["p"] == pytest.approx(
        ttest_rel(sa, sb).pvalue)
    lo, hi = m.wilson(sum(a), len(a))
    assert lo < sum(a) / len(a) < hi
    assert m._seeds("100-107") == list(range(100, 108)) and m._seeds("3") == [3]
