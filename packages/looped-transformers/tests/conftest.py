"""Shared fixtures: every figure a command saves is checked for labels and overlapping text."""

import itertools

import pytest
from icml25_shared.cli import RunContext


def check_figure(fig):
    """Raise AssertionError when an axes lacks a label or two panels' drawn extents (labels, ticks, titles) overlap."""
    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()
    for ax in fig.axes:
        assert ax.get_xlabel() and ax.get_ylabel(), f"unlabelled axes: {ax.get_title()!r}"
    for a, b in itertools.combinations(fig.axes, 2):
        assert not a.get_tightbbox(renderer).overlaps(b.get_tightbbox(renderer)), \
            f"the panel {a.get_title()!r} ({a.get_ylabel()!r}) overlaps the panel {b.get_title()!r} ({b.get_ylabel()!r})"


@pytest.fixture
def figure_check():
    """The figure check, for tests of the check itself."""
    return check_figure


@pytest.fixture
def figures(monkeypatch):
    """Names of the figures saved through a RunContext, each checked by :func:`check_figure` first."""
    seen = []
    original = RunContext.save_figure

    def capture(self, fig, name=None):
        check_figure(fig)
        seen.append(name or self.command)
        return original(self, fig, name)

    monkeypatch.setattr(RunContext, "save_figure", capture)
    return seen
