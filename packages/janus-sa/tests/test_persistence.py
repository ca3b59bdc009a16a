"""A restarted server neither loses nor double-counts an accepted update."""

import numpy as np
import pytest

from janus_sa import (
    AggregationServer,
    InProcessDeployment,
    JanusConfig,
    MaskServer,
    NotEnrolledError,
    ReplayError,
    Roster,
)
from janus_sa.simulation import random_updates


def _restart(dep, tmp_path):
    dep.s0 = AggregationServer(config=dep.config, keys=dep.keys0, session=dep.session,
                               peer=dep.keys1.sign.public, state_dir=tmp_path / "s0")
    dep.s1 = MaskServer(config=dep.config, keys=dep.keys1, session=dep.session,
                        peer=dep.keys0.sign.public, state_dir=tmp_path / "s1")


@pytest.mark.parametrize("restart_after_agree", [False, True])
def test_restart_mid_round(tmp_path, restart_after_agree):
    dep = InProcessDeployment(config=JanusConfig(dim=24), state_dir=tmp_path)
    ids = dep.add_clients(4)
    ups = random_updates(24, ids, random_state=5)
    a0, a1 = dep.s0.announce(1, dep.s0.head_), dep.s1.announce(1, dep.s1.head_)
    sent = {}
    for cid in ids:
        dep.clients[cid].begin_round(a0, a1)
        sent[cid] = dep.clients[cid].upload(ups[cid])
    for cid in ids[:3]:
        dep.s0.receive(sent[cid].to_s0)
        dep.s1.receive(sent[cid].to_s1)
    if restart_after_agree:
        dep.s0.receive(sent[ids[3]].to_s0)
        dep.s1.receive(sent[ids[3]].to_s1)
        dep.s0.agree(dep.s1.participants())
    _restart(dep, tmp_path)
    assert dep.s0.round_ == 1 and len(dep.s0.uploads_) == (4 if restart_after_agree else 3)
    assert dep.s0.announcement_ == a0  # Ed25519 is deterministic: the same announcement is re-issued
    with pytest.raises(ReplayError):
        dep.s0.receive(sent[ids[0]].to_s0)  # a client retrying after the crash is not double-counted
    if not restart_after_agree:
        dep.s0.receive(sent[ids[3]].to_s0)
        dep.s1.receive(sent[ids[3]].to_s1)
        dep.s0.agree(dep.s1.participants())
    else:
        assert dep.s0.participants_ is not None
    dep.s1.agree(dep.s0.participants())
    res = [dep.clients[c].finish_round(dep.s0.aggregate(), dep.s1.aggregate()) for c in ids]
    q = dep.config.quantizer
    exact = sum(q.quantize(ups[c]).astype(np.int64) for c in ids)
    for r in res:
        assert r.n_participants == 4
        np.testing.assert_array_equal(r.sum_codes, exact)


def test_next_round_after_restart(tmp_path):
    dep = InProcessDeployment(config=JanusConfig(dim=8), state_dir=tmp_path)
    ids = dep.add_clients(3)
    dep.run_round(random_updates(8, ids))
    _restart(dep, tmp_path)
    with pytest.raises(ReplayError):
        dep.s0.announce(1, dep.s0.head_)  # a restarted server will not reopen a finished round
    report = dep.run_round(random_updates(8, ids, random_state=1))
    assert report.round == 2 and len(report.results) == 3 and not report.errors


