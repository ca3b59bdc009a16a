"""Real series: on every horizon of the demo's CO2 design, RidgeCorrGCV's held-out
error is no worse than RidgeCV's (deterministic: bundled data, no randomness).

The demo's second series (yearly sunspot levels) was added with its design fixed before any held-out
result was seen. With the default estimate ("both") RidgeCorrGCV ties RidgeCV at h = 1 year and is
worse at h = 3 and 6 (it picks the top of the grid); those two cells are strict xfails so that a change
in either direction is noticed.
"""

import pytest

pytest.importorskip("statsmodels")

from corrgcv.experiments import DEMO_SERIES, compare_penalty_choices, penalty_curves  # noqa: E402


def _rows(series, horizon):
    n_lags = DEMO_SERIES[series]["n_lags"]
    rows = compare_penalty_choices(horizon, n_lags, time_series_split=False, series=series)
    return {r["method"].split(" (")[0]: r for r in rows}


def _no_worse(rows):
    # 1e-9 relative slack: at equal penalties the two refits (our eigendecomposition, scikit-learn's
    # solver) differ in the last digits only (2e-12 relative with numpy 1.23 / scipy 1.10).
    return rows["RidgeCorrGCV"]["held_out_mse"] <= rows["RidgeCV"]["held_out_mse"] * (1 + 1e-9)


@pytest.mark.parametrize("horizon", DEMO_SERIES["co2"]["horizons"])
def test_corrgcv_held_out_error_no_worse_than_ridgecv_on_co2(horizon):
    rows = _rows("co2", horizon)
    assert _no_worse(rows)
    # The features (lagged weekly changes) are nearly white: the estimated K is close to I.
    assert rows["RidgeCorrGCV"]["xi"] < 1.0


WORSE = pytest.mark.xfail(strict=True, reason="picks the top of the grid, worse than RidgeCV (studies/real-series.md)")


@pytest.mark.parametrize(
    "horizon", [pytest.param(h, marks=WORSE) if h in (3, 6) else h for h in DEMO_SERIES["sunspots"]["horizons"]]
)
def test_corrgcv_held_out_error_no_worse_than_ridgecv_on_sunspots(horizon):
    assert _no_worse(_rows("sunspots", horizon))


@pytest.mark.parametrize("horizon", [3, 6])
def test_corrgcv_estimates_the_held_out_error_on_sunspots_where_loo_does_not(horizon):
    """README 'Risk estimate vs penalty choice': near least squares, CorrGCV's error estimate is within 5%
    of the held-out MSE (0.97, 1.01) while LOO's is at most 0.7 of it (0.68, 0.56)."""
    curves = penalty_curves("sunspots", horizon, DEMO_SERIES["sunspots"]["n_lags"])
    assert abs(curves.corrgcv[0] / curves.held_out[0] - 1) < 0.05
    assert curves.loo[0] / curves.held_out[0] < 0.7
