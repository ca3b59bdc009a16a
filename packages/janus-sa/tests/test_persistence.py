"""A restarted server neither loses nor double-counts an accepted update."""

import numpy as np
import pytest

from janus_sa import AggregationServer, InProcessDeployment, JanusConfig, MaskServer, ReplayError
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
    a0, a1 = dep.s0.announce(1, bytes(32)), dep.s1.announce(1, bytes(32))
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
        dep.s0.announce(1, bytes(32))  # a restarted server will not reopen a finished round
    report = dep.run_round(random_updates(8, ids, random_state=1))
    assert report.round == 2 and len(report.results) == 3 and not report.errors