def test_restart_after_a_mid_round_revocation_resumes_the_round(tmp_path):
    """A key revoked (new roster installed) while a round is open: the restarted servers replay that round
    under the roster it was announced with (before: the replay refused the revoked client's upload and
    the server could not start), and the next round enforces the new roster."""
    dep = InProcessDeployment(config=JanusConfig(dim=8), state_dir=tmp_path)
    ids = dep.add_clients(4)
    ups = random_updates(8, ids, random_state=5)
    a0, a1 = dep.s0.announce(1, dep.s0.head_), dep.s1.announce(1, dep.s1.head_)
    for cid in ids:
        c = dep.clients[cid]
        c.begin_round(a0, a1)
        up = c.upload(ups[cid])
        dep.s0.receive(up.to_s0)
        dep.s1.receive(up.to_s1)
    revoked = dep.clients[ids[3]]
    dep.remove_clients([ids[3]])  # roster version 2 installed on both servers mid-round
    _restart(dep, tmp_path)
    assert dep.s0.announcement_ == a0 and dep.s0.roster_.version == dep.s1.roster_.version == 2
    assert len(dep.s0.uploads_) == len(dep.s1.uploads_) == 4
    dep.s1.agree(dep.s0.participants())
    dep.s0.agree(dep.s1.participants())
    g0, g1 = dep.s0.aggregate(), dep.s1.aggregate()
    res = dep.clients[ids[0]].finish_round(g0, g1)
    assert dep.s0.advance(g1) and dep.s1.advance(g0)
    revoked.finish_round(g0, g1)  # it took part in round 1 and follows the model to round 2
    q = dep.config.quantizer
    assert res.n_participants == 4
    np.testing.assert_array_equal(res.sum_codes, sum(q.quantize(ups[c]).astype(np.int64) for c in ids))
    b0, b1 = dep.s0.announce(2, dep.s0.head_), dep.s1.announce(2, dep.s1.head_)
    revoked.roster_ = dep.roster  # the revoked client forces its way past its own checks
    revoked.begin_round(b0, b1)
    revoked.roster_ = Roster(version=2, members=tuple(sorted((*dep.roster.members, revoked.id))),
                             signed0=dep.roster.signed0, signed1=dep.roster.signed1)
    up = revoked.upload(ups[ids[3]])
    for server, msg in ((dep.s0, up.to_s0), (dep.s1, up.to_s1)):
        with pytest.raises(NotEnrolledError):
            server.receive(msg)

def test_restart_with_a_stale_roster_cannot_roll_back_a_revocation(tmp_path):
    """``serve --roster old.json`` after a revocation: the installed version survives the restart and the
    older roster is refused (before: the server went back to version 1 and re-admitted the revoked key)."""
    dep = InProcessDeployment(config=JanusConfig(dim=8), state_dir=tmp_path)
    ids = dep.add_clients(4)
    v1 = dep.roster
    dep.remove_clients([ids[3]])
    for role, cls, keys, peer in ((0, AggregationServer, dep.keys0, dep.keys1), (1, MaskServer, dep.keys1, dep.keys0)):
        with pytest.raises(ReplayError, match="older"):
            cls(config=dep.config, keys=keys, session=dep.session, peer=peer.sign.public,
                state_dir=tmp_path / f"s{role}", roster=v1)
        again = cls(config=dep.config, keys=keys, session=dep.session, peer=peer.sign.public,
                    state_dir=tmp_path / f"s{role}")
        assert again.roster_.version == 2 and ids[3] not in again.roster_
    # the same version signed twice with different members is not a new roster either
    fresh = InProcessDeployment(config=JanusConfig(dim=8))
    fids = fresh.add_clients(3)
    other = [*fids[:2], ids[0]]
    s0, s1 = fresh.s0.sign_roster(other, version=2), fresh.s1.sign_roster(other, version=2)
    fresh.add_clients(1)  # installs version 2 with four members
    clash = Roster.from_signed(s0, s1, s0=fresh.keys0.sign.public, s1=fresh.keys1.sign.public, session=fresh.session)
    with pytest.raises(ReplayError, match="installed version"):
        fresh.s1.install_roster(clash)
    with pytest.raises(ReplayError, match="current version"):  # clients follow the same rule
        next(iter(fresh.clients.values())).set_roster(clash)
    assert fresh.s1.roster_.digest == fresh.roster.digest
