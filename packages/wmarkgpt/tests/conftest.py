"""Shared fixtures: the shipped official files and a tiny model with its tokenizer; every figure a command saves
is checked for axis labels and overlapping text."""

from pathlib import Path

import pytest
from icml25_shared.cli import RunContext
from icml25_shared.testing import figure_problems

DATA = Path(__file__).parent / "data"


@pytest.fixture(scope="session")
def data_dir() -> Path:
    return DATA


@pytest.fixture(scope="session")
def labels():
    from wmarkgpt.data import read_wqa

    return read_wqa(DATA / "WQA-Real_test.json.gz")


@pytest.fixture(autouse=True)
def legible_figures(monkeypatch):
    """Every figure saved through a RunContext (demo, reproduce) must pass ``figure_problems``."""
    original = RunContext.save_figure

    def checked(self, fig, name=None):
        problems = figure_problems(fig)
        assert not problems, "; ".join(problems)
        return original(self, fig, name)

    monkeypatch.setattr(RunContext, "save_figure", checked)
