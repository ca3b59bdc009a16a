"""Wilson and exact McNemar against statsmodels; AUROC against scipy's Mann-Whitney U; Newcombe's interval."""

import numpy as np
import pytest
from scipy.stats import mannwhitneyu
from statsmodels.stats.contingency_tables import mcnemar
from statsmodels.stats.proportion import proportion_confint

from combo_redteam import auroc, mcnemar_exact, paired_difference_interval, wilson


@pytest.mark.parametrize("confidence", [0.8, 0.9, 0.95, 0.99])
def test_wilson_equals_statsmodels(confidence):
    for n in (1, 2, 7, 50, 250, 1000):
        for k in sorted({0, 1, n // 3, n // 2, n - 1, n}):
            ci = wilson(k, n, confidence)
            low, high = proportion_confint(k, n, alpha=1 - confidence, method="wilson")
            assert abs(ci.low - low) <= 1e-12 and abs(ci.high - high) <= 1e-12, (k, n, ci, low, high)
            assert ci.estimate == k / n


def test_mcnemar_equals_statsmodels_exact():
    rng = np.random.default_rng(0)
    for _ in range(40):
        n = int(rng.integers(1, 80))
        a, b = rng.random(n) < rng.random(), rng.random(n) < rng.random()
        ours = mcnemar_exact(a, b)
        table = [[np.sum(a & b), np.sum(a & ~b)], [np.sum(~a & b), np.sum(~a & ~b)]]
        theirs = mcnemar(table, exact=True)
        assert ours.statistic == theirs.statistic
        assert abs(ours.pvalue - theirs.pvalue) <= 1e-12, (table, ours, theirs.pvalue)
    assert mcnemar_exact([True] * 50, [False] * 50).pvalue == pytest.approx(2 * 0.5**50, rel=1e-12)
    with pytest.raises(ValueError, match="aligned"):
        mcnemar_exact([1, 0], [1])


def test_auroc_equals_mann_whitney():
    rng = np.random.default_rng(1)
    pos, neg = rng.integers(0, 5, size=30).astype(float), rng.integers(0, 4, size=40).astype(float)  # with ties
    u = mannwhitneyu(pos, neg, alternative="two-sided").statistic
    assert auroc(pos, neg) == pytest.approx(u / (pos.size * neg.size), abs=1e-12)
    assert auroc([1.0], [0.0]) == 1.0 and auroc([0.0], [0.0]) == 0.5
    with pytest.raises(ValueError, match="needs positive and negative"):
        auroc([], [1.0])


def test_newcombe_paired_interval():
    a = np.array([1] * 30 + [0] * 20, dtype=bool)
    b = np.array([1] * 10 + [0] * 40, dtype=bool)
    ci = paired_difference_interval(a, b)
    assert ci.estimate == pytest.approx(0.4)
    assert ci.low < 0.4 < ci.high
    # nested outcomes (b implies a): positively correlated pairs give a narrower interval than independence
    shuffled = paired_difference_interval(a, np.random.default_rng(0).permutation(b))
    assert ci.high - ci.low < shuffled.high - shuffled.low
    full = paired_difference_interval([True] * 50, [False] * 50)
    # no concordant pairs: phi = 0 and the lower bound is 1 - sqrt(2) * (1 - Wilson lower bound of 50/50)
    assert full.estimate == 1.0 and full.high == 1.0
    assert full.low == pytest.approx(1 - 2**0.5 * (1 - wilson(50, 50).low), abs=1e-12)
    same = paired_difference_interval([True, False] * 10, [True, False] * 10)
    assert same.estimate == 0.0 and same.low < 0 < same.high
