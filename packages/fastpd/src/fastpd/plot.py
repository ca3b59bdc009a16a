"""Matplotlib plots of FastPD results: 1-D and 2-D PD, SHAP summary, interaction heatmap.

Each function draws on ``ax`` (a new figure when None) and returns the axes.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from fastpd.explainer import FastPD


def _axes(ax: Any, figsize: tuple[float, float] = (4.5, 3.5)) -> Any:
    if ax is not None:
        return ax
    import matplotlib.pyplot as plt

    return plt.subplots(figsize=figsize)[1]


def _name(names: list[str] | None, j: int) -> str:
    return names[j] if names else f"x{j}"


def _output(values: np.ndarray, output: int | None, tail: int) -> np.ndarray:
    """Select one output of a multi-output array whose per-output part has ``tail`` dims."""
    if values.ndim > tail + 1:
        if output is None:
            raise ValueError("the model has several outputs; pass output=<class index>")
        return values[..., output]
    return values


def _background(explainer: FastPD) -> np.ndarray:
    if explainer.background_ is None:
        raise ValueError("PD plots need background rows for the grid; pass background= to FastPD")
    return explainer.background_


def _grid(explainer: FastPD, feature: int, resolution: int) -> np.ndarray:
    col = _background(explainer)[:, feature]
    col = col[np.isfinite(col)]
    if col.size == 0:
        raise ValueError(f"feature {feature} has no finite background values to build a grid from")
    return np.unique(np.quantile(col, np.linspace(0.02, 0.98, resolution)))


def pd_1d(explainer: FastPD, feature: int | str, *, grid_resolution: int = 50, n_ice: int = 20,
          output: int | None = None, ax: Any = None) -> Any:
    """Plot the PD curve of one feature over its background quantiles.

    ICE curves of ``n_ice`` background rows are drawn as thin lines, and a rug of the background
    values shows where the PD is supported.

    Parameters
    ----------
    explainer : FastPD
        The explainer (fitted on first use).
    feature : int or str
        The feature's index or name.
    grid_resolution : int, default 50
        Number of grid points (quantiles of the background).
    n_ice : int, default 20
        Number of ICE curves.
    output : int, optional
        Which output of a multi-output model to draw (required when it has several).
    ax : matplotlib Axes, optional
        Where to draw (a new figure when None).

    Returns
    -------
    matplotlib Axes
        The axes drawn on.
    """
    explainer._fitted()
    (j,) = explainer._subset(feature)
    bg = _background(explainer)
    grid = _grid(explainer, j, grid_resolution)
    rows = np.repeat(bg[:1], len(grid), axis=0)
    rows[:, j] = grid
    pd = _output(np.asarray(explainer.pd_function(rows, j)), output, 0)
    ax = _axes(ax)
    if n_ice > 0:
        pick = np.random.default_rng(0).choice(len(bg), min(n_ice, len(bg)), replace=False)
        ice_rows = np.repeat(bg[pick], len(grid), axis=0)
        ice_rows[:, j] = np.tile(grid, len(pick))
        ice = _output(np.asarray(explainer.predict(ice_rows)), output, 0).reshape(len(pick), len(grid))
        ax.plot(grid, ice.T, color="0.6", lw=0.5, alpha=0.6)
    ax.plot(grid, pd, color="C0", lw=2.5, label="PD (FastPD)")
    lo = min(pd.min(), ax.get_ylim()[0])
    ax.plot(bg[:, j], np.full(len(bg), lo), "|", color="k", alpha=0.3, ms=8)
    ax.set_xlabel(_name(explainer.feature_names_, j))
    ax.set_ylabel("partial dependence (margin)")
    ax.legend(loc="best", fontsize=8)
    return ax


def pd_2d(explainer: FastPD, features: tuple[int | str, int | str], *, grid_resolution: int = 25,
          output: int | None = None, ax: Any = None) -> Any:
    """Plot the 2-D PD function v_jk(x_j, x_k) over background quantiles as a heatmap.

    Parameters
    ----------
    explainer : FastPD
        The explainer (fitted on first use).
    features : tuple of two int or str
        The pair of features.
    grid_resolution : int, default 25
        Grid points per feature.
    output : int, optional
        Which output of a multi-output model to draw (required when it has several).
    ax : matplotlib Axes, optional
        Where to draw (a new figure when None).

    Returns
    -------
    matplotlib Axes
        The axes drawn on.
    """
    explainer._fitted()
    j, k = explainer._subset(list(features))
    gj, gk = _grid(explainer, j, grid_resolution), _grid(explainer, k, grid_resolution)
    rows = np.repeat(_background(explainer)[:1], len(gj) * len(gk), axis=0)
    rows[:, j] = np.repeat(gj, len(gk))
    rows[:, k] = np.tile(gk, len(gj))
    z = _output(np.asarray(explainer.pd_function(rows, [j, k])), output, 0).reshape(len(gj), len(gk))
    ax = _axes(ax)
    mesh = ax.pcolormesh(gk, gj, z, shading="nearest", cmap="viridis")
    ax.figure.colorbar(mesh, ax=ax, label="PD (margin)")
    ax.set_xlabel(_name(explainer.feature_names_, k))
    ax.set_ylabel(_name(explainer.feature_names_, j))
    return ax


def shap_summary(shap_values: np.ndarray, X: np.ndarray, *, feature_names: list[str] | None = None,
                 kind: str = "beeswarm", max_display: int = 10, output: int | None = None, ax: Any = None) -> Any:
    """Plot a SHAP summary, features sorted by mean |SHAP|.

    Parameters
    ----------
    shap_values : ndarray of shape (n, d) or (n, d, K)
        SHAP values, e.g. from :meth:`FastPD.shap_values`.
    X : ndarray of shape (n, d)
        The explained rows (colours of the beeswarm).
    feature_names : list of str, optional
        Labels.
    kind : {"beeswarm", "bar"}, default "beeswarm"
        One dot per row coloured by the feature value, or bars of mean |SHAP|.
    max_display : int, default 10
        Number of features shown.
    output : int, optional
        Which output of a multi-output model to draw (required when it has several).
    ax : matplotlib Axes, optional
        Where to draw (a new figure when None).

    Returns
    -------
    matplotlib Axes
        The axes drawn on.
    """
    if kind not in ("beeswarm", "bar"):
        raise ValueError(f"kind={kind!r} is not supported; accepted: 'beeswarm', 'bar'")
    sv = _output(np.asarray(shap_values), output, 2)
    x = np.asarray(X, dtype=np.float64)
    if sv.shape != x.shape:
        raise ValueError(f"shap_values {sv.shape} and X {x.shape} must have the same shape")
    imp = np.abs(sv).mean(axis=0)
    order = np.argsort(-imp)[:max_display][::-1]
    ax = _axes(ax, (5, 0.35 * len(order) + 1.2))
    labels = [_name(feature_names, j) for j in order]
    if kind == "bar":
        ax.barh(range(len(order)), imp[order], color="C0")
        ax.set_xlabel("mean |SHAP value|")
    else:
        rng = np.random.default_rng(0)
        for pos, j in enumerate(order):
            col = x[:, j]
            lo, hi = np.nanquantile(col, [0.05, 0.95]) if np.isfinite(col).any() else (0.0, 1.0)
            colour = np.clip((col - lo) / (hi - lo if hi > lo else 1.0), 0, 1)
            ax.scatter(sv[:, j], pos + rng.uniform(-0.3, 0.3, len(col)), c=colour, cmap="coolwarm", s=6,
                       alpha=0.7, linewidths=0)
        ax.axvline(0, color="0.5", lw=0.8)
        ax.set_xlabel("SHAP value (colour: feature value, blue low, red high)")
    ax.set_yticks(range(len(order)))
    ax.set_yticklabels(labels)
    ax.set_ylabel("feature (by mean |SHAP value|)")
    return ax


def interaction_heatmap(interaction_values: np.ndarray, *, feature_names: list[str] | None = None,
                        max_display: int = 10, diagonal: bool = True, output: int | None = None,
                        ax: Any = None) -> Any:
    """Plot mean |SHAP interaction value| between feature pairs as a heatmap.

    Parameters
    ----------
    interaction_values : ndarray of shape (n, d, d) or (n, d, d, K)
        From :meth:`FastPD.shap_interaction_values`.
    feature_names : list of str, optional
        Labels.
    max_display : int, default 10
        Number of features shown.
    diagonal : bool, default True
        False blanks the diagonal (main effects), so the colour scale shows the pairwise interactions.
    output : int, optional
        Which output of a multi-output model to draw (required when it has several).
    ax : matplotlib Axes, optional
        Where to draw (a new figure when None).

    Returns
    -------
    matplotlib Axes
        The axes drawn on.
    """
    iv = _output(np.asarray(interaction_values), output, 3)
    if iv.ndim != 3 or iv.shape[1] != iv.shape[2]:
        raise ValueError(f"interaction_values must have shape (n, d, d); got {iv.shape}")
    m = np.abs(iv).mean(axis=0)
    order = np.argsort(-m.sum(axis=1))[:max_display]
    sub = m[np.ix_(order, order)]
    if not diagonal:
        sub = np.where(np.eye(len(order), dtype=bool), np.nan, sub)
    ax = _axes(ax, (5, 4.2))
    im = ax.imshow(sub, cmap="magma_r")
    ax.figure.colorbar(im, ax=ax, label="mean |interaction value|")
    labels = [_name(feature_names, j) for j in order]
    ax.set_xticks(range(len(order)))
    ax.set_xticklabels(labels, rotation=60, ha="right")
    ax.set_yticks(range(len(order)))
    ax.set_yticklabels(labels)
    ax.set_xlabel("feature k")
    ax.set_ylabel("feature j")
    return ax
