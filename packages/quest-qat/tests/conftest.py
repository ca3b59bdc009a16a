"""Shared fixtures: every figure a command saves is checked for labels and overlapping text."""

import pytest
from icml25_shared.testing import figure_problems, legible_saved_figures


def check_figure(fig):
    """Raise AssertionError when an axis whose ticks show lacks a label or two texts overlap."""
    problems = figure_problems(fig)
    assert not problems, "; ".join(problems)


@pytest.fixture
def figure_check():
    """The figure check, for tests that build a figure themselves."""
    return check_figure


@pytest.fixture
def figures():
    """Names of the figures saved through a RunContext, each checked by :func:`check_figure` first."""
    with legible_saved_figures() as seen:
        yield seen
