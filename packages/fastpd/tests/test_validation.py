"""Bad input raises ValueError naming the problem; NaN follows the model's default direction."""

from __future__ import annotations

import numpy as np
import pytest

from fastpd import FastPD


def test_wrong_feature_count(models, data):
    fp = FastPD(models["xgboost"], data["bg"][:50])
    with pytest.raises(ValueError, match="has 5 features but the model has 6"):
        fp.shap_values(data["Xe"][:, :5])
    with pytest.raises(ValueError, match="background has 7 features but the model has 6"):
        FastPD(models["lightgbm"], np.ones((10, 7))).fit()
    with pytest.raises(ValueError, match="2-D"):
        fp.pd_function(data["Xe"][0], 0)


def test_empty_or_missing_background(models):
    with pytest.raises(ValueError, match="background is empty"):
        FastPD(models["sklearn-gbr"], np.zeros((0, 6))).fit()
    with pytest.raises(ValueError, match="needs background"):
        FastPD(models["sklearn-gbr"]).fit()


def test_feature_index_out_of_range_or_repeated(models, data):
    fp = FastPD(models["sklearn-gbr"], data["bg"][:50])
    with pytest.raises(ValueError, match="feature index 6 is out of range: the model has 6 features"):
        fp.pd_function(data["Xe"], [0, 6])
    with pytest.raises(ValueError, match="out of range"):
        fp.pd_function(data["Xe"], -1)
    with pytest.raises(ValueError, match="twice"):
        fp.pd_function(data["Xe"], [1, 1])
    with pytest.raises(ValueError, match="unknown feature name"):
        fp.pd_function(data["Xe"], "age")


def test_non_finite_values(models, data):
    xe = data["Xe"].copy()
    xe[3, 2] = np.nan
    with pytest.raises(ValueError, match="NaN at row 3, feature 2.*GradientBoostingRegressor cannot route"):
        FastPD(models["sklearn-gbr"], data["bg"][:50]).shap_values(xe)
    bad_bg = data["bg"][:50].copy()
    bad_bg[0, 0] = np.nan
    with pytest.raises(ValueError, match="background contains NaN"):
        FastPD(models["sklearn-gbr"], bad_bg).fit()
    xe[3, 2] = np.inf
    with pytest.raises(ValueError, match="infinite value at row 3, feature 2"):
        FastPD(models["xgboost"], data["bg"][:50]).pd_function(xe, 2)


def test_bad_options_and_models(models, data):
    from sklearn.ensemble import AdaBoostRegressor
    from sklearn.linear_model import LinearRegression
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    bg = data["bg"][:50]
    with pytest.raises(ValueError, match="FastPD: method must be one of 'fastpd', 'path-dependent'; got str 'exact'"):
        FastPD(models["xgboost"], bg, method="exact").fit()
    with pytest.raises(ValueError, match="max_background"):
        FastPD(models["xgboost"], bg, max_background=0).fit()
    with pytest.raises(ValueError, match="n_jobs"):
        FastPD(models["xgboost"], bg, n_jobs=0).fit()
    with pytest.raises(ValueError, match="max_order"):
        FastPD(models["xgboost"], bg).decompose(data["Xe"], max_order=0)
    for model, name in ((AdaBoostRegressor(n_estimators=2, random_state=0).fit(data["X"], data["y"]),
                         "sklearn.ensemble._weight_boosting.AdaBoostRegressor"),
                        (LinearRegression().fit(data["X"], data["y"]), "LinearRegression"), ("not a model", "str")):
        with pytest.raises(ValueError, match=f"unsupported model type .*{name}; accepted: xgboost.*lightgbm.*"
                                             "HistGradientBoosting.*IsolationForest.*Pipeline"):
            FastPD(model, bg).fit()
    pipe = make_pipeline(StandardScaler(), LinearRegression()).fit(data["X"], data["y"])
    with pytest.raises(ValueError, match="Pipeline's last step is not supported: unsupported model type "
                                         ".*LinearRegression; accepted"):
        FastPD(pipe, bg).fit()


def _nan_data(data, frac=0.2, seed=1):
    rng = np.random.default_rng(seed)
    x = data["X"].copy()
    x[rng.random(x.shape) < frac] = np.nan
    bg = data["bg"][:200].copy()
    bg[rng.random(bg.shape) < frac] = np.nan
    xe = data["Xe"].copy()
    xe[rng.random(xe.shape) < frac] = np.nan
    return x, bg, xe


