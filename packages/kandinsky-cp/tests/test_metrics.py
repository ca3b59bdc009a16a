import re
import sys

import numpy as np
import pytest

from kandinsky_cp import IntervalUnion
from kandinsky_cp.metrics import covered, group_coverage, plot_group_coverage, set_size, worst_group_deviation


def test_weighted_group_coverage_by_hand():
    hit = np.array([1, 0, 1, 1], dtype=bool)
    phi = np.array([[1, 0.5], [1, 1.0], [1, 0.0], [1, 0.25]])
    rep = group_coverage(hit, phi, confidence_level=0.9, names=["all", "frac"], sizes=[1, 2, 3, 4])
    np.testing.assert_allclose(rep.coverage, [0.75, 0.75 / 1.75])
    np.testing.assert_allclose(rep.effective_n, [4.0, 1.75**2 / (0.25 + 1 + 0.0625)])
    np.testing.assert_allclose(rep.set_size, [2.5, (0.5 + 2 + 1) / 1.75])
    assert rep.worst_deviation == pytest.approx(0.9 - 0.75 / 1.75)
    assert worst_group_deviation(hit, phi, 0.9) == rep.worst_deviation
    assert "| frac | 1.8 |" in rep.to_markdown()


def test_covered_and_sizes_for_all_prediction_types():
    sets = np.array([[True, False, True], [False, True, False]])
    assert covered(sets, ["c", "c"], classes=["a", "b", "c"]).tolist() == [True, False]
    assert set_size(sets).tolist() == [2.0, 1.0]
    intervals = np.array([[0.0, 1.0], [2.0, 3.0]])
    assert covered(intervals, [0.5, 3.5]).tolist() == [True, False]
    union = IntervalUnion(bounds=np.array([[[0, 1], [2, 3]], [[5, 6], [np.nan, np.nan]]], dtype=float),
                          n_intervals=np.array([2, 1]))
    assert covered(union, [2.5, 5.5]).tolist() == [True, True]
    assert covered(union, [1.5, 6.5]).tolist() == [False, False]
    assert set_size(union).tolist() == [2.0, 1.0]
    np.testing.assert_array_equal(union.hull(), [[0, 3], [5, 6]])
    with pytest.raises(ValueError, match="not among the classes"):
        covered(sets, ["z", "a"], classes=["a", "b", "c"])


def test_plot_has_error_bars_per_method():
    pytest.importorskip("matplotlib")
    rng = np.random.default_rng(0)
    phi = (rng.uniform(size=(200, 3)) < 0.5).astype(float)
    reps = {m: group_coverage(rng.uniform(size=200) < 0.9, phi, confidence_level=0.9) for m in ("a", "b")}
    fig = plot_group_coverage(reps, title="t")
    ax = fig.axes[0]
    assert len(ax.containers) == 2 and ax.get_title() == "t"


def test_plot_without_matplotlib_names_the_cli_extra(monkeypatch):
    """matplotlib is not a core dependency: without it the plot says which extra brings it."""
    for name in ("matplotlib", "matplotlib.pyplot"):
        monkeypatch.setitem(sys.modules, name, None)  # a None entry makes `import name` raise ImportError
    rep = group_coverage(np.ones(10, dtype=bool), np.ones((10, 1)), confidence_level=0.9)
    with pytest.raises(ImportError, match=re.escape('pip install "kandinsky-cp[cli]"')):
        plot_group_coverage(rep)
