"""Shared fixtures: the 54 molecules of the three DEG sets, decomposed once per configuration."""

import pytest

from fmg import FMG, HeuristicChemJudge, load_dataset
from fmg.experiments import CONFIGS, SETS


@pytest.fixture(scope="session")
def datasets():
    return {name: load_dataset(name) for name in SETS}


@pytest.fixture(scope="session")
def fitted(datasets):
    """(set, ablation) -> FMG fitted with the heuristic judge."""
    return {(name, ab): FMG(HeuristicChemJudge(), **kw).fit(smiles)
            for name, smiles in datasets.items() for ab, kw in CONFIGS.items()}


@pytest.fixture(scope="session")
def isocyanate_draws(fitted):
    """500 independent draws (seed 0) of the isocyanate grammar, shared by the sampling tests."""
    return fitted[("isocyanates", "FMG")].sample(500, random_state=0)
