"""SHAP values equal shap's interventional TreeExplainer with the full background."""

from __future__ import annotations

import numpy as np
import pytest

from fastpd import FastPD

shap = pytest.importorskip("shap")


@pytest.mark.parametrize("name", ["sklearn-gbr", "sklearn-rf", "sklearn-rfc", "sklearn-gbc", "xgboost", "xgboost-binary",
                                  "xgboost-multiclass", "lightgbm", "lightgbm-binary",
                                  "lightgbm-multiclass", "sklearn-et", "sklearn-dtc"])
def test_shap_values_equal_shap_interventional_full_background(models, data, name):
    model = models[name]
    bg, xe = data["bg"], data["Xe"][:12]
    assert len(bg) >= 500
    masker = shap.maskers.Independent(bg, max_samples=len(bg))
    ref = np.asarray(shap.TreeExplainer(model, masker, feature_perturbation="interventional").shap_values(xe))
    ours = FastPD(model, bg).shap_values(xe)
    assert ours.shape == ref.shape
    np.testing.assert_allclose(ours, ref, rtol=1e-5, atol=1e-5)


def test_shaps_default_background_is_a_100_row_subsample(models, data):
    """What users get from shap by default differs from the full-background answer; ours does not."""
    model = models["xgboost"]
    bg, xe = data["bg"], data["Xe"][:12]
    default = shap.TreeExplainer(model, bg, feature_perturbation="interventional").shap_values(xe)
    ours = FastPD(model, bg).shap_values(xe)
    assert np.abs(default - ours).max() > 1e-3
    np.testing.assert_allclose(FastPD(model, bg, max_background=100).shap_values(xe).shape, ours.shape)


@pytest.mark.parametrize("name", ["sklearn-gbr", "xgboost", "lightgbm"])
def test_path_dependent_mode_equals_path_dependent_treeshap(models, data, name):
    model = models[name]
    xe = data["Xe"][:12]
    ex = shap.TreeExplainer(model, feature_perturbation="tree_path_dependent")
    fp = FastPD(model, method="path-dependent")
    np.testing.assert_allclose(fp.shap_values(xe), ex.shap_values(xe), rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(fp.shap_interaction_values(xe), ex.shap_interaction_values(xe), rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(fp.intercept_, ex.expected_value, rtol=1e-5, atol=1e-5)


def test_path_dependent_and_interventional_disagree_under_correlation(models, data):
    model = models["xgboost"]
    xe = data["Xe"]
    gap = np.abs(FastPD(model, data["bg"]).shap_values(xe) - FastPD(model, method="path-dependent").shap_values(xe))
    assert gap.max() > 1e-2
