"""figure_problems: overlapping text and unlabelled axes fail; a clean figure and shared axes pass."""

import pytest

matplotlib = pytest.importorskip("matplotlib")
matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
from icml25_shared.testing import assert_figure_legible, figure_problems  # noqa: E402


@pytest.fixture(autouse=True)
def close_figures():
    yield
    plt.close("all")


def labelled(ax, x="step", y="loss"):
    ax.plot([0, 1, 2], [3, 1, 2], label="run")
    ax.set_xlabel(x)
    ax.set_ylabel(y)


def test_a_clean_figure_passes():
    fig, axes = plt.subplots(1, 2, figsize=(8, 3), constrained_layout=True)
    for ax in axes:
        labelled(ax)
        ax.legend(title="3 seeds")
    fig.suptitle("two panels")
    assert figure_problems(fig) == []
    assert_figure_legible(fig)


def test_missing_labels_are_named():
    fig, ax = plt.subplots()
    ax.plot([0, 1], [0, 1])
    ax.set_xlabel("x")
    assert figure_problems(fig) == ["axes 0 has no y label"]
    ax.set_title("curve")
    assert figure_problems(fig) == ["axes 0 ('curve') has no y label"]


def test_shared_axes_with_hidden_tick_labels_need_no_label_and_colorbars_are_exempt():
    fig, axes = plt.subplots(2, 1, sharex=True, figsize=(4, 5), constrained_layout=True)
    for ax in axes:
        labelled(ax, x="")
    axes[1].set_xlabel("step")
    image = axes[0].imshow([[0, 1], [1, 0]], extent=(0, 2, 0, 3), aspect="auto")
    fig.colorbar(image, ax=axes[0])
    assert figure_problems(fig) == []


def test_overlapping_annotations_fail():
    fig, ax = plt.subplots()
    labelled(ax)
    ax.text(1, 2, "first note")
    ax.text(1, 2, "second note")
    found = figure_problems(fig)
    assert len(found) == 1 and "'first note' overlaps axes 0 text 'second note'" in found[0], found
    with pytest.raises(AssertionError, match="overlaps"):
        assert_figure_legible(fig)


def test_a_y_label_running_into_the_neighbouring_panel_fails():
    """The looped-transformers case: a long y label of the right panel sits on the left panel's tick labels."""
    fig, axes = plt.subplots(1, 2, figsize=(5, 2.5))
    labelled(axes[0], y="left")
    labelled(axes[1], y="mean |gate| over every layer and head")
    axes[0].yaxis.tick_right()
    assert any("overlaps" in p for p in figure_problems(fig)), figure_problems(fig)
