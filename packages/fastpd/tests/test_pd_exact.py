"""FastPD's PD functions equal brute force and scikit-learn's partial_dependence."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from fastpd import FastPD

D = 6
ALL_SUBSETS = [s for r in range(D + 1) for s in itertools.combinations(range(D), r)]


@pytest.mark.parametrize("name", ["sklearn-gbr", "sklearn-rf", "xgboost", "lightgbm"])
def test_pd_equals_brute_force_for_every_subset(models, data, name, h):
    model = models[name]
    bg, xe = data["bg"], data["Xe"]
    fp = FastPD(model, bg)
    pds = fp.pd_functions(xe, max_order=D)
    assert len(pds) == 2**D - 1
    scale = np.abs(h.margin(model, xe)).max()
    for subset in ALL_SUBSETS:
        ours = fp.pd_function(xe, subset) if subset else np.full(len(xe), fp.intercept_)
        ref = h.brute_pd(model, xe, bg, subset)
        np.testing.assert_allclose(ours, ref, rtol=1e-5, atol=1e-5 * scale, err_msg=f"S={subset}")
        if subset:
            np.testing.assert_allclose(pds[subset], ours, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("name", ["sklearn-gbc", "sklearn-dtc", "xgboost-binary", "xgboost-multiclass",
                                  "lightgbm-binary", "lightgbm-multiclass"])
def test_classifier_pd_is_on_the_margin(models, data, name, h):
    model = models[name]
    bg, xe = data["bg"][:200], data["Xe"]
    fp = FastPD(model, bg)
    for subset in [(0,), (1, 2), (0, 3, 5)]:
        np.testing.assert_allclose(fp.pd_function(xe, subset), h.brute_pd(model, xe, bg, subset), rtol=1e-5, atol=1e-5)
    expected_shape = (len(xe), 3) if name.endswith("multiclass") else (len(xe), 2) if name == "sklearn-dtc" \
        else (len(xe),)
    assert fp.pd_function(xe, 0).shape == expected_shape


def test_pd_matches_sklearn_partial_dependence_brute_and_recursion(models, data, h):
    from sklearn.inspection import partial_dependence

    model = models["sklearn-gbr"]
    bg = data["bg"]
    fp = FastPD(model, bg)
    path = FastPD(model, method="path-dependent")
    for j in range(D):
        # scikit-learn's own grid (custom_values needs scikit-learn >= 1.7; the declared bound is 1.6)
        brute_result = partial_dependence(model, bg, [j], method="brute", grid_resolution=11)
        grid = brute_result["grid_values"][0]
        xg = np.zeros((len(grid), D))
        xg[:, j] = grid
        brute = brute_result["average"][0]
        np.testing.assert_allclose(fp.pd_function(xg, j), brute, rtol=1e-10, atol=1e-10)
        rec_result = partial_dependence(model, bg, [j], method="recursion", grid_resolution=11)
        np.testing.assert_array_equal(rec_result["grid_values"][0], grid)
        rec = rec_result["average"][0]
        # sklearn's recursion leaves out the constant init_ prediction
        np.testing.assert_allclose(path.pd_function(xg, j), rec + path.offset_, rtol=1e-10, atol=1e-10)
    # on correlated data the two estimands differ: the path-dependent one is not the marginal PD
    gap = max(np.abs(fp.pd_function(data["Xe"], j) - path.pd_function(data["Xe"], j)).max() for j in range(D))
    assert gap > 1e-2


def test_two_feature_pd_matches_sklearn_brute(models, data, h):
    from sklearn.inspection import partial_dependence

    model = models["sklearn-rf"]
    bg = data["bg"][:150]
    res = partial_dependence(model, bg, [(0, 1)], method="brute", grid_resolution=5)
    g0, g1 = res["grid_values"]
    xx = np.zeros((len(g0) * len(g1), D))
    xx[:, 0], xx[:, 1] = np.repeat(g0, len(g1)), np.tile(g1, len(g0))
    ours = FastPD(model, bg).pd_function(xx, [0, 1]).reshape(len(g0), len(g1))
    np.testing.assert_allclose(ours, res["average"][0], rtol=1e-10, atol=1e-10)


def test_predict_reproduces_every_library(models, data, h):
    for name, model in models.items():
        fp = FastPD(model, data["bg"][:50])
        np.testing.assert_allclose(fp.predict(data["Xe"]), h.margin(model, data["Xe"]), rtol=1e-5, atol=1e-5,
                                   err_msg=name)


def test_xgboost_wrapper_uses_the_early_stopping_iteration(data, h):
    import xgboost as xgb

    x, y = data["X"], data["y"]
    model = xgb.XGBRegressor(n_estimators=200, learning_rate=0.5, max_depth=3, early_stopping_rounds=3, n_jobs=1)
    model.fit(x[:200], y[:200], eval_set=[(x[200:], y[200:])], verbose=False)
    assert model.best_iteration + 1 < 200
    fp = FastPD(model, data["bg"][:100])
    np.testing.assert_allclose(fp.predict(data["Xe"]), h.margin(model, data["Xe"]), rtol=1e-5, atol=1e-5)
    assert fp.n_trees_ == model.best_iteration + 1


def test_random_forest_modes_of_xgboost_and_lightgbm(data, h):
    import lightgbm as lgb
    import xgboost as xgb

    x, y, xe, bg = data["X"], data["y"], data["Xe"], data["bg"][:100]
    xrf = xgb.XGBRFRegressor(n_estimators=6, max_depth=3, n_jobs=1, random_state=0).fit(x, y)
    np.testing.assert_allclose(FastPD(xrf, bg).predict(xe), h.margin(xrf, xe), rtol=1e-5, atol=1e-5)
    # LightGBM's rf mode averages its trees in predict(); raw_score=True returns the plain sum
    lrf = lgb.LGBMRegressor(boosting_type="rf", n_estimators=5, bagging_freq=1, bagging_fraction=0.7,
                            n_jobs=1, verbose=-1).fit(x, y)
    fp = FastPD(lrf, bg)
    np.testing.assert_allclose(fp.predict(xe), lrf.predict(xe), rtol=1e-10)
    np.testing.assert_allclose(fp.pd_function(xe, [2]), h.brute_pd(lrf, xe, bg, [2]) / 5, rtol=1e-10)
