"""Shared fixtures: the stand-ins and one run of 50 flagged tasks and their controls."""

import pytest

from combo_redteam import StandInStrong, StandInWeak, benign_suite, run
from combo_redteam.experiments import strategy_set


@pytest.fixture(scope="session")
def models():
    return StandInStrong(capability=10), StandInWeak(capability=2)


@pytest.fixture(scope="session")
def suite50():
    return benign_suite(50, random_state=0)


@pytest.fixture(scope="session")
def run50(suite50, models, tmp_path_factory):
    """Every strategy (single strong, single weak, manual, automated k = 1, 3, 5) on 50 tasks, seed 0, logged."""
    log = tmp_path_factory.mktemp("run50") / "audit.jsonl"
    result = run(suite50, strategy_set(*models, ks=(1, 3, 5)), seeds=[0], log_path=log)
    return result, log
