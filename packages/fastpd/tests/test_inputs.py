"""Inputs are read as the model reads them: missing-value markers, DataFrame column names, nullable dtypes."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

from fastpd import FastPD


def _xgb_with_marker(seed):
    import xgboost as xgb

    rng = np.random.default_rng(seed)
    x = rng.normal(size=(400, 4))
    y = x[:, 0] + 2 * x[:, 1] * (x[:, 2] > 0) + x[:, 3]
    x[rng.random(x.shape) < 0.25] = -999.0
    model = xgb.XGBRegressor(n_estimators=8, max_depth=3, missing=-999.0, random_state=seed, n_jobs=1).fit(x, y)
    return model, x[:300], x[300:360], x[360:368]


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_xgboost_missing_marker_is_read_from_the_model(seed, h):
    model, _, bg, xe = _xgb_with_marker(seed)
    fp = FastPD(model, bg)

    def f(z):
        return model.predict(z, output_margin=True)

    np.testing.assert_allclose(fp.predict(xe), f(xe), rtol=0, atol=1e-5)
    phi = fp.shap_values(xe)
    np.testing.assert_allclose(phi.sum(axis=1) + fp.intercept_, f(xe), rtol=0, atol=1e-5)
    v = h.brute_game(f, xe, bg)
    np.testing.assert_allclose(phi, h.brute_shapley(v, 4), rtol=0, atol=1e-5)
    # NaN is missing too (as in XGBoost): the same rows with NaN in place of the marker give the same answer
    nan_xe = np.where(xe == -999.0, np.nan, xe)
    np.testing.assert_allclose(fp.shap_values(nan_xe), phi, rtol=0, atol=1e-12)


def _frame_model(lib):
    import pandas as pd

    rng = np.random.default_rng(0)
    cols = ["a", "b", "c", "d"]
    x = pd.DataFrame(rng.normal(size=(300, 4)), columns=cols)
    y = x["a"] + 2 * x["b"] * x["c"] - x["d"]
    if lib == "xgboost":
        import xgboost as xgb

        model = xgb.XGBRegressor(n_estimators=5, max_depth=3, n_jobs=1).fit(x, y)
    elif lib == "lightgbm":
        import lightgbm as lgb

        model = lgb.LGBMRegressor(n_estimators=5, num_leaves=6, verbose=-1, n_jobs=1).fit(x, y)
    else:
        from sklearn.ensemble import GradientBoostingRegressor

        model = GradientBoostingRegressor(n_estimators=5, max_depth=3, random_state=0).fit(x, y)
    return model, x


@pytest.mark.parametrize("lib", ["xgboost", "lightgbm", "sklearn"])
def test_dataframe_columns_are_checked_like_scikit_learn(lib):
    model, x = _frame_model(lib)
    fp = FastPD(model, x.iloc[:50])
    fp.shap_values(x.iloc[:5])  # same columns: fine
    assert fp.feature_names_in_ == ["a", "b", "c", "d"]
    with pytest.raises(ValueError, match="same order as they were in fit: column 0 is 'd', expected 'a'"):
        fp.shap_values(x[["d", "c", "b", "a"]].iloc[:5])
    with pytest.raises(ValueError, match=r"unseen at fit time: \['e'\].*yet now missing: \['d'\]"):
        fp.pd_function(x.rename(columns={"d": "e"}).iloc[:5], 0)
    with pytest.raises(ValueError, match="background should match"):
        FastPD(model, x[["b", "a", "c", "d"]]).fit()
    with pytest.warns(UserWarning, match="X does not have valid feature names, but FastPD was fitted with feature"):
        phi = fp.shap_values(x.iloc[:5].to_numpy())
    np.testing.assert_allclose(phi, fp.shap_values(x.iloc[:5]))


def test_background_columns_are_the_reference_when_the_model_has_no_names():
    import pandas as pd
    from sklearn.ensemble import RandomForestRegressor

    rng = np.random.default_rng(0)
    x = rng.normal(size=(200, 3))
    model = RandomForestRegressor(n_estimators=2, max_depth=3, random_state=0).fit(x, x[:, 0])
    bg = pd.DataFrame(x[:50], columns=["u", "v", "w"])
    fp = FastPD(model, bg).fit()
    assert fp.feature_names_in_ == fp.feature_names_ == ["u", "v", "w"]
    with pytest.raises(ValueError, match="same order"):
        fp.shap_values(bg[["v", "u", "w"]])
    plain = FastPD(model, x[:50]).fit()
    with pytest.warns(UserWarning, match="X has feature names, but FastPD was fitted without feature names"):
        plain.shap_values(bg)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        plain.shap_values(x[:3])  # numpy after numpy: silent


def test_pandas_nullable_dtypes_with_na_are_missing_values(h):
    import lightgbm as lgb
    import pandas as pd

    rng = np.random.default_rng(0)
    x = rng.normal(size=(300, 3))
    x[rng.random(x.shape) < 0.2] = np.nan
    model = lgb.LGBMRegressor(n_estimators=5, num_leaves=6, verbose=-1, n_jobs=1).fit(x, np.nan_to_num(x).sum(1))
    frame = pd.DataFrame({"f0": pd.array(x[:, 0], dtype="Float64"),
                          "f1": pd.array(np.where(np.isnan(x[:, 1]), None, np.round(x[:, 1] * 3)), dtype="Int64"),
                          "f2": x[:, 2]})
    assert frame["f1"].isna().any() and frame["f0"].isna().any()
    expected = frame.astype("float64").to_numpy()
    fp = FastPD(model, frame.iloc[:100])
    np.testing.assert_allclose(fp.shap_values(frame.iloc[100:110]),
                               FastPD(model, expected[:100]).shap_values(expected[100:110]), rtol=0, atol=1e-12)
    np.testing.assert_allclose(fp.predict(frame.iloc[100:110]), model.predict(expected[100:110], raw_score=True),
                               atol=1e-10)
    with pytest.raises(ValueError, match=r"non-numeric columns: 'f1' \(category\)"):
        fp.shap_values(frame.astype({"f1": "category"}))


def test_xgboost_sparse_input_reads_absent_entries_as_missing(h):
    """XGBoost treats entries absent from a sparse matrix as missing (not 0): a Pipeline whose
    ColumnTransformer outputs sparse rows, and a sparse matrix passed directly, are explained as predicted."""
    import pandas as pd
    import scipy.sparse as sp
    import xgboost as xgb
    from sklearn.compose import ColumnTransformer
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import OneHotEncoder

    rng = np.random.default_rng(0)
    df = pd.DataFrame({"a": rng.normal(size=300), "b": rng.choice(list("pqr"), 300), "c": rng.normal(size=300)})
    y = df["a"] + 2 * (df["b"] == "q") + df["c"] * (df["b"] == "r")
    ct = ColumnTransformer([("oh", OneHotEncoder(), ["b"])], remainder="passthrough", sparse_threshold=1.0)
    model = make_pipeline(ct, xgb.XGBRegressor(n_estimators=8, max_depth=3, n_jobs=1)).fit(df, y)
    bg, xe = df.iloc[:20], df.iloc[20:26]
    assert sp.issparse(ct.transform(xe))
    fp = FastPD(model, bg)
    f = model[-1].predict(ct.transform(xe), output_margin=True)
    phi = fp.shap_values(xe)
    np.testing.assert_allclose(phi.sum(axis=1) + fp.intercept_, f, rtol=0, atol=1e-5)

    def g(z):  # the model's output on rows whose zeros are absent entries, as the sparse pipeline gives them
        return model[-1].predict(sp.csr_matrix(z), output_margin=True)

    zb, ze = ct.transform(bg).toarray(), ct.transform(xe).toarray()
    np.testing.assert_allclose(phi, h.brute_shapley(h.brute_game(g, ze, zb), ze.shape[1]), rtol=0, atol=1e-5)
    # a sparse matrix given directly to a model fitted on one
    x = rng.normal(size=(300, 3))
    x[x < 0.3] = 0.0
    s = sp.csr_matrix(x)
    direct = xgb.XGBRegressor(n_estimators=8, max_depth=3, n_jobs=1).fit(s, x[:, 0] + 2 * x[:, 1])
    fp = FastPD(direct, s[:20])
    np.testing.assert_allclose(fp.predict(s[20:26]), direct.predict(s[20:26], output_margin=True), rtol=0, atol=1e-5)
