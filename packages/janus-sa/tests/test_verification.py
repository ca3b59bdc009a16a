"""Soundness: every cheating behaviour listed in the issue is caught, with a specific error, by every client."""

import numpy as np
import pytest

from janus_sa import (
    AggregateMismatchError,
    AggregationServer,
    InProcessDeployment,
    JanusConfig,
    MaskServer,
    ModelInconsistencyError,
    ParticipantSetMismatchError,
    ReplayError,
    SignatureError,
    SigningKey,
    model_digest,
)
from janus_sa.crypto import generators, point_add
from janus_sa.errors import SealMismatchError, WrongRoundError
from janus_sa.simulation import random_updates
from janus_sa.wire import MsgType, decode, encode


def _all_rejected(report, error):
    assert not report.results, "no client may accept an aggregate"
    assert len(report.errors) == len(report.stats)
    for err in report.errors.values():
        assert type(err) is error, repr(err)


def _swap(dep, role, cls):
    """Replace S0 or S1 by a cheating subclass with the same keys and session."""
    if role == 0:
        dep.s0 = cls(config=dep.config, keys=dep.keys0, session=dep.session, peer=dep.keys1.sign.public,
                     roster=dep.roster)
    else:
        dep.s1 = cls(config=dep.config, keys=dep.keys1, session=dep.session, peer=dep.keys0.sign.public,
                     roster=dep.roster)


class S0PlusOne(AggregationServer):
    def _aggregate_uploads(self, agreed):
        super()._aggregate_uploads(agreed)
        self._value[3] += 1


class S0PlusOneAndFixCommitment(S0PlusOne):
    """Also adds G_0-part for the change to its own aggregated commitment (it cannot fix S1's)."""

    def _aggregate_uploads(self, agreed):
        super()._aggregate_uploads(agreed)
        # coordinate 3 lives in slot 3 of scalar 0: add 2**(33*3) * G_0
        from janus_sa.crypto import point_mul
        self._commitment = point_add(self._commitment, point_mul(2 ** (33 * 3), generators(1)[0]))


class S1WrongMask(MaskServer):
    def _aggregate_uploads(self, agreed):
        super()._aggregate_uploads(agreed)
        self._value[0] -= 5


class S1WrongRandomness(MaskServer):
    def _aggregate_uploads(self, agreed):
        super()._aggregate_uploads(agreed)
        self._randomness += 1


@pytest.mark.parametrize("mode", ["exact", "sketch"])
@pytest.mark.parametrize(("role", "cls"), [(0, S0PlusOne), (0, S0PlusOneAndFixCommitment), (1, S1WrongMask),
                                           (1, S1WrongRandomness)])
def test_cheating_server_is_caught(mode, role, cls):
    dep = InProcessDeployment(config=JanusConfig(dim=20, mode=mode))
    ids = dep.add_clients(4)
    _swap(dep, role, cls)
    _all_rejected(dep.run_round(random_updates(20, ids)), AggregateMismatchError)


def test_sketch_server_changing_value_after_seal_is_caught():
    class LateChange(AggregationServer):
        def aggregate(self):
            self._value[0] += 1
            return super().aggregate()

    dep = InProcessDeployment(config=JanusConfig(dim=20, mode="sketch"))
    ids = dep.add_clients(3)
    _swap(dep, 0, LateChange)
    _all_rejected(dep.run_round(random_updates(20, ids)), SealMismatchError)


def test_different_client_sets_are_caught():
    class S0IgnoresPeer(AggregationServer):
        def agree(self, peer_participants):  # aggregates every upload it got, not the intersection
            self.participants_ = tuple(sorted(self.uploads_))
            self._aggregate_uploads(self.participants_)
            return self.participants_

    dep = InProcessDeployment(config=JanusConfig(dim=12))
    ids = dep.add_clients(5)
    _swap(dep, 0, S0IgnoresPeer)
    _all_rejected(dep.run_round(random_updates(12, ids), drop_before_s1=ids[:1]), ParticipantSetMismatchError)


def test_same_set_digest_but_different_sum_is_caught():
    """S0 reports the agreed set's digest but sums a different set: the commitments still catch it."""
    class S0DropsOne(AggregationServer):
        def _aggregate_uploads(self, agreed):
            super()._aggregate_uploads(agreed[1:])

    dep = InProcessDeployment(config=JanusConfig(dim=12))
    ids = dep.add_clients(5)
    _swap(dep, 0, S0DropsOne)
    _all_rejected(dep.run_round(random_updates(12, ids)), AggregateMismatchError)


def _open_round(dep, rnd=1, digest=None):
    digest = dep.s0.head_ if digest is None else digest
    a0, a1 = dep.s0.announce(rnd, digest), dep.s1.announce(rnd, digest)
    for c in dep.clients.values():
        c.begin_round(a0, a1)
    return a0, a1


