"""Edge cases of the statistics: non-integer counts, non-binary outcomes, NaN scores, many discordant pairs."""

import time

import numpy as np
import pytest
from statsmodels.stats.contingency_tables import mcnemar

from combo_redteam.metrics import auroc, mcnemar_exact, paired_difference_interval, wilson


def test_wilson_rejects_counts_that_are_not_ints():
    with pytest.raises(ValueError, match="successes must be an int"):
        wilson(2.5, 5)  # was read as 2 successes: estimate 0.4
    with pytest.raises(ValueError, match="successes must be an int"):
        wilson(True, 3)
    with pytest.raises(ValueError, match="n must be an int"):
        wilson(2, 5.5)
    assert wilson(np.int64(3), np.int64(5)).estimate == 0.6
    assert wilson(5, 5).high == 1.0 and wilson(0, 5).low == 0.0
    with pytest.raises(ValueError, match="n must be a positive int"):
        wilson(0, 0)


def test_paired_tests_reject_outcomes_that_are_not_binary():
    with pytest.raises(ValueError, match="first must hold paired successes"):
        mcnemar_exact([0.5, 0.0], [0, 0])  # a rate is not an outcome; bool() read it as a success
    with pytest.raises(ValueError, match="second must hold paired successes"):
        paired_difference_interval([1, 0], [2, 0])
    assert mcnemar_exact(np.array([1.0, 0.0]), [0, 0]).b == 1
    assert mcnemar_exact([True, False], [False, False]).pvalue == 1.0


def test_mcnemar_without_discordant_pairs_and_with_many():
    same = mcnemar_exact([1, 0, 1], [1, 0, 1])
    assert (same.b, same.c, same.statistic, same.pvalue) == (0, 0, 0, 1.0)
    first = [1] * 1500 + [0] * 1400
    second = [0] * 1500 + [1] * 1400
    assert mcnemar_exact(first, second).pvalue == pytest.approx(mcnemar([[0, 1500], [1400, 0]], exact=True).pvalue,
                                                                rel=1e-12)
    start = time.perf_counter()
    big = mcnemar_exact([1] * 20000 + [0] * 20000, [0] * 20000 + [1] * 20000)
    assert big.pvalue == 1.0 and time.perf_counter() - start < 5.0


def test_auroc_rejects_nan_scores():
    with pytest.raises(ValueError, match="NaN"):
        auroc([np.nan, 1.0], [0.0])
    assert auroc([np.inf], [0.0]) == 1.0
