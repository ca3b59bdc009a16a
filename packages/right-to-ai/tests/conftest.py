"""Shared fixtures; every test runs with network sockets disabled (pytest-socket)."""

from pathlib import Path

import pytest
import yaml

FIXTURES = Path(__file__).parent / "fixtures"
TIER_FIXTURES = {1: "tier1_feedback_button", 2: "tier2_user_board", 3: "tier3_audit_board", 4: "tier4_assembly_trust"}


def pytest_collection_modifyitems(config, items):
    here = Path(__file__).parent
    for item in items:
        if here in Path(str(item.path)).parents:
            item.add_marker(pytest.mark.disable_socket)


def read_fixture(name: str) -> dict:
    return yaml.safe_load((FIXTURES / f"{name}.yaml").read_text())


@pytest.fixture(scope="session")
def data():
    from right_to_ai import load

    return load()


@pytest.fixture(scope="session")
def tier_answers():
    """Tier id -> the answers of that tier's fixture system."""
    return {tier: read_fixture(name)["answers"] for tier, name in TIER_FIXTURES.items()}
