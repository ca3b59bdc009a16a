"""CatBoost's oblivious trees: exact against brute force and against CatBoost's own SHAP values."""

from __future__ import annotations

import numpy as np
import pytest

from fastpd import FastPD

cb = pytest.importorskip("catboost")
D = 5


def _data(seed, n=300):
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(n + 68, D))
    y = x[:, 0] + x[:, 1] * x[:, 2] + np.sin(2 * x[:, 3]) - 0.5 * x[:, 4]
    x[rng.random(x.shape) < 0.1] = np.nan
    return x[:n], y[:n], x[n : n + 60], x[n + 60 :]


def _fit(model, x, y):
    return model.set_params(iterations=6, depth=3, random_seed=0, verbose=0, thread_count=1,
                            allow_writing_files=False).fit(x, y)


@pytest.mark.parametrize("seed", [0, 1, 2])
@pytest.mark.parametrize("task", ["regression", "binary", "multiclass"])
def test_catboost_equals_brute_force(seed, task, h):
    x, y, bg, xe = _data(seed)
    if task == "regression":
        model = _fit(cb.CatBoostRegressor(nan_mode="Max" if seed == 1 else "Min"), x, y)
    elif task == "binary":
        model = _fit(cb.CatBoostClassifier(), x, (y > 0).astype(int))
    else:
        model = _fit(cb.CatBoostClassifier(loss_function="MultiClass"), x, np.digitize(y, [-0.5, 0.5]))
    fp = FastPD(model, bg).fit()
    assert fp.n_outputs_ == (3 if task == "multiclass" else 1)
    h.assert_exact(fp, lambda z: model.predict(z, prediction_type="RawFormulaVal"), xe, bg)


def test_catboost_interventional_shap_equals_catboosts_independent_tree_shap():
    x, y, bg, xe = _data(0)
    model = _fit(cb.CatBoostRegressor(), x, y)
    # CatBoost needs labels in both pools for reference_data; they do not enter the values
    own = model.get_feature_importance(cb.Pool(xe, label=np.zeros(len(xe))), type="ShapValues",
                                       reference_data=cb.Pool(bg, label=np.zeros(len(bg))))
    fp = FastPD(model, bg)
    np.testing.assert_allclose(fp.shap_values(xe), own[:, :D], rtol=0, atol=1e-10)
    np.testing.assert_allclose(fp.shap_values(xe).sum(axis=1) + fp.intercept_,
                               model.predict(xe, prediction_type="RawFormulaVal"), rtol=0, atol=1e-10)


def test_catboost_categorical_features_are_refused():
    rng = np.random.default_rng(0)
    x = rng.integers(0, 3, size=(100, 2))
    model = cb.CatBoostRegressor(iterations=2, depth=2, verbose=0, thread_count=1, allow_writing_files=False)
    model.fit(x, x[:, 0] * 1.0, cat_features=[0])
    with pytest.raises(ValueError, match="CatBoost models with categorical"):
        FastPD(model, x).fit()
    with pytest.raises(ValueError, match="not fitted"):
        FastPD(cb.CatBoostRegressor(), x).fit()


@pytest.mark.parametrize("policy", ["Depthwise", "Lossguide"])
def test_catboost_non_symmetric_trees_are_refused_by_name(policy):
    x, y, bg, _ = _data(0)
    model = _fit(cb.CatBoostRegressor(grow_policy=policy), x, y)
    with pytest.raises(ValueError, match=f"grow_policy='{policy}'.*SymmetricTree"):
        FastPD(model, bg).fit()
