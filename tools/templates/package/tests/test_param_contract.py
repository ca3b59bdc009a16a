"""Every public entry point names the parameter in TypeError (wrong type) and ValueError (wrong value)."""

from icml25_shared.testing import assert_rejects

from __MODULE__ import bootstrap_mean

DATA = [1.0, 2.0, 3.0, 4.0]


def test_bootstrap_mean_rejects_wrong_types_and_values():
    assert_rejects(bootstrap_mean, "confidence", wrong_type="0.9", wrong_value=1.5, x=DATA)
    assert_rejects(bootstrap_mean, "n_resamples", wrong_type=10.0, wrong_value=0, x=DATA)
    assert_rejects(bootstrap_mean, "random_state", wrong_type="seed", wrong_value=-1, x=DATA)
