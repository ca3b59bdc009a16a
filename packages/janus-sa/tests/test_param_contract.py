"""Every public entry point refuses a wrong type with TypeError and a wrong value with ValueError,
naming the parameter (the shared validation contract)."""

import numpy as np
import pytest
from icml25_shared.testing import assert_rejects

from janus_sa import (
    AggregationServer,
    InProcessDeployment,
    JanusClient,
    JanusConfig,
    Quantizer,
    ServerKeys,
    ServerPublicKeys,
)
from janus_sa.fl import run_federated
from janus_sa.secaggplus import run_secaggplus_round
from janus_sa.simulation import random_updates


@pytest.mark.parametrize(("name", "wrong_type", "wrong_value"), [
    ("dim", "8", 0),
    ("mode", 1, "fast"),
    ("sketch_k", 2.5, 0),
    ("min_participants", "3", 1),
    ("n_expected", 2.0, 0),
    ("dropout_rate", "0.1", 1.0),
    ("learning_rate", "1", -0.5),
    ("batch_size", 2.0, 0),
    ("initial_model", "digest", b"short"),
])
def test_janus_config(name, wrong_type, wrong_value):
    valid = {} if name == "dim" else {"dim": 8}
    assert_rejects(JanusConfig, name, wrong_type=wrong_type, wrong_value=wrong_value, call=lambda c: c.validate(),
                   **valid)


def test_range_proof():
    """A bool; True needs a power-of-two quantization_range (the codes are proven bit by bit)."""
    assert_rejects(JanusConfig, "range_proof", wrong_type="yes", wrong_value=True, call=lambda c: c.validate(),
                   dim=8, quantizer=Quantizer(quantization_range=1000))


def test_server_peer():
    keys = ServerKeys()
    assert_rejects(AggregationServer, "peer", wrong_type="s1-key", wrong_value=b"short", config=JanusConfig(dim=4),
                   keys=keys, session=bytes(16))
    assert_rejects(AggregationServer, "peer", wrong_type=1, wrong_value=ServerPublicKeys(sign=bytes(32), kem=b"x"),
                   config=JanusConfig(dim=4), keys=keys, session=bytes(16))


@pytest.mark.parametrize(("name", "wrong_type", "wrong_value"), [
    ("clipping_range", "8", 0.0),
    ("quantization_range", 2.0**22, 1),
    ("modulus_range", "big", 3 * 2**10),
])
def test_quantizer(name, wrong_type, wrong_value):
    assert_rejects(Quantizer, name, wrong_type=wrong_type, wrong_value=wrong_value, call=lambda q: q.validate())


def test_client_and_deployment():
    keys = ServerKeys().public
    assert_rejects(JanusClient, "session", wrong_type="s" * 16, wrong_value=b"short", config=JanusConfig(dim=4),
                   s0=keys, s1=keys)
    with pytest.raises(TypeError, match="config"):
        InProcessDeployment(config={"dim": 4})
    assert_rejects(InProcessDeployment, "model", wrong_type="zeros", wrong_value=np.zeros(3), config=JanusConfig(dim=4))
    dep = InProcessDeployment(config=JanusConfig(dim=4))
    ids = dep.add_clients(3)
    assert_rejects(dep.run_round, "workers", wrong_type=1.5, wrong_value=0, updates={})
    assert_rejects(dep.add_clients, "n", wrong_type="3", wrong_value=0)
    assert_rejects(dep.add_clients, "n", wrong_type=True, wrong_value=-1)
    stranger = {b"z" * 32: np.ones(4)}
    assert_rejects(dep.run_round, "updates", wrong_type=[np.ones(4)] * 3, wrong_value=stranger)
    assert_rejects(dep.run_round, "updates", wrong_type={0: np.ones(4)}, wrong_value=stranger)
    assert_rejects(dep.run_round, "drop_before_s1", wrong_type=[0], wrong_value=[b"z" * 32], updates={})
    assert_rejects(dep.run_round, "drop_before_sketch", wrong_type=["id"], wrong_value=[b"z" * 32], updates={})
    assert_rejects(dep.run_round, "received_models", wrong_type=[np.ones(4)], wrong_value=stranger, updates={})
    assert dep.round == 0 and len(dep.clients) == 3  # nothing refused above started a round or enrolled anyone
    assert len(dep.run_round({cid: np.ones(4) for cid in ids}).results) == 3


def test_helpers():
    assert_rejects(random_updates, "scale", wrong_type="1", wrong_value=-1.0, dim=4, ids=[])
    assert_rejects(random_updates, "random_state", wrong_type="seed", wrong_value=-3, dim=4, ids=[])
    assert_rejects(run_federated, "n_clients", wrong_type=2.5, wrong_value=1)
    assert_rejects(run_federated, "participation", wrong_type="all", wrong_value=0.0)
    assert_rejects(run_secaggplus_round, "dim", wrong_type="4", wrong_value=0, codes={0: np.zeros(4)})