def test_unsigned_or_forged_messages_are_rejected(small):
    dep, ids, ups = small
    _open_round(dep)
    client = dep.clients[ids[0]]
    up = client.upload(ups[ids[0]])
    msg = decode(up.to_s0, max_bytes=10**6)
    forger = SigningKey()
    # same sender id, body changed, signature kept -> invalid
    tampered = encode(MsgType.UPLOAD0, msg.session, msg.round, {**msg.body, "masked": msg.body["masked"] + 1}, forger)
    tampered = tampered.replace(forger.public, client.id)
    with pytest.raises(SignatureError):
        dep.s0.receive(tampered)
    # zeroed signature
    unsigned = up.to_s0[:-64] + bytes(64)
    with pytest.raises(SignatureError):
        dep.s0.receive(unsigned)
    dep.s0.receive(up.to_s0)  # the genuine message still goes through
    # an aggregate signed by someone other than S0
    dep.s1.receive(up.to_s1)
    _upload_others(dep, ids[1:3], ups)
    dep.s0.agree(dep.s1.participants())
    dep.s1.agree(dep.s0.participants())
    agg0 = decode(dep.s0.aggregate(), max_bytes=10**6)
    fake = encode(MsgType.AGGREGATE0, agg0.session, agg0.round, agg0.body, forger)
    with pytest.raises(SignatureError):
        client.finish_round(fake, dep.s1.aggregate())
    assert client.finish_round(dep.s0.aggregate(), dep.s1.aggregate()).n_participants == 3


def _upload_others(dep, others, ups):
    """Uploads of further clients, so the round reaches min_participants (3)."""
    for cid in others:
        up = dep.clients[cid].upload(ups[cid])
        dep.s0.receive(up.to_s0)
        dep.s1.receive(up.to_s1)


def test_replayed_messages_are_rejected(small):
    dep, ids, ups = small
    _open_round(dep, 1)
    c = dep.clients[ids[0]]
    up = c.upload(ups[ids[0]])
    dep.s0.receive(up.to_s0)
    dep.s1.receive(up.to_s1)
    with pytest.raises(ReplayError):
        dep.s0.receive(up.to_s0)  # same round, second copy
    _upload_others(dep, ids[1:3], ups)
    dep.s0.agree(dep.s1.participants())
    dep.s1.agree(dep.s0.participants())
    old0, old1 = dep.s0.aggregate(), dep.s1.aggregate()
    for client in dep.clients.values():
        client.finish_round(old0, old1)
    assert dep.s0.advance(old1) and dep.s1.advance(old0)  # both servers move to the successor model
    _open_round(dep, 2)
    with pytest.raises(ReplayError):
        dep.s0.receive(up.to_s0)  # upload from round 1 replayed in round 2
    with pytest.raises(ReplayError):
        dep.s1.receive(up.to_s1)
    with pytest.raises(ReplayError):
        c.finish_round(old0, old1)  # aggregate of round 1 replayed to a round-2 client
    future = encode(MsgType.UPLOAD0, dep.session, 7, decode(up.to_s0, max_bytes=10**6).body, c.key)
    with pytest.raises(WrongRoundError):
        dep.s0.receive(future)


def test_model_inconsistency_attack_is_caught(small):
    """S0 sends client A a different model digest than everyone else gets (Pasquini et al. MIA)."""
    dep, ids, ups = small
    good = dep.s0.head_
    a0, a1 = dep.s0.announce(1, good), dep.s1.announce(1, good)
    crafted = encode(MsgType.ANNOUNCE, dep.session, 1, {**decode(a0, max_bytes=4096).body,
                                                        "model_digest": model_digest(np.ones(8))}, dep.keys0.sign)
    with pytest.raises(ModelInconsistencyError):
        dep.clients[ids[0]].begin_round(crafted, a1)
    dep.clients[ids[1]].begin_round(a0, a1)  # consistent announcements are accepted
    # an upload for another model is refused by the server as well
    victim = dep.clients[ids[2]]
    victim.begin_round(a0, a1)
    victim.model_digest_ = model_digest(np.ones(8))  # a client tricked into uploading for another model
    with pytest.raises(ModelInconsistencyError):
        dep.s0.receive(victim.upload(ups[ids[2]]).to_s0)


def test_sketch_needs_the_seal_before_the_challenge():
    """Why sketch mode seals first: once A is known, an error in ker(A) opens the same commitments.

    With l > 2**k columns two columns of the k x l sign matrix coincide, so d = e_i - e_j is in ker(A).
    A server that could still change its value after seeing the challenge would pass the commitment
    check with X + d; the seal (digest fixed before the challenge exists) is what rules this out, as
    test_sketch_server_changing_value_after_seal_is_caught shows.
    """
    from janus_sa.protocol import project

    k, dim = 4, 64
    challenge = bytes(range(32))
    cols = {}
    basis = np.eye(dim, dtype=np.int64)
    for j in range(dim):
        key = tuple(project(basis[j], challenge, k))
        if key in cols:
            i = cols[key]
            break
        cols[key] = j
    d = basis[i] - basis[j]
    x = np.random.default_rng(0).integers(0, 2**20, dim)
    assert np.array_equal(project(x + d, challenge, k), project(x, challenge, k))
    assert not np.array_equal(x + d, x)
