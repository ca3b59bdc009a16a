"""icml25_shared.stats against scipy.stats and closed forms."""

import math

import numpy as np
import pytest
from icml25_shared.stats import mean_sd, paired_difference, t_interval, t_quantile, wilson_interval

scipy_stats = pytest.importorskip("scipy.stats")

PS = [1e-6, 0.001, 0.025, 0.1, 0.3, 0.5, 0.6, 0.9, 0.95, 0.975, 0.99, 0.999, 1 - 1e-6]


def test_t_quantile_matches_scipy_for_df_1_to_200():
    worst = 0.0
    for df in range(1, 201):
        for p in PS:
            expected = scipy_stats.t.ppf(p, df)
            worst = max(worst, abs(t_quantile(p, df) - expected) / max(1.0, abs(expected)))
    assert worst < 1e-10


@pytest.mark.parametrize("df", [0.5, 2.5, 1e3, 1e6, 1e8, 1e12])
def test_t_quantile_fractional_and_large_df(df):
    for p in PS:
        expected = scipy_stats.t.ppf(p, df)
        assert t_quantile(p, df) == pytest.approx(expected, rel=1e-10, abs=1e-10)


def test_t_quantile_symmetry_limits_and_errors():
    assert t_quantile(0.5, 3) == 0.0
    assert t_quantile(0.2, 7) == -t_quantile(0.8, 7)
    assert t_quantile(0.975, math.inf) == pytest.approx(1.959963984540054, rel=1e-14)
    for p in (0.0, 1.0, -0.1, math.nan):
        with pytest.raises(ValueError, match="p must"):
            t_quantile(p, 3)
    for df in (0, -1, math.nan):
        with pytest.raises(ValueError, match="df must"):
            t_quantile(0.9, df)


@pytest.mark.parametrize("confidence", [0.5, 0.9, 0.95, 0.99])
def test_t_interval_matches_scipy(confidence):
    x = np.random.default_rng(0).normal(3.0, 2.0, size=12)
    ci = t_interval(x, confidence)
    low, high = scipy_stats.t.interval(confidence, x.size - 1, loc=x.mean(), scale=scipy_stats.sem(x))
    assert (ci.low, ci.high) == (pytest.approx(low, abs=1e-10), pytest.approx(high, abs=1e-10))
    assert ci.estimate == pytest.approx(x.mean()) and ci.n == 12 and ci.confidence == confidence
    assert ci.contains(x.mean()) and not ci.contains(high + 1e-6)


def test_t_interval_and_mean_sd_errors_and_edges():
    with pytest.raises(ValueError, match="at least two"):
        t_interval([1.0])
    with pytest.raises(ValueError, match="empty"):
        mean_sd([])
    with pytest.raises(ValueError, match="NaN"):
        t_interval([1.0, math.nan])
    for confidence in (0.0, 1.0, 1.5, math.nan):
        with pytest.raises(ValueError, match="confidence"):
            t_interval([1.0, 2.0], confidence)
    constant = t_interval([2.0, 2.0, 2.0])
    assert (constant.low, constant.high) == (2.0, 2.0)
    assert mean_sd([4.0]) .sd == 0.0 and mean_sd([1.0, 3.0]).sd == pytest.approx(math.sqrt(2))
    assert mean_sd(np.array([1.0, 2.0, 3.0])).format(2) == "2.00 +- 1.00"


def _wilson_closed_form(k, n, confidence):
    z = scipy_stats.norm.ppf(0.5 + confidence / 2)
    p = k / n
    centre = (k + z * z / 2) / (n + z * z)
    half = z * math.sqrt(n) / (n + z * z) * math.sqrt(p * (1 - p) + z * z / (4 * n))
    return centre - half, centre + half


@pytest.mark.parametrize(("k", "n"), [(0, 1), (1, 1), (0, 10), (3, 10), (9, 10), (10, 10), (50, 400), (399, 400)])
@pytest.mark.parametrize("confidence", [0.8, 0.95, 0.999])
def test_wilson_matches_scipy_binomtest_and_the_closed_form(k, n, confidence):
    ci = wilson_interval(k, n, confidence)
    ref = scipy_stats.binomtest(k, n).proportion_ci(confidence_level=confidence, method="wilson")
    assert ci.low == pytest.approx(ref.low, abs=1e-12) and ci.high == pytest.approx(ref.high, abs=1e-12)
    low, high = _wilson_closed_form(k, n, confidence)
    assert ci.low == pytest.approx(max(0.0, low), abs=1e-12) and ci.high == pytest.approx(min(1.0, high), abs=1e-12)
    assert 0.0 <= ci.low <= ci.estimate <= ci.high <= 1.0 and ci.estimate == k / n


def test_wilson_errors():
    for k, n in ((1, 0), (0, -2), (3, 2), (-1, 5), (1, 2.5), (1.5, 3)):
        with pytest.raises(ValueError):
            wilson_interval(k, n)
    assert wilson_interval(np.int64(3), np.int64(10)).estimate == 0.3


def test_paired_difference_absolute_and_relative_sign():
    a, b = np.array([1.0, 2.0, 3.5, 4.0]), np.array([1.5, 2.2, 3.6, 3.9])
    d = paired_difference(a, b)
    ref = t_interval(a - b)
    assert (d.estimate, d.low, d.high) == (ref.estimate, ref.low, ref.high) and d.wins == 3
    # negative b (e.g. a negated loss): relative keeps "a < b means a is better" as a negative difference
    neg_a, neg_b = np.array([-2.2, -4.4, -6.3]), np.array([-2.0, -4.0, -6.0])
    rel = paired_difference(neg_a, neg_b, relative=True)
    assert rel.wins == 3 and rel.estimate < 0
    np.testing.assert_allclose(rel.estimate, np.mean((neg_a - neg_b) / np.abs(neg_b)))
    assert paired_difference(b, a, relative=True).estimate > 0
    with pytest.raises(ValueError, match="non-zero"):
        paired_difference([1.0, 2.0], [0.0, 1.0], relative=True)
    with pytest.raises(ValueError, match="pair up"):
        paired_difference([1.0, 2.0], [1.0, 2.0, 3.0])
    assert d.format(2).count("[") == 1
