import socket

import pytest

from janus_sa import InProcessDeployment, JanusConfig
from janus_sa.simulation import random_updates


@pytest.fixture
def small():
    """Exact-mode deployment, l=16, 5 clients, with their float updates."""
    dep = InProcessDeployment(config=JanusConfig(dim=16))
    ids = dep.add_clients(5)
    return dep, ids, random_updates(16, ids)


@pytest.fixture
def free_ports():
    """A function giving ``k`` distinct free TCP ports on 127.0.0.1 (for the multi-process tests)."""

    def ports(k: int) -> list[int]:
        socks = [socket.socket() for _ in range(k)]
        for s in socks:
            s.bind(("127.0.0.1", 0))
        found = [s.getsockname()[1] for s in socks]
        for s in socks:
            s.close()
        return found

    return ports
