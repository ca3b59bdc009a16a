"""HistGradientBoosting, IsolationForest, multi-output forests, Pipelines and category-set splits:
prediction, SHAP values, interaction values and every PD function equal brute force (all 2**d subsets
evaluated with the model's own predict) to 1e-6."""

from __future__ import annotations

import json

import numpy as np
import pytest

from fastpd import FastPD

SEEDS = [0, 1, 2]
D = 5


def _data(seed, n=300, cat=False, nan=0.0):
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(n + 68, D))
    effect = np.array([0.0, 2.0, -1.0, 3.0, 0.5, -2.0])
    if cat:
        x[:, 0] = rng.integers(0, 6, size=len(x))
    y = x[:, 1] * x[:, 2] + np.sin(2 * x[:, 3]) - 0.5 * x[:, 4] + (effect[x[:, 0].astype(int) % 6] if cat else x[:, 0])
    if nan:
        x[rng.random(x.shape) < nan] = np.nan
    return x[:n], y[:n], x[n : n + 60], x[n + 60 :]


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("kind", ["numeric", "nan", "categorical"])
def test_hist_gradient_boosting_regressor(seed, kind, h):
    from sklearn.ensemble import HistGradientBoostingRegressor

    x, y, bg, xe = _data(seed, cat=kind == "categorical", nan=0.15 if kind != "numeric" else 0.0)
    if kind == "categorical":
        xe[0, 0], xe[1, 0] = 7.0, -1.0  # an unseen and a negative category: both take the missing direction
    model = HistGradientBoostingRegressor(max_iter=6, max_depth=3, random_state=seed,
                                          categorical_features=[0] if kind == "categorical" else None).fit(x, y)
    n_set_splits = sum(int(p.nodes["is_categorical"].sum()) for it in model._predictors for p in it)
    assert (n_set_splits > 0) == (kind == "categorical")
    h.assert_exact(FastPD(model, bg), model.predict, xe, bg)


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("n_classes", [2, 3])
def test_hist_gradient_boosting_classifier(seed, n_classes, h):
    from sklearn.ensemble import HistGradientBoostingClassifier

    x, y, bg, xe = _data(seed, cat=True, nan=0.1)
    yc = np.digitize(y, np.quantile(y, np.linspace(0, 1, n_classes + 1)[1:-1]))
    model = HistGradientBoostingClassifier(max_iter=4, max_depth=3, random_state=seed,
                                           categorical_features=[0]).fit(x, yc)
    fp = FastPD(model, bg).fit()
    assert fp.n_outputs_ == (1 if n_classes == 2 else n_classes)
    h.assert_exact(fp, model.decision_function, xe, bg)


@pytest.mark.parametrize("seed", SEEDS)
def test_isolation_forest_explains_the_mean_path_length(seed, h):
    from sklearn.ensemble import IsolationForest

    x, _, bg, xe = _data(seed)
    model = IsolationForest(n_estimators=5, max_samples=64, max_features=0.8 if seed else 1.0,
                            random_state=seed).fit(x)
    c = float(h_avg(model.max_samples_))

    def path_length(z):
        return -c * np.log2(-model.score_samples(z))

    fp = FastPD(model, bg)
    h.assert_exact(fp, path_length, xe, bg)
    # the explained output maps back to score_samples exactly
    np.testing.assert_allclose(-(2.0 ** (-fp.predict(xe) / c)), model.score_samples(xe), rtol=1e-12)
    np.testing.assert_allclose(fp.shap_values(xe).sum(axis=1) + fp.intercept_, fp.predict(xe), atol=1e-10)


def h_avg(n):
    from fastpd._models import average_path_length

    return average_path_length(np.array([n]))[0]


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("forest", ["rf", "et"])
def test_multi_output_forests_one_explanation_per_output(seed, forest, h):
    from sklearn.ensemble import ExtraTreesRegressor, RandomForestRegressor

    x, y, bg, xe = _data(seed)
    y2 = np.column_stack([y, x[:, 0] - x[:, 3] ** 2, np.abs(x[:, 2])])
    cls = RandomForestRegressor if forest == "rf" else ExtraTreesRegressor
    model = cls(n_estimators=3, max_depth=4, random_state=seed).fit(x, y2)
    fp = FastPD(model, bg).fit()
    assert fp.n_outputs_ == 3 and fp.shap_values(xe).shape == (len(xe), D, 3)
    h.assert_exact(fp, model.predict, xe, bg)


