"""The decomposition/SHAP identities: local accuracy, intercept, centering, interactions."""

from __future__ import annotations

import numpy as np
import pytest

from fastpd import FastPD

NAMES = ["sklearn-gbr", "xgboost", "lightgbm", "xgboost-multiclass"]


@pytest.mark.parametrize("name", NAMES)
def test_components_sum_to_margin_and_intercept_is_mean_margin(models, data, name, h):
    model = models[name]
    bg, xe = data["bg"], data["Xe"]
    fp = FastPD(model, bg)
    dec = fp.decompose(xe)
    m = h.margin(model, xe)
    np.testing.assert_allclose(dec.total(), m, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(dec.intercept, h.margin(model, bg).mean(axis=0), rtol=1e-5, atol=1e-6)
    assert all(len(s) >= 1 and list(s) == sorted(s) for s in dec.components)
    assert dec.max_order == max(len(s) for s in dec.components)


def _replace_columns(xe, bg, cols):
    """Each row of xe with columns ``cols`` taken, jointly, from every background row: (len(xe) * len(bg), d)."""
    rows = np.repeat(xe, len(bg), axis=0)
    rows[:, cols] = np.tile(bg[:, cols], (len(xe), 1))
    return rows


@pytest.mark.parametrize("name", ["sklearn-gbr", "xgboost", "lightgbm"])
def test_marginal_identification_holds_exactly(models, data, name):
    """Hiabu et al. (2023): for every S, the components meeting S average to 0 over the background's x_S.

    (sum over T meeting S of m_T equals f - v_{-S}, whose background average over x_S is 0.)
    """
    model = models[name]
    bg, xe = data["bg"][:300], data["Xe"][:4]
    fp = FastPD(model, bg)
    for cols in [[0], [3], [1, 2], [0, 4, 5]]:
        dec = fp.decompose(_replace_columns(xe, bg, cols))
        meeting = sum(c for s, c in dec.components.items() if set(s) & set(cols))
        np.testing.assert_allclose(meeting.reshape(len(xe), len(bg)).mean(axis=1), 0.0, atol=1e-10)


@pytest.mark.parametrize("name", ["sklearn-gbr", "xgboost", "lightgbm"])
def test_each_component_averages_to_zero_in_each_feature_on_a_product_background(models, data, name):
    """Per-component centering needs x_k independent of the other columns in the background; a
    Cartesian-product background makes that exact (on a correlated background only the summed
    identity above is exact)."""
    import itertools

    model = models[name]
    grid = [np.quantile(data["bg"][:, j], [0.2, 0.5, 0.8]) for j in range(6)]
    bg = np.array(list(itertools.product(*grid)))  # 729 rows, exactly a product measure
    xe = data["Xe"][:3]
    fp = FastPD(model, bg)
    for k in range(6):
        dec = fp.decompose(_replace_columns(xe, bg, [k]))
        for s, comp in dec.components.items():
            if k in s:
                avg = comp.reshape(len(xe), len(bg)).mean(axis=1)
                np.testing.assert_allclose(avg, 0.0, atol=1e-10, err_msg=f"S={s}, k={k}")


@pytest.mark.parametrize("name", NAMES)
def test_shap_is_decomposition_shared_equally(models, data, name):
    fp = FastPD(models[name], data["bg"][:200])
    xe = data["Xe"]
    dec = fp.decompose(xe)
    expected = np.zeros_like(fp.shap_values(xe))
    for s, comp in dec.components.items():
        for j in s:
            expected[:, j] += comp / len(s)
    np.testing.assert_allclose(fp.shap_values(xe), expected, rtol=1e-10, atol=1e-10)


def test_truncated_decomposition_matches_full_and_pd_mobius(models, data):
    fp = FastPD(models["xgboost"], data["bg"][:200])
    xe = data["Xe"]
    full = fp.decompose(xe)
    low = fp.decompose(xe, max_order=2)
    assert low.max_order == 2 and set(low.components) == {s for s in full.components if len(s) <= 2}
    for s, comp in low.components.items():
        np.testing.assert_allclose(comp, full.components[s], rtol=1e-12, atol=1e-12)
    # m_{jk} = v_{jk} - v_j - v_k + v_empty (Moebius inversion of the PD functions)
    pds = fp.pd_functions(xe, max_order=2)
    for (j, k), comp in low.of_order(2).items():
        mob = pds[(j, k)] - pds[(j,)] - pds[(k,)] + fp.intercept_
        np.testing.assert_allclose(comp, mob, rtol=1e-9, atol=1e-9)


def test_interaction_values_rows_sum_to_shap_and_split_pairs_equally(data):
    import xgboost as xgb

    # depth-2 trees: every component has at most two features, so Phi_jk = m_jk / 2 exactly
    model = xgb.XGBRegressor(n_estimators=20, max_depth=2, random_state=0, n_jobs=1).fit(data["X"], data["y"])
    fp = FastPD(model, data["bg"][:200])
    xe = data["Xe"]
    iv = fp.shap_interaction_values(xe)
    sv = fp.shap_values(xe)
    np.testing.assert_allclose(iv.sum(axis=2), sv, rtol=1e-10, atol=1e-10)
    np.testing.assert_allclose(iv, iv.transpose(0, 2, 1), atol=1e-12)
    dec = fp.decompose(xe)
    assert dec.max_order == 2
    pair = np.zeros_like(iv)
    for s, comp in dec.of_order(2).items():
        pair[:, s[0], s[1]] = pair[:, s[1], s[0]] = comp / 2
    off = ~np.eye(iv.shape[1], dtype=bool)
    np.testing.assert_allclose(iv[:, off], pair[:, off], rtol=1e-10, atol=1e-10)
    assert np.abs(pair).max() > 1e-3  # the model does have interactions


def test_explain_bundles_every_query(models, data):
    fp = FastPD(models["xgboost-multiclass"], data["bg"][:200])
    xe = data["Xe"]
    ex = fp.explain(xe, max_order=2)
    np.testing.assert_allclose(ex.prediction, fp.predict(xe), rtol=1e-12)
    np.testing.assert_allclose(ex.shap_values, fp.shap_values(xe), rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(ex.shap_interaction_values, fp.shap_interaction_values(xe), rtol=1e-12, atol=1e-12)
    ref = fp.decompose(xe, max_order=2)
    assert set(ex.decomposition.components) == set(ref.components)
    for s in ref.components:
        np.testing.assert_allclose(ex.decomposition.components[s], ref.components[s], rtol=1e-12, atol=1e-12)
    assert ex.shap_values.shape == (len(xe), 6, 3) and ex.shap_interaction_values.shape == (len(xe), 6, 6, 3)
    np.testing.assert_allclose(ex.shap_values.sum(axis=1) + ex.intercept, ex.prediction, rtol=1e-9, atol=1e-9)
    lean = fp.explain(xe, interactions=False)
    assert lean.shap_interaction_values.shape == (len(xe), 0, 0, 3)
