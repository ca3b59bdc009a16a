"""Every public entry point names the parameter in a TypeError (wrong type) and a ValueError (wrong value)."""

from __future__ import annotations

from icml25_shared.testing import assert_rejects

from fastpd import FastPD


def _fit(fp):
    return fp.fit()


def test_fastpd_constructor_parameters(models, data):
    valid = {"model": models["xgboost"], "background": data["bg"][:50]}
    assert_rejects(FastPD, "method", wrong_type=1, wrong_value="exact", call=_fit, **valid)
    assert_rejects(FastPD, "n_jobs", wrong_type=1.5, wrong_value=0, call=_fit, **valid)
    assert_rejects(FastPD, "max_background", wrong_type="10", wrong_value=0, call=_fit, **valid)
    assert_rejects(FastPD, "chunk_memory_mb", wrong_type="big", wrong_value=0.0, call=_fit, **valid)
    assert_rejects(FastPD, "augment", wrong_type=True, wrong_value="lazy", call=_fit, **valid)
    assert_rejects(FastPD, "random_state", wrong_type="seed", wrong_value=-1, call=_fit,
                   **valid, max_background=10)


def test_query_parameters(models, data):
    fp = FastPD(models["xgboost"], data["bg"][:50])
    X = data["Xe"][:3]
    assert_rejects(fp.pd_functions, "max_order", wrong_type="2", wrong_value=0, X=X)
    assert_rejects(fp.decompose, "max_order", wrong_type=2.5, wrong_value=0, X=X)
    assert_rejects(fp.explain, "max_order", wrong_type="all", wrong_value=-1, X=X)
