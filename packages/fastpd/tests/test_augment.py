"""The per-row paths (augment="per-row", "auto") return the full tables' numbers bit for bit; save/load."""

from __future__ import annotations

import numpy as np
import pytest

from fastpd import FastPD


def _no_tables(fp: FastPD) -> bool:
    return all(g.table is None for b in fp._blocks for g in b.groups)


def _no_shap_tables(fp: FastPD) -> bool:
    return all("shap" not in g.cache for b in fp._blocks for g in b.groups)


@pytest.mark.parametrize("name", ["xgboost", "lightgbm", "sklearn-rf", "xgboost-multiclass", "sklearn-et"])
@pytest.mark.parametrize("n_jobs", [1, 2])
def test_per_row_paths_equal_the_full_tables_exactly(models, data, name, n_jobs):
    model = models[name]
    bg, xe = data["bg"], data["Xe"][:7]
    full = FastPD(model, bg, augment="full", n_jobs=n_jobs)
    lazy = FastPD(model, bg, augment="per-row", n_jobs=n_jobs)
    for subset in [0, 3, (1, 2), (0, 4, 5)]:
        np.testing.assert_array_equal(lazy.pd_function(xe, subset), full.pd_function(xe, subset))
    assert _no_tables(lazy)  # the PD functions came from the background codes
    np.testing.assert_array_equal(lazy.intercept_, full.intercept_)
    np.testing.assert_array_equal(lazy.shap_values(xe), full.shap_values(xe))
    assert _no_tables(lazy) and _no_shap_tables(lazy)  # ... and the SHAP values from the rows' codes
    assert not _no_shap_tables(full)
    # a query that reads the tables builds them; the numbers stay the same, per row from the tables too
    np.testing.assert_array_equal(lazy.shap_interaction_values(xe[:3]), full.shap_interaction_values(xe[:3]))
    assert not _no_tables(lazy) and _no_shap_tables(lazy)
    np.testing.assert_array_equal(lazy.shap_values(xe), full.shap_values(xe))


def test_per_row_paths_with_missing_values_and_categories(data):
    import lightgbm as lgb

    rng = np.random.default_rng(3)
    x = data["X"].copy()
    x[:, 0] = rng.integers(0, 5, size=len(x))
    x[rng.random(x.shape) < 0.1] = np.nan
    model = lgb.LGBMRegressor(n_estimators=10, num_leaves=8, min_child_samples=5, min_data_per_group=5,
                              verbose=-1, n_jobs=1, random_state=0).fit(x, data["y"], categorical_feature=[0])
    bg, xe = x[:150], x[150:160]
    full, lazy = FastPD(model, bg, augment="full"), FastPD(model, bg, augment="per-row")
    np.testing.assert_array_equal(lazy.shap_values(xe), full.shap_values(xe))
    np.testing.assert_array_equal(lazy.pd_function(xe, 0), full.pd_function(xe, 0))


def test_auto_switches_to_the_full_tables_and_keeps_the_numbers(models, data):
    model = models["xgboost"]
    bg, xe = data["bg"], data["Xe"]
    auto = FastPD(model, bg)
    one = auto.shap_values(xe[:1])
    assert _no_shap_tables(auto)  # one row: per row
    many = auto.shap_values(np.repeat(xe, 40, axis=0))  # 1200 rows: the full tables are cheaper
    assert not _no_shap_tables(auto)
    # the same row in a batch of 1200 rows: BLAS may sum in another order (the last bit), on every path
    np.testing.assert_allclose(many[:1], one, rtol=1e-13, atol=1e-15)
    np.testing.assert_array_equal(one, FastPD(model, bg, augment="full").shap_values(xe[:1]))
    np.testing.assert_array_equal(many, FastPD(model, bg, augment="full").shap_values(np.repeat(xe, 40, axis=0)))


def test_auto_pd_curve_stays_on_the_codes(models, data):
    fp = FastPD(models["xgboost"], data["bg"])
    grid = np.zeros((50, data["bg"].shape[1]))
    grid[:, 2] = np.linspace(-2, 2, 50)
    curve = fp.pd_function(grid, 2)
    assert _no_tables(fp)
    np.testing.assert_array_equal(curve, FastPD(models["xgboost"], data["bg"], augment="full").pd_function(grid, 2))