@pytest.mark.parametrize("seed", SEEDS)
def test_pipeline_explained_in_the_transformed_space(seed, h):
    import pandas as pd
    from sklearn.ensemble import GradientBoostingRegressor
    from sklearn.impute import SimpleImputer
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    x, y, bg, xe = _data(seed, nan=0.1)
    cols = [f"f{j}" for j in range(D)]
    frame = pd.DataFrame(x, columns=cols)
    model = make_pipeline(SimpleImputer(), StandardScaler(),
                          GradientBoostingRegressor(n_estimators=5, max_depth=3, random_state=seed)).fit(frame, y)
    bg_f, xe_f = pd.DataFrame(bg, columns=cols), pd.DataFrame(xe, columns=cols)
    fp = FastPD(model, bg_f).fit()
    assert fp.feature_names_ == cols and fp.feature_names_in_ == cols
    head = model[:-1]
    bg_t, xe_t = head.transform(bg_f), head.transform(xe_f)
    v = h.brute_game(model[-1].predict, xe_t, bg_t)
    np.testing.assert_allclose(fp.shap_values(xe_f), h.brute_shapley(v, D), rtol=0, atol=1e-6)
    np.testing.assert_allclose(fp.shap_interaction_values(xe_f), h.brute_interactions(v, D), rtol=0, atol=1e-6)
    np.testing.assert_allclose(fp.pd_function(xe_f, ["f1", "f3"]), v[0b1010], rtol=0, atol=1e-6)
    np.testing.assert_allclose(fp.predict(xe_f), model.predict(xe_f), rtol=0, atol=1e-6)


@pytest.mark.parametrize("seed", SEEDS)
def test_lightgbm_category_splits(seed, h):
    import lightgbm as lgb

    x, y, bg, xe = _data(seed, cat=True, nan=0.1)
    xe[0, 0], xe[1, 0], xe[2, 0], xe[3, 0] = 9.0, -1.0, 2.7, -0.5  # unseen, negative, fractional codes
    model = lgb.LGBMRegressor(n_estimators=6, num_leaves=6, min_child_samples=5, min_data_per_group=5,
                              cat_smooth=1.0, max_cat_to_onehot=2, random_state=seed, n_jobs=1,
                              verbose=-1).fit(x, y, categorical_feature=[0])
    assert any("==" in str(t) for t in model.booster_.dump_model()["tree_info"])  # set splits are present
    h.assert_exact(FastPD(model, bg), lambda z: model.predict(z, raw_score=True), xe, bg)


@pytest.mark.parametrize("seed", SEEDS)
def test_xgboost_category_splits(seed, h):
    import xgboost as xgb

    x, y, bg, xe = _data(seed, cat=True, nan=0.1)
    xe[0, 0], xe[1, 0], xe[2, 0] = 9.0, -1.0, 2.7
    model = xgb.XGBRegressor(n_estimators=6, max_depth=3, feature_types=["c"] + ["q"] * (D - 1),
                             enable_categorical=True, max_cat_to_onehot=1, random_state=seed, n_jobs=1).fit(x, y)
    trees = json.loads(model.get_booster().save_raw(raw_format="json"))["learner"]["gradient_booster"]["model"]["trees"]
    assert any(1 in t["split_type"] for t in trees)  # set splits are present
    h.assert_exact(FastPD(model, bg), lambda z: model.predict(z, output_margin=True), xe, bg)


