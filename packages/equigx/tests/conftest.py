"""Tiny float64 models and graphs built in code."""

from __future__ import annotations

import pytest
import torch

from equigx import TFN, Graphs
from equigx.data import make_shapes, make_spiral


@pytest.fixture(scope="session")
def shapes64() -> Graphs:
    return make_shapes(4, n_distractors=(4, 7), random_state=0, dtype=torch.float64)


@pytest.fixture(scope="session")
def tfn64() -> TFN:
    torch.manual_seed(0)
    return TFN(n_out=5, mul=2, lmax=2, r_max=1.6, n_basis=4, radial_hidden=8, n_scalars=6, head_hidden=6).double()


@pytest.fixture(scope="session")
def gated64() -> TFN:
    torch.manual_seed(1)
    return TFN(n_out=5, mul=2, lmax=2, r_max=1.6, n_basis=4, radial_hidden=8, n_scalars=6, head_hidden=6,
               nonlinearity="gate").double()


@pytest.fixture(scope="session")
def spiral_model() -> TFN:
    torch.manual_seed(2)
    return TFN(mul=2, lmax=2, r_max=1.6, n_basis=4, radial_hidden=8, n_scalars=6, output="pseudoscalar").double()


@pytest.fixture(scope="session")
def spiral64() -> Graphs:
    return make_spiral(4, n_distractors=(3, 5), random_state=0, dtype=torch.float64)