def test_augment_is_validated(models, data):
    with pytest.raises(ValueError, match="augment"):
        FastPD(models["xgboost"], data["bg"], augment="lazy").fit()


def test_save_and_load_a_fitted_explainer(models, data, tmp_path):
    fp = FastPD(models["lightgbm"], data["bg"]).fit()
    before = fp.shap_values(data["Xe"])
    path = tmp_path / "explainer.pkl"
    fp.save(path)
    loaded = FastPD.load(path)
    assert "_blocks" in loaded.__dict__  # fitted: no refit on the first query
    np.testing.assert_array_equal(loaded.shap_values(data["Xe"]), before)
    np.testing.assert_array_equal(loaded.pd_function(data["Xe"], [0, 1]), fp.pd_function(data["Xe"], [0, 1]))
    assert loaded.intercept_ == fp.intercept_


def test_load_refuses_another_object(tmp_path):
    import pickle

    path = tmp_path / "other.pkl"
    path.write_bytes(pickle.dumps({"not": "an explainer"}))
    with pytest.raises(TypeError, match="FastPD"):
        FastPD.load(path)


@pytest.mark.parametrize("augment", ["full", "per-row", "auto"])
def test_single_leaf_trees(data, augment):
    """A forest fitted on a constant target has no split at all: PD and SHAP of a constant."""
    from sklearn.ensemble import RandomForestRegressor

    x = data["X"][:200]
    model = RandomForestRegressor(n_estimators=3, max_depth=3, random_state=0).fit(x, np.full(len(x), 2.5))
    fp = FastPD(model, x[:50], augment=augment)
    np.testing.assert_array_equal(fp.shap_values(x[:4]), np.zeros((4, x.shape[1])))
    np.testing.assert_allclose(fp.pd_function(x[:4], [0, 1]), 2.5, rtol=1e-15)
    np.testing.assert_allclose(fp.intercept_, 2.5, rtol=1e-15)


def test_loaded_explainer_answers_other_rows_as_a_fresh_one(models, data, tmp_path):
    """Saved mid-way (per-row state, no tables yet), then asked about rows it never saw."""
    fp = FastPD(models["xgboost"], data["bg"])
    fp.shap_values(data["Xe"][:1])
    assert _no_shap_tables(fp)
    fp.save(tmp_path / "e.pkl")
    loaded = FastPD.load(tmp_path / "e.pkl")
    full = FastPD(models["xgboost"], data["bg"], augment="full")
    other = data["Xe"][5:25]
    np.testing.assert_array_equal(loaded.shap_values(other), full.shap_values(other))
    np.testing.assert_array_equal(loaded.pd_function(other, [1, 3]), full.pd_function(other, [1, 3]))
    FastPD(models["xgboost"], data["bg"]).save(tmp_path / "unfitted.pkl")  # not fitted: fits on first use
    np.testing.assert_array_equal(FastPD.load(tmp_path / "unfitted.pkl").shap_values(other), full.shap_values(other))


def test_load_of_another_version_refits_and_says_so(models, data, tmp_path, monkeypatch):
    from fastpd import explainer

    fp = FastPD(models["lightgbm"], data["bg"]).fit()
    monkeypatch.setattr(explainer, "_version", lambda: "0.0.1")
    fp.save(tmp_path / "old.pkl")
    monkeypatch.undo()
    with pytest.warns(UserWarning, match="written by fastpd 0.0.1.*refits"):
        loaded = FastPD.load(tmp_path / "old.pkl")
    assert "_blocks" not in loaded.__dict__  # the other version's fitted state is not used
    np.testing.assert_array_equal(loaded.shap_values(data["Xe"]), fp.shap_values(data["Xe"]))


def test_load_refuses_an_unstamped_explainer(models, data, tmp_path):
    import pickle

    path = tmp_path / "bare.pkl"
    path.write_bytes(pickle.dumps(FastPD(models["lightgbm"], data["bg"]).fit()))
    with pytest.raises(ValueError, match="without a version stamp"):
        FastPD.load(path)


