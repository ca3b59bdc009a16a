"""Plots draw what they claim; the reproduce numbers carry the paper's consistency claim."""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")

import numpy as np  # noqa: E402
import pytest  # noqa: E402

from fastpd import FastPD, plot  # noqa: E402
from fastpd.experiments import consistency_truth, simulate_consistency  # noqa: E402


def test_plots_draw_pd_and_summaries(models, data):
    import matplotlib.pyplot as plt

    fp = FastPD(models["sklearn-gbr"], data["bg"][:100], feature_names=[f"f{i}" for i in range(6)])
    xe = data["Xe"]
    fig, axes = plt.subplots(2, 3)
    ax = plot.pd_1d(fp, "f3", grid_resolution=9, n_ice=4, ax=axes[0, 0])
    pd_line = ax.lines[4]  # 4 ICE curves, then the PD curve
    np.testing.assert_allclose(pd_line.get_ydata(), fp.pd_function(
        np.column_stack([np.zeros((len(pd_line.get_xdata()), 3)), pd_line.get_xdata(), np.zeros((len(pd_line.get_xdata()), 2))]), 3))
    assert ax.get_xlabel() == "f3"
    plot.pd_2d(fp, (0, 1), grid_resolution=6, ax=axes[0, 1])
    ex = fp.explain(xe)
    plot.shap_summary(ex.shap_values, xe, feature_names=fp.feature_names_, ax=axes[0, 2])
    bar = plot.shap_summary(ex.shap_values, xe, kind="bar", max_display=3, ax=axes[1, 0])
    heights = sorted(p.get_width() for p in bar.patches)
    np.testing.assert_allclose(heights, np.sort(np.abs(ex.shap_values).mean(axis=0))[-3:])
    plot.interaction_heatmap(ex.shap_interaction_values, feature_names=fp.feature_names_, ax=axes[1, 1])
    with pytest.raises(ValueError, match="kind='violin' is not supported"):
        plot.shap_summary(ex.shap_values, xe, kind="violin")
    multi = FastPD(models["xgboost-multiclass"], data["bg"][:100])
    with pytest.raises(ValueError, match="several outputs"):
        plot.pd_1d(multi, 0, ax=axes[1, 2])
    plot.pd_1d(multi, 0, output=2, n_ice=0, ax=axes[1, 2])
    plt.close(fig)


def test_consistency_truth_is_the_marginal_decomposition():
    """Closed forms: the Monte Carlo decomposition of the true f matches them."""
    rng = np.random.default_rng(0)
    x, _ = simulate_consistency(200_000, rng, corr=0.3)
    pts = np.array([[0.5, -1.0], [1.5, 0.3]])
    f = lambda a, b: a + b + 2 * a * b  # noqa: E731
    v0 = f(x[:, 0], x[:, 1]).mean()
    v1 = np.array([f(p[0], x[:, 1]).mean() for p in pts])
    truth = consistency_truth(pts, 0.3)
    np.testing.assert_allclose(v1 - v0, truth["m1"], atol=0.03)
    np.testing.assert_allclose(truth["m1"] + truth["m2"] + truth["m12"] + v0, f(pts[:, 0], pts[:, 1]), atol=0.03)