def test_hist_gradient_boosting_on_a_dataframe_with_string_categories(h):
    import pandas as pd
    from sklearn.ensemble import HistGradientBoostingRegressor

    x, y, bg, xe = _data(0, cat=True)
    names = np.array(["ash", "elm", "fir", "oak", "yew", "pine"])
    cols = [f"f{j}" for j in range(D)]

    def frame(a):
        df = pd.DataFrame(a, columns=cols)
        df["f0"] = pd.Categorical(names[a[:, 0].astype(int)], categories=sorted(names))
        return df

    model = HistGradientBoostingRegressor(max_iter=6, max_depth=3, random_state=0).fit(frame(x), y)
    assert model.is_categorical_[0]
    fp = FastPD(model, frame(bg)).fit()
    assert fp.feature_names_ == cols
    codes = sorted(names)  # the model's encoder codes categories in sorted order

    def f(z):  # the model as a function of the codes FastPD sees
        df = pd.DataFrame(z, columns=cols)
        df["f0"] = pd.Categorical(np.array(codes)[z[:, 0].astype(int)], categories=codes)
        return model.predict(df)

    xe_codes = fp(frame(xe)).data if _has_shap() else fp._validate(frame(xe), "X")
    np.testing.assert_array_equal(xe_codes[:, 0], [codes.index(v) for v in names[xe[:, 0].astype(int)]])
    v = h.brute_game(f, xe_codes, fp.background_)
    np.testing.assert_allclose(fp.shap_values(frame(xe)), h.brute_shapley(v, D), rtol=0, atol=1e-6)
    np.testing.assert_allclose(fp.predict(frame(xe)), model.predict(frame(xe)), rtol=0, atol=1e-10)


def _has_shap():
    try:
        import shap  # noqa: F401
    except ImportError:
        return False
    return True


@pytest.mark.filterwarnings("ignore:X does not have valid feature names")
def test_lightgbm_on_a_dataframe_with_category_dtype(h):
    import lightgbm as lgb
    import pandas as pd

    x, y, bg, xe = _data(1, cat=True)
    names = np.array(["ash", "elm", "fir", "oak", "yew", "pine"])
    cols = [f"f{j}" for j in range(D)]

    def frame(a):
        df = pd.DataFrame(a, columns=cols)
        df["f0"] = pd.Categorical(names[a[:, 0].astype(int)], categories=list(names))
        return df

    model = lgb.LGBMRegressor(n_estimators=6, num_leaves=6, min_child_samples=5, min_data_per_group=5,
                              cat_smooth=1.0, max_cat_to_onehot=2, n_jobs=1, verbose=-1).fit(frame(x), y)
    assert model.booster_.pandas_categorical == [list(names)]
    fp = FastPD(model, frame(bg))
    xe_f = frame(xe)
    xe_f.loc[0, "f0"] = np.nan  # missing category
    codes = xe.copy()
    codes[0, 0] = np.nan
    v = h.brute_game(lambda z: model.predict(z, raw_score=True), codes, bg)  # LightGBM reads numpy codes directly
    np.testing.assert_allclose(fp.shap_values(xe_f), h.brute_shapley(v, D), rtol=0, atol=1e-6)
    np.testing.assert_allclose(fp.predict(xe_f), model.predict(xe_f, raw_score=True), rtol=0, atol=1e-10)


def test_hist_gradient_boosting_path_dependent_pd_equals_sklearn_recursion():
    from sklearn.ensemble import HistGradientBoostingRegressor
    from sklearn.inspection import partial_dependence

    x, y, _, _ = _data(0)
    model = HistGradientBoostingRegressor(max_iter=8, max_depth=3, random_state=0).fit(x, y)
    fp = FastPD(model, method="path-dependent").fit()
    for cols in ([0], [2], [1, 2]):
        res = partial_dependence(model, x, cols, method="recursion", grid_resolution=5)
        grid = np.array(np.meshgrid(*res["grid_values"], indexing="ij")).reshape(len(cols), -1).T
        xg = np.zeros((len(grid), D))
        xg[:, cols] = grid
        # scikit-learn's recursion leaves out the baseline prediction
        np.testing.assert_allclose(fp.pd_function(xg, cols) - fp.offset_, res["average"][0].ravel(), atol=1e-10)
