"""FastPD(model, background)(X) is a shap.Explanation that shap's plots accept."""

from __future__ import annotations

import numpy as np
import pytest

from fastpd import FastPD

shap = pytest.importorskip("shap")


@pytest.fixture
def agg():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    yield plt
    plt.close("all")


def test_call_returns_an_explanation_with_our_numbers(models, data):
    import pandas as pd

    model = models["xgboost"]
    cols = [f"x{j}" for j in range(6)]
    bg = pd.DataFrame(data["bg"][:200], columns=cols)
    xe = pd.DataFrame(data["Xe"][:10], columns=cols)
    fp = FastPD(model, bg)
    assert fp.expected_value == fp.intercept_  # shap's name; fits on first use
    ex = fp(xe)
    assert isinstance(ex, shap.Explanation)
    np.testing.assert_array_equal(ex.values, fp.shap_values(xe))
    np.testing.assert_array_equal(ex.base_values, np.full(10, fp.intercept_))
    np.testing.assert_array_equal(ex.data, xe.to_numpy(dtype=np.float32).astype(np.float64))
    assert ex.feature_names == cols
    np.testing.assert_allclose(ex.values.sum(axis=1) + ex.base_values, model.predict(xe, output_margin=True),
                               atol=1e-5)
    # the same numbers as shap's own interventional explainer with the full background
    ref = shap.TreeExplainer(model, shap.maskers.Independent(bg, max_samples=len(bg)))(xe)
    np.testing.assert_allclose(ex.values, ref.values, atol=1e-5)
    np.testing.assert_allclose(ex.base_values, ref.base_values, atol=1e-5)
    inter = fp(xe, interactions=True)
    assert inter.values.shape == (10, 6, 6)
    np.testing.assert_allclose(inter.values.sum(axis=2), ex.values, atol=1e-10)


def test_multiclass_explanation_has_one_column_per_class(models, data):
    model = models["xgboost-multiclass"]
    fp = FastPD(model, data["bg"][:100])
    ex = fp(data["Xe"][:4])
    assert ex.values.shape == (4, 6, 3) and ex.base_values.shape == (4, 3)
    np.testing.assert_allclose(ex.values.sum(axis=1) + ex.base_values, model.predict(data["Xe"][:4], output_margin=True),
                               atol=1e-5)


def test_shap_plots_draw_our_explanation(models, data, agg):
    fp = FastPD(models["lightgbm"], data["bg"][:100], feature_names=[f"f{j}" for j in range(6)])
    ex = fp(data["Xe"])
    shap.plots.beeswarm(ex, show=False)
    assert agg.gcf().axes and agg.gcf().axes[0].get_yticklabels()
    agg.close("all")
    shap.plots.waterfall(ex[0], show=False)
    labels = " ".join(t.get_text() for ax in agg.gcf().axes for t in ax.get_yticklabels())
    assert "f" in labels
    agg.close("all")
    shap.plots.scatter(ex[:, "f2"], color=ex, show=False)
    assert agg.gcf().axes
