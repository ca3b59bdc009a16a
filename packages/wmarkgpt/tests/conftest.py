"""Shared fixtures: the shipped official files and a tiny model with its tokenizer."""

from pathlib import Path

import pytest

DATA = Path(__file__).parent / "data"


@pytest.fixture(scope="session")
def data_dir() -> Path:
    return DATA


@pytest.fixture(scope="session")
def labels():
    from wmarkgpt.data import read_wqa

    return read_wqa(DATA / "WQA-Real_test.json.gz")
