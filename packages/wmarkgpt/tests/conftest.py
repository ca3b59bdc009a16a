"""Shared fixtures: the shipped official files and a tiny model with its tokenizer; every figure a command saves
is checked for axis labels and overlapping text."""

from pathlib import Path

import pytest
from icml25_shared.testing import legible_saved_figures

DATA = Path(__file__).parent / "data"


@pytest.fixture(scope="session")
def data_dir() -> Path:
    return DATA


@pytest.fixture(scope="session")
def labels():
    from wmarkgpt.data import read_wqa

    return read_wqa(DATA / "WQA-Real_test.json.gz")


@pytest.fixture(autouse=True)
def legible_figures():
    """Every figure saved through a RunContext (demo, reproduce) must pass ``figure_problems``."""
    with legible_saved_figures():
        yield
