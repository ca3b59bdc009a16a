"""Adversary suite: the security review's attacks (privacy, integrity, authentication) must all fail.

Each test ports one attack script; the attack is run as written against the hardened protocol and the
test asserts that it is refused, and by whom.
"""

import numpy as np
import pytest

from janus_sa import (
    AggregationServer,
    InProcessDeployment,
    JanusClient,
    JanusConfig,
    MaskServer,
    ServerKeys,
    TooFewParticipantsError,
    model_digest,
)
from janus_sa.errors import ProtocolError
from janus_sa.net import Remote, ServerNode, make_server, start_server
from janus_sa.simulation import random_updates
from janus_sa.wire import MsgType, encode

DIM = 16


def _new(n=5, **kw):
    dep = InProcessDeployment(config=JanusConfig(dim=DIM, **kw))
    ids = dep.add_clients(n)
    return dep, ids, random_updates(DIM, ids, random_state=3)


def _swap(dep, role, cls):
    if role == 0:
        dep.s0 = cls(config=dep.config, keys=dep.keys0, session=dep.session, peer=dep.keys1.sign.public)
    else:
        dep.s1 = cls(config=dep.config, keys=dep.keys1, session=dep.session, peer=dep.keys0.sign.public)


def _shrinking(base):
    """A server that names only ``keep`` in its PARTICIPANTS and aggregates over them alone."""

    class Shrink(base):
        keep: tuple = ()

        def participants(self):
            return encode(MsgType.PARTICIPANTS, self.session, self.round_, {"ids": list(self.keep)}, self.keys.sign)

        def agree(self, peer):
            self.participants_ = tuple(sorted(self.keep))
            self._aggregate_uploads(self.participants_)
            return self.participants_

    return Shrink


def _upload_all(dep, ups, rnd=1):
    a0, a1 = dep.s0.announce(rnd, bytes(32)), dep.s1.announce(rnd, bytes(32))
    for cid, c in dep.clients.items():
        c.begin_round(a0, a1)
        up = c.upload(ups[cid])
        dep.s0.receive(up.to_s0)
        dep.s1.receive(up.to_s1)


@pytest.mark.parametrize("role", [0, 1])
def test_single_server_cannot_shrink_the_participant_set_to_one_victim(role):
    """attacks_integrity.py [4]: a malicious S0 (or S1) signs PARTICIPANTS = [victim] to isolate x_victim."""
    dep, ids, ups = _new(5)
    _swap(dep, role, _shrinking(AggregationServer if role == 0 else MaskServer))
    evil, honest = (dep.s0, dep.s1) if role == 0 else (dep.s1, dep.s0)
    evil.keep = (ids[2],)
    _upload_all(dep, ups)
    with pytest.raises(TooFewParticipantsError, match="min_participants=3"):
        honest.agree(evil.participants())
    assert honest.participants_ is None
    with pytest.raises(ProtocolError, match="not agreed"):
        honest.aggregate()  # the honest server publishes no K (resp. Y) for the shrunk set
    # and no client accepts an aggregate over one client, even if both servers produced one
    honest_cls = MaskServer if role == 0 else AggregationServer
    _swap(dep, 1 - role, _shrinking(honest_cls))
    (dep.s1 if role == 0 else dep.s0).keep = (ids[2],)
    _upload_all(dep, ups, rnd=2)
    dep.s0.agree(dep.s1.participants())
    dep.s1.agree(dep.s0.participants())
    agg0, agg1 = dep.s0.aggregate(), dep.s1.aggregate()
    for c in dep.clients.values():
        with pytest.raises(TooFewParticipantsError):
            c.finish_round(agg0, agg1)


def test_t_minus_1_colluding_clients_let_one_server_isolate_a_victim():
    """The threat model's boundary: S0 plus t - 1 = 2 colluding clients shrink P to {victim, c1, c2}.

    S1 accepts (|P| = t), and the coalition subtracts its own codes: this is inside the paper's n - 2
    bound (the victim is the only honest member of P) and is what the README's threat model states.
    """
    dep, ids, ups = _new(6)
    _swap(dep, 0, _shrinking(AggregationServer))
    victim, colluders = ids[0], ids[1:3]
    dep.s0.keep = (victim, *colluders)
    _upload_all(dep, ups)
    dep.s0.agree(dep.s1.participants())
    dep.s1.agree(dep.s0.participants())
    res = dep.clients[victim].finish_round(dep.s0.aggregate(), dep.s1.aggregate())
    q = dep.config.quantizer
    assert res.n_participants == 3 == res.min_participants
    recovered = res.sum_codes - sum(q.quantize(ups[c]).astype(np.int64) for c in colluders)
    np.testing.assert_array_equal(recovered, q.quantize(ups[victim]))


def test_shrink_against_the_real_s1_service():
    """net_shrink.py: a malicious S0 calls the real S1's Agree with [victim]; S1 refuses, no K is served."""
    cfg = JanusConfig(dim=DIM)
    session, k0, k1 = bytes(range(16)), ServerKeys(), ServerKeys()
    node = ServerNode(make_server("s1", config=cfg, keys=k1, session=session, peer_sign=k0.sign.public))
    grpc_server, port = start_server(node, "127.0.0.1:0")
    try:
        s0 = AggregationServer(config=cfg, keys=k0, session=session, peer=k1.sign.public)
        r1 = Remote(f"127.0.0.1:{port}", max_bytes=2**20)
        ann0 = s0.announce(1, model_digest(b""))
        ann1 = r1.call("Open", ann0)
        clients = [JanusClient(config=cfg, s0=k0.public, s1=k1.public, session=session) for _ in range(5)]
        for i, c in enumerate(clients):
            c.begin_round(ann0, ann1)
            up = c.upload(np.random.default_rng(i).uniform(-1, 1, DIM))
            s0.receive(up.to_s0)
            r1.call("Submit", up.to_s1)
        evil = encode(MsgType.PARTICIPANTS, session, 1, {"ids": [clients[3].id]}, k0.sign)
        with pytest.raises(TooFewParticipantsError):
            r1.call("Agree", evil)
        assert node.server.participants_ is None and 1 not in node.finished
        r1.close()
    finally:
        grpc_server.stop(0)
