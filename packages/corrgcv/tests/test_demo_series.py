"""Acceptance 4 (real series): on every horizon of the demo's CO2 design, RidgeCorrGCV's held-out
error is no worse than RidgeCV's (deterministic: bundled data, no randomness).

The demo's second series (yearly sunspot levels) was added with its design fixed before any held-out
result was seen; there RidgeCorrGCV is worse than RidgeCV at every horizon (the rows of X are strongly
correlated but the noise much less so, outside the paper's matched model). That failure is recorded
as a strict xfail so that a change in either direction is noticed.
"""

import pytest

pytest.importorskip("statsmodels")

from corrgcv.experiments import DEMO_SERIES, compare_penalty_choices  # noqa: E402


def _rows(series, horizon):
    n_lags = DEMO_SERIES[series]["n_lags"]
    rows = compare_penalty_choices(horizon, n_lags, time_series_split=False, series=series)
    return {r["method"].split(" (")[0]: r for r in rows}


@pytest.mark.parametrize("horizon", DEMO_SERIES["co2"]["horizons"])
def test_corrgcv_held_out_error_no_worse_than_ridgecv_on_co2(horizon):
    rows = _rows("co2", horizon)
    corr, loo = rows["RidgeCorrGCV"], rows["RidgeCV"]
    # 1e-12 relative slack: at equal penalties the two refits (our eigendecomposition, scikit-learn's
    # solver) differ in the last digits only.
    assert corr["held_out_mse"] <= loo["held_out_mse"] * (1 + 1e-12)
    # The features (lagged weekly changes) are nearly white: the estimated K is close to I.
    assert corr["xi"] < 1.0


@pytest.mark.xfail(
    strict=True,
    reason="correlated rows of X with much less correlated noise: the feature "
    "estimate over-penalises (README, 'Real series')",
)
@pytest.mark.parametrize("horizon", DEMO_SERIES["sunspots"]["horizons"])
def test_corrgcv_held_out_error_no_worse_than_ridgecv_on_sunspots(horizon):
    rows = _rows("sunspots", horizon)
    assert rows["RidgeCorrGCV"]["held_out_mse"] <= rows["RidgeCV"]["held_out_mse"]
