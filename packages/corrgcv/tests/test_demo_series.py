"""Acceptance 4 (real series): on the demo's 13-week-ahead CO2 design, RidgeCorrGCV's held-out error
is no worse than RidgeCV's (deterministic: bundled data, no randomness)."""

import pytest

pytest.importorskip("statsmodels")

from corrgcv.experiments import compare_penalty_choices  # noqa: E402


def test_corrgcv_held_out_error_no_worse_than_ridgecv_on_co2():
    rows = {r["method"].split(" (")[0]: r for r in compare_penalty_choices(13, 104, time_series_split=False)}
    corr, loo = rows["RidgeCorrGCV"], rows["RidgeCV"]
    assert corr["held_out_mse"] <= loo["held_out_mse"]
    assert corr["alpha"] > loo["alpha"]  # the correlation-aware choice regularises more