@pytest.mark.parametrize("lib", ["xgboost", "lightgbm", "lightgbm-zero", "sklearn-rf", "sklearn-tree"])
def test_nan_routed_by_default_direction(data, lib, h):
    import lightgbm as lgb
    import xgboost as xgb
    from sklearn.ensemble import RandomForestRegressor
    from sklearn.tree import DecisionTreeRegressor

    x, bg, xe = _nan_data(data)
    y = data["y"]
    if lib == "xgboost":
        model = xgb.XGBRegressor(n_estimators=8, max_depth=3, n_jobs=1).fit(x, y)
    elif lib == "lightgbm":
        model = lgb.LGBMRegressor(n_estimators=8, num_leaves=8, min_child_samples=5, verbose=-1, n_jobs=1).fit(x, y)
    elif lib == "lightgbm-zero":
        # missing_type 'Zero': NaN and exact zeros take the default direction
        x, bg, xe = (np.nan_to_num(a, nan=0.0) for a in (x, bg, xe))
        xe[:5, 0] = np.nan
        model = lgb.LGBMRegressor(n_estimators=8, num_leaves=8, min_child_samples=5, verbose=-1, n_jobs=1,
                                  zero_as_missing=True).fit(x, y)
    elif lib == "sklearn-rf":
        model = RandomForestRegressor(n_estimators=4, max_depth=4, random_state=0).fit(x, y)
    else:
        # trained without NaN: sklearn sends NaN to the child with most samples
        model = DecisionTreeRegressor(max_depth=4, random_state=0).fit(np.nan_to_num(x), y)
    fp = FastPD(model, bg)
    np.testing.assert_allclose(fp.predict(xe), h.margin(model, xe), rtol=1e-5, atol=1e-5)
    for subset in [(0,), (1, 3), (0, 2, 4, 5)]:
        np.testing.assert_allclose(fp.pd_function(xe, subset), h.brute_pd(model, xe, bg, subset), rtol=1e-5, atol=1e-5)
    dec = fp.decompose(xe)
    np.testing.assert_allclose(dec.total(), h.margin(model, xe), rtol=1e-5, atol=1e-5)


def test_unfitted_models_raise_not_fitted_error():
    import lightgbm as lgb
    import xgboost as xgb
    from sklearn.ensemble import GradientBoostingRegressor, RandomForestClassifier
    from sklearn.exceptions import NotFittedError

    bg = np.zeros((5, 3))
    from sklearn.ensemble import HistGradientBoostingRegressor, IsolationForest
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    for model in (GradientBoostingRegressor(), RandomForestClassifier(), xgb.XGBRegressor(), lgb.LGBMClassifier(),
                  lgb.LGBMRegressor(), HistGradientBoostingRegressor(), IsolationForest()):
        with pytest.raises(NotFittedError, match=f"{type(model).__name__} is not fitted"):
            FastPD(model, bg).fit()
        with pytest.raises(ValueError):  # NotFittedError is a ValueError: old handlers keep working
            FastPD(model, bg).shap_values(bg)
    with pytest.raises(NotFittedError, match="Pipeline is not fitted"):
        FastPD(make_pipeline(StandardScaler(), GradientBoostingRegressor()), bg).fit()


def test_explainer_fit_state(models, data):
    import copy
    import pickle

    from sklearn.exceptions import NotFittedError

    fp = FastPD(models["sklearn-gbr"], data["bg"][:50])
    for name in ("intercept_", "feature_names_", "feature_names_in_", "n_outputs_"):
        with pytest.raises(NotFittedError, match=f"FastPD is not fitted yet, so it has no {name}"):
            getattr(fp, name)
    assert not hasattr(fp, "background_")
    with pytest.raises(AttributeError, match="no attribute 'nonsense_'"):
        _ = fp.nonsense_
    assert copy.deepcopy(fp).method == "fastpd"
    phi = fp.shap_values(data["Xe"][:2])  # the first query fits
    assert fp.background_size_ == 50 and fp.fit() is fp
    np.testing.assert_allclose(pickle.loads(pickle.dumps(fp)).shap_values(data["Xe"][:2]), phi)


def test_background_subsample_follows_random_state(models, data):
    bg = data["bg"]
    a = FastPD(models["sklearn-gbr"], bg, max_background=40, random_state=3).fit()
    b = FastPD(models["sklearn-gbr"], bg, max_background=40, random_state=np.random.default_rng(3)).fit()
    c = FastPD(models["sklearn-gbr"], bg, max_background=40, random_state=4).fit()
    np.testing.assert_array_equal(a.background_, b.background_)
    assert a.background_.shape == (40, 6) and not np.array_equal(a.background_, c.background_)
