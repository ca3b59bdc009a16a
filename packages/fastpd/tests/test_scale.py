"""Chunked streaming, thread parallelism over trees and dask arrays give identical results."""

from __future__ import annotations

import numpy as np
import pytest

from fastpd import FastPD


def test_small_chunks_and_threads_do_not_change_results(models, data):
    model, bg, xe = models["xgboost-multiclass"], data["bg"], data["Xe"]
    ref = FastPD(model, bg)
    ex = ref.explain(xe)
    for fp in (FastPD(model, bg, chunk_memory_mb=0.05), FastPD(model, bg, n_jobs=2),
               FastPD(model, bg, n_jobs=3, chunk_memory_mb=0.05)):
        got = fp.explain(xe)
        np.testing.assert_allclose(got.shap_values, ex.shap_values, rtol=1e-12, atol=1e-12)
        np.testing.assert_allclose(got.shap_interaction_values, ex.shap_interaction_values, rtol=1e-12, atol=1e-12)
        for s, comp in ex.decomposition.components.items():
            np.testing.assert_allclose(got.decomposition.components[s], comp, rtol=1e-12, atol=1e-12)
        np.testing.assert_allclose(fp.pd_function(xe, [0, 2]), ref.pd_function(xe, [0, 2]), rtol=1e-12, atol=1e-12)
        np.testing.assert_allclose(fp.intercept_, ref.intercept_, rtol=1e-12, atol=1e-12)
    assert FastPD(model, bg, chunk_memory_mb=0.05).fit()._rows_per_chunk(lambda g: 8) < len(xe)


def test_dask_array_is_computed_chunkwise(models, data):
    da = pytest.importorskip("dask.array")
    import dask

    model, bg, xe = models["lightgbm"], data["bg"], data["Xe"]
    fp = FastPD(model, bg)
    xd = da.from_array(xe, chunks=(7, 3))
    with dask.config.set(scheduler="synchronous"):
        np.testing.assert_allclose(fp.shap_values(xd), fp.shap_values(xe), rtol=1e-12, atol=1e-12)
        np.testing.assert_allclose(fp.pd_function(xd, 1), fp.pd_function(xe, 1), rtol=1e-12, atol=1e-12)


def test_max_background_subsamples_reproducibly(models, data):
    model, bg, xe = models["xgboost"], data["bg"], data["Xe"]
    a = FastPD(model, bg, max_background=100, random_state=3)
    b = FastPD(model, bg, max_background=100, random_state=3)
    np.testing.assert_array_equal(a.shap_values(xe), b.shap_values(xe))
    assert a.background_size_ == 100
    rows = np.sort(np.random.default_rng(3).choice(len(bg), 100, replace=False))
    np.testing.assert_allclose(a.shap_values(xe), FastPD(model, bg[rows]).shap_values(xe), rtol=1e-12)


def test_empty_query_and_single_row(models, data):
    fp = FastPD(models["sklearn-gbr"], data["bg"][:50])
    assert fp.shap_values(np.zeros((0, 6))).shape == (0, 6)
    one = fp.shap_values(data["Xe"][:1])
    assert one.shape == (1, 6)
    np.testing.assert_allclose(one[0].sum() + fp.intercept_, fp.predict(data["Xe"][:1])[0], rtol=1e-10)


def test_deep_forest_with_many_path_features(data, h):
    """Fully grown trees (paths using all 6 features), split into several leaf groups: still exact."""
    from sklearn.ensemble import RandomForestRegressor

    from fastpd import _engine

    model = RandomForestRegressor(n_estimators=3, random_state=0).fit(data["X"], data["y"])
    bg, xe = data["bg"][:100], data["Xe"][:8]
    old = _engine._GROUP_ENTRIES, _engine._CACHE_LIMIT
    try:
        _engine._GROUP_ENTRIES, _engine._CACHE_LIMIT = 2**10, 2**12  # force many groups, no caching
        fp = FastPD(model, bg).fit()
        assert fp.max_path_features_ == 6 and sum(len(b.groups) for b in fp._blocks) > 6
        np.testing.assert_allclose(fp.pd_function(xe, [1, 4]), h.brute_pd(model, xe, bg, [1, 4]), rtol=1e-10)
        ex = fp.explain(xe)
    finally:
        _engine._GROUP_ENTRIES, _engine._CACHE_LIMIT = old
    ref = FastPD(model, bg).explain(xe)
    np.testing.assert_allclose(ex.shap_interaction_values, ref.shap_interaction_values, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(ex.decomposition.total(), h.margin(model, xe), rtol=1e-10)


def test_table_limit_raises_a_clear_error(models, data, monkeypatch):
    from fastpd import _engine

    monkeypatch.setattr(_engine, "MAX_TABLE_ENTRIES", 100)
    with pytest.raises(ValueError, match="limit max_depth"):
        FastPD(models["xgboost"], data["bg"][:10]).fit()
