"""Every public entry point names the parameter in a TypeError (wrong type) and a ValueError (wrong value)."""

from __future__ import annotations

import numpy as np
from icml25_shared.testing import assert_rejects

from kandinsky_cp import KandinskyCP, group_quantile_regression
from kandinsky_cp import groups as G


def test_kandinsky_cp_parameters(regression_split):
    reg, Xc, yc, _, _ = regression_split
    valid = {"estimator": reg, "groups": G.intercept()}

    def conformalize(cp):
        return cp.conformalize(Xc, yc)

    assert_rejects(KandinskyCP, "confidence_level", wrong_type="0.9", wrong_value=1.5, call=conformalize, **valid)
    assert_rejects(KandinskyCP, "random_state", wrong_type="seed", wrong_value=-1, call=conformalize, **valid)
    assert_rejects(KandinskyCP, "score", wrong_type=3, wrong_value="absolut", call=conformalize, **valid)
    assert_rejects(KandinskyCP, "confidence_level", wrong_type=["0.9"], wrong_value=[0.8, 1.0],
                   call=conformalize, **valid)


def test_group_quantile_regression_parameters():
    rng = np.random.default_rng(0)
    valid = {"phi": np.ones((50, 1)), "scores": rng.normal(size=50)}
    assert_rejects(group_quantile_regression, "confidence_level", wrong_type="0.9", wrong_value=0.0, **valid)
