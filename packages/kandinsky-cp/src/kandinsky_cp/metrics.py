"""Per-group coverage and set size (indicator and fractional weights), worst-group deviation, plot.

Weighted coverage of group j: sum_i Phi_ij 1{y_i in C(x_i)} / sum_i Phi_ij; its standard error uses the
effective sample size (sum w)^2 / sum w^2.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from kandinsky_cp.core import IntervalUnion

__all__ = ["GroupCoverage", "covered", "set_size", "group_coverage", "worst_group_deviation",
           "plot_group_coverage"]


def covered(prediction: Any, y: Any, classes: Any = None) -> np.ndarray:
    """(n,) bool: whether y[i] is in the i-th prediction set.

    prediction: bool (n, K) sets (then ``classes`` maps labels to columns; default 0..K-1), an (n, 2)
    interval array, or an :class:`IntervalUnion`.
    """
    y = np.asarray(y).ravel()
    if isinstance(prediction, IntervalUnion):
        return prediction.contains(y)
    pred = np.asarray(prediction)
    if pred.shape[0] != y.shape[0]:
        raise ValueError(f"prediction has {pred.shape[0]} rows but y has {y.shape[0]}")
    if pred.dtype == bool:
        classes = np.arange(pred.shape[1]) if classes is None else np.asarray(classes)
        lookup = {c: i for i, c in enumerate(classes.tolist())}
        try:
            idx = np.array([lookup[v] for v in y.tolist()])
        except KeyError as err:
            raise ValueError(f"label {err.args[0]!r} is not among the classes {classes.tolist()}") from None
        return pred[np.arange(len(y)), idx]
    if pred.ndim == 2 and pred.shape[1] == 2:
        yf = y.astype(float)
        return (pred[:, 0] <= yf) & (yf <= pred[:, 1])
    raise ValueError(f"prediction must be a bool (n, K) array, an (n, 2) interval array or an IntervalUnion; "
                     f"got dtype {pred.dtype} and shape {pred.shape}")


def set_size(prediction: Any) -> np.ndarray:
    """(n,) number of labels in each set, or total interval width."""
    if isinstance(prediction, IntervalUnion):
        return prediction.width()
    pred = np.asarray(prediction)
    if pred.dtype == bool:
        return pred.sum(axis=1).astype(float)
    return (pred[:, 1] - pred[:, 0]).astype(float)


@dataclass(frozen=True)
class GroupCoverage:
    """Per-group coverage report; arrays have one entry per group (column of Phi)."""

    names: list[str]
    coverage: np.ndarray
    stderr: np.ndarray
    weight: np.ndarray
    effective_n: np.ndarray
    set_size: np.ndarray | None
    confidence_level: float

    @property
    def deviation(self) -> np.ndarray:
        """Coverage - confidence_level per group."""
        return self.coverage - self.confidence_level

    @property
    def worst_deviation(self) -> float:
        """max_j |coverage_j - confidence_level| over groups with test weight (NaN ones skipped)."""
        dev = np.abs(self.deviation)
        return float(np.nanmax(dev)) if np.any(np.isfinite(dev)) else float("nan")

    def to_markdown(self) -> str:
        """Render the report as a markdown table, one row per group.

        Returns
        -------
        str
            Columns group, weight, coverage, s.e., deviation (and set size when recorded).
        """
        from icml25_shared.tables import markdown_table

        headers = ["group", "weight", "coverage", "± s.e.", "deviation"]
        if self.set_size is not None:
            headers.append("set size")
        rows = []
        for j, name in enumerate(self.names):
            row = [name, f"{self.weight[j]:.1f}", f"{self.coverage[j]:.4f}", f"{self.stderr[j]:.4f}",
                   f"{self.deviation[j]:+.4f}"]
            if self.set_size is not None:
                row.append(f"{self.set_size[j]:.3f}")
            rows.append(row)
        return markdown_table(rows, headers)


def group_coverage(is_covered: Any, phi: Any, *, confidence_level: float, names: list[str] | None = None,
                   sizes: Any = None) -> GroupCoverage:
    """Weighted coverage (and set size) per group.

    is_covered: (n,) bool; phi: (n, d) nonnegative group weights of the test points (evaluated at the
    true labels); sizes: optional (n,) set sizes or widths.
    """
    cov = np.asarray(is_covered, dtype=float).ravel()
    w = np.asarray(phi, dtype=float)
    if w.ndim == 1:
        w = w[:, None]
    if w.shape[0] != cov.shape[0]:
        raise ValueError(f"phi has {w.shape[0]} rows but is_covered has {cov.shape[0]}")
    if np.any(w < 0) or not np.all(np.isfinite(w)):
        raise ValueError("group weights must be finite and nonnegative")
    total = w.sum(axis=0)
    safe = np.where(total > 0, total, np.nan)
    p = (w * cov[:, None]).sum(axis=0) / safe
    n_eff = total**2 / np.where(total > 0, (w**2).sum(axis=0), np.nan)
    se = np.sqrt(p * (1 - p) / n_eff)
    if sizes is None:
        size = None
    else:  # 0 * inf (an infinite interval outside the group) counts as 0
        sz = np.asarray(sizes, dtype=float)[:, None]
        with np.errstate(invalid="ignore"):
            size = np.where(w > 0, w * sz, 0.0).sum(axis=0) / safe
    names = names or [f"group {j}" for j in range(w.shape[1])]
    return GroupCoverage(names=list(names), coverage=p, stderr=se, weight=total, effective_n=n_eff,
                         set_size=size, confidence_level=float(confidence_level))


def worst_group_deviation(is_covered: Any, phi: Any, confidence_level: float) -> float:
    """max_j |weighted coverage_j - confidence_level| over the columns of phi."""
    return group_coverage(is_covered, phi, confidence_level=confidence_level).worst_deviation


def plot_group_coverage(reports: GroupCoverage | Mapping[str, GroupCoverage], *, ax: Any = None,
                        title: str | None = None) -> Any:
    """Grouped bar-free dot plot: coverage per group with ±1.96 s.e. bars, one colour per method.

    reports: one report or {method name: report} sharing the same groups. Returns the Figure.
    Needs matplotlib, which the base install does not bring: ``pip install "kandinsky-cp[cli]"``.
    """
    try:
        import matplotlib.pyplot as plt
    except ImportError as exc:
        raise ImportError('plot_group_coverage needs matplotlib: pip install "kandinsky-cp[cli]"') from exc

    if isinstance(reports, GroupCoverage):
        reports = {"": reports}
    first = next(iter(reports.values()))
    if ax is None:
        fig, ax = plt.subplots(figsize=(max(5.0, 0.45 * len(first.names) + 2), 3.6))
    else:
        fig = ax.figure
    k = len(reports)
    x = np.arange(len(first.names))
    for i, (label, rep) in enumerate(reports.items()):
        offset = (i - (k - 1) / 2) * 0.8 / max(k, 1)
        ax.errorbar(x + offset, rep.coverage, yerr=1.96 * rep.stderr, fmt="o", ms=4, capsize=2, label=label or None)
    ax.axhline(first.confidence_level, color="k", lw=0.8, ls="--")
    ax.set_xticks(x)
    ax.set_xticklabels(first.names, rotation=60, ha="right", fontsize=7)
    ax.set_xlabel("group")
    ax.set_ylabel("coverage")
    if title:
        ax.set_title(title)
    if k > 1 or next(iter(reports)):
        ax.legend(fontsize=7)
    fig.tight_layout()
    return fig
