"""bootstrap_mean: its identities, its seeding, its agreement with the t-interval, its errors."""

import numpy as np
import pytest
from icml25_shared.stats import t_interval

from __MODULE__ import BootstrapInterval, bootstrap_mean


def test_estimate_is_the_sample_mean_and_the_interval_brackets_it():
    x = np.random.default_rng(3).exponential(size=50)
    ci = bootstrap_mean(x, random_state=0)
    assert isinstance(ci, BootstrapInterval)
    assert ci.estimate == pytest.approx(x.mean(), rel=1e-14)
    assert x.min() <= ci.low < ci.estimate < ci.high <= x.max()
    assert ci.n_resamples == 2000 and ci.confidence == 0.95


def test_constant_sample_gives_a_point_interval():
    ci = bootstrap_mean([4.0] * 7, random_state=1)
    assert (ci.low, ci.estimate, ci.high) == (4.0, 4.0, 4.0)


def test_int_seed_is_reproducible_and_seeds_differ():
    x = np.arange(20.0)
    assert bootstrap_mean(x, random_state=5) == bootstrap_mean(x, random_state=5)
    assert bootstrap_mean(x, random_state=5).low != bootstrap_mean(x, random_state=6).low
    rng = np.random.default_rng(5)
    assert bootstrap_mean(x, random_state=rng) == bootstrap_mean(x, random_state=5)  # a Generator is used as is


def test_wider_confidence_gives_a_wider_interval():
    x = np.random.default_rng(0).normal(size=100)
    narrow = bootstrap_mean(x, confidence=0.5, random_state=0)
    wide = bootstrap_mean(x, confidence=0.99, random_state=0)
    assert wide.low < narrow.low < narrow.high < wide.high


def test_agrees_with_the_t_interval_on_a_large_normal_sample():
    x = np.random.default_rng(0).normal(1.0, 1.0, size=2000)
    boot, student = bootstrap_mean(x, n_resamples=4000, random_state=0), t_interval(x)
    half = student.high - student.estimate  # about 0.044
    assert abs(boot.low - student.low) < 0.05 * half and abs(boot.high - student.high) < 0.05 * half


@pytest.mark.parametrize(("kwargs", "match"), [
    ({"x": [1.0]}, "at least two"),
    ({"x": [1.0, np.nan]}, "NaN"),
    ({"x": [1.0, 2.0], "confidence": 1.0}, "confidence"),
    ({"x": [1.0, 2.0], "n_resamples": 0}, "n_resamples"),
])
def test_bad_arguments_raise_naming_them(kwargs, match):
    with pytest.raises(ValueError, match=match):
        bootstrap_mean(**kwargs)


def test_bad_random_state_raises():
    with pytest.raises(TypeError, match="random_state"):
        bootstrap_mean([1.0, 2.0], random_state="0")
