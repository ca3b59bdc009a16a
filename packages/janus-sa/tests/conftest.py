import pytest

from janus_sa import InProcessDeployment, JanusConfig
from janus_sa.simulation import random_updates


@pytest.fixture
def small():
    """Exact-mode deployment, l=16, 5 clients, with their float updates."""
    dep = InProcessDeployment(config=JanusConfig(dim=16))
    ids = dep.add_clients(5)
    return dep, ids, random_updates(16, ids)