def test_load_refuses_a_payload_without_its_version_stamp(tmp_path):
    import pickle

    from fastpd.explainer import _SAVE_FORMAT

    path = tmp_path / "edited.pkl"
    path.write_bytes(pickle.dumps({"format": _SAVE_FORMAT, "params": {}, "state": None}))
    with pytest.raises(ValueError, match="no fastpd version stamp"):
        FastPD.load(path)


def test_decomposition_of_a_model_without_splits_sums_to_its_constant(data):
    from sklearn.ensemble import RandomForestRegressor

    x = data["X"][:200]
    model = RandomForestRegressor(n_estimators=2, max_depth=3, random_state=0).fit(x, np.full(len(x), 2.5))
    fp = FastPD(model, x[:50])
    dec = fp.decompose(x[:4])
    assert dec.components == {}
    np.testing.assert_allclose(dec.total(), np.full(4, 2.5), rtol=1e-15)
    np.testing.assert_allclose(fp.explain(x[:3]).decomposition.total(), np.full(3, 2.5), rtol=1e-15)


@pytest.mark.parametrize("strict", [True, False])
def test_background_bitsets_equal_the_split_directions(data, strict):
    """Prefix bitsets of the sorted features (NaN to the default side, category-set splits) = go_left_t."""
    import lightgbm as lgb

    from fastpd import _engine as eng
    from fastpd._models import parse_model

    rng = np.random.default_rng(5)
    x = data["X"].copy()
    x[:, 0] = rng.integers(0, 5, size=len(x))
    x[rng.random(x.shape) < 0.1] = np.nan
    x[:20, 1] = x[20:40, 1]  # ties
    model = lgb.LGBMRegressor(n_estimators=5, num_leaves=8, min_child_samples=5, min_data_per_group=5,
                              verbose=-1, n_jobs=1, random_state=0).fit(x, data["y"], categorical_feature=[0])
    for block in eng.compile_blocks(parse_model(model), 2):
        bg = x[:131]
        eng.keep_background_bits(block, bg, strict)
        expected = eng._pack_rows(block.go_left_t(bg, strict)[:-1])
        np.testing.assert_array_equal(block.background_bits, expected)


def test_background_bitsets_in_row_chunks_equal_the_prefix_bitsets(models, data, monkeypatch):
    """A large background is packed from the split directions in chunks of 64 x k rows: the same bits."""
    from fastpd import _engine as eng
    from fastpd._models import parse_model

    bg = data["bg"][:150]
    block = eng.compile_blocks(parse_model(models["xgboost"]), 1)[0]
    eng.keep_background_bits(block, bg, True)
    expected = block.background_bits.copy()
    monkeypatch.setattr(eng, "_PREFIX_WORDS", 1)  # every path goes to the chunks, of 64 rows each
    eng.keep_background_bits(block, bg, True)
    np.testing.assert_array_equal(block.background_bits, expected)


@pytest.mark.parametrize("name", ["xgboost", "lightgbm", "xgboost-multiclass"])
@pytest.mark.parametrize("dense_words", [0, 1000])
def test_walks_over_non_zero_words_and_over_all_words_equal_the_tables(models, data, monkeypatch, name,
                                                                        dense_words):
    """Both forms of the walk (non-zero words only, every word) give the full tables' numbers bit for bit."""
    from fastpd import _engine as eng

    monkeypatch.setattr(eng, "_DENSE_WALK_WORDS", dense_words)
    bg, xe = data["bg"], data["Xe"][:4]
    full = FastPD(models[name], bg, augment="full").fit()
    lazy = FastPD(models[name], bg, augment="per-row").fit()
    np.testing.assert_array_equal(lazy.intercept_, full.intercept_)
    np.testing.assert_array_equal(lazy.pd_function(xe, (1, 2)), full.pd_function(xe, (1, 2)))
    np.testing.assert_array_equal(lazy.shap_values(xe), full.shap_values(xe))
    assert _no_tables(lazy)
