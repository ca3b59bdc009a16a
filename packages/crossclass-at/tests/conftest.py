"""Shared fixtures: a digits split and a model trained on it (clean training, seconds); every figure a command
saves is checked for axis labels and overlapping text."""

import pytest
import torch
from icml25_shared.testing import legible_saved_figures

from crossclass_at import DigitsMLP
from crossclass_at.data import load_digits_split


@pytest.fixture(scope="session")
def digits():
    return load_digits_split(random_state=0)


@pytest.fixture(scope="session")
def digits_model(digits):
    torch.manual_seed(0)
    model = DigitsMLP(hidden=64)
    opt = torch.optim.Adam(model.parameters(), lr=1e-2)
    gen = torch.Generator().manual_seed(0)
    for _ in range(12):
        for idx in torch.randperm(len(digits.x_train), generator=gen).split(64):
            opt.zero_grad()
            torch.nn.functional.cross_entropy(model(digits.x_train[idx]), digits.y_train[idx]).backward()
            opt.step()
    return model.eval(), digits


@pytest.fixture(autouse=True)
def legible_figures():
    """Every figure saved through a RunContext (demo, reproduce) must pass ``figure_problems``."""
    with legible_saved_figures():
        yield
