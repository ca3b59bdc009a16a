"""Shared fixtures: every figure a command saves is checked for labels and overlapping text."""

import itertools

import pytest
from icml25_shared.testing import figure_problems, legible_saved_figures


def check_figure(fig):
    """Raise AssertionError when an axis lacks a label, two texts overlap, or two panels' drawn extents overlap."""
    problems = figure_problems(fig)
    assert not problems, "; ".join(problems)
    renderer = fig.canvas.get_renderer()
    for a, b in itertools.combinations(fig.axes, 2):
        assert not a.get_tightbbox(renderer).overlaps(b.get_tightbbox(renderer)), \
            f"the panel {a.get_title()!r} ({a.get_ylabel()!r}) overlaps the panel {b.get_title()!r} ({b.get_ylabel()!r})"


@pytest.fixture
def figure_check():
    """The figure check, for tests of the check itself."""
    return check_figure


@pytest.fixture
def figures():
    """Names of the figures saved through a RunContext, each checked by :func:`check_figure` first."""
    with legible_saved_figures() as seen:
        yield seen
