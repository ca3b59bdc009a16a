"""A client that missed the end of a round it began can verify it later and rejoin the chain."""
import numpy as np
import pytest

from janus_sa import InProcessDeployment, JanusClient, JanusConfig
from janus_sa.deploy import load_client_state, save_client_state
from janus_sa.errors import ModelReplayError, ServerUnavailableError
from janus_sa.simulation import random_updates


class _TimesOut(JanusClient):
    def finish_round(self, *args, **kwargs):
        raise ServerUnavailableError("aggregate not fetched before the timeout")


def _missed_first_round(tmp_path=None):
    dep = InProcessDeployment(config=JanusConfig(dim=8))
    ids = dep.add_clients(4)
    ups = random_updates(8, ids, random_state=1)
    late = dep.clients[ids[0]]
    late.__class__ = _TimesOut
    rep = dep.run_round(ups)
    late.__class__ = JanusClient
    assert isinstance(rep.errors[ids[0]], ServerUnavailableError)
    assert rep.results[ids[1]].n_participants == 4 and not late.round_finished_
    return dep, ids, ups, late, (dep.s0.aggregate(), dep.s1.aggregate())


def test_follow_finishes_the_round_the_client_began():
    dep, ids, ups, late, (agg0, agg1) = _missed_first_round()
    res = late.follow(agg0, agg1)
    assert res.included and res.round == 1
    assert late.head_ == dep.clients[ids[1]].head_ and late.round_finished_
    rep = dep.run_round(ups)
    assert not rep.errors and len(rep.results) == 4


def test_follow_after_restart_from_saved_state(tmp_path):
    dep, ids, ups, late, (agg0, agg1) = _missed_first_round()
    save_client_state(tmp_path / "c.state", late)
    fresh = JanusClient(config=dep.config, s0=late.s0, s1=late.s1, session=late.session, signing_key=late.key,
                        roster=late.roster_)
    assert load_client_state(tmp_path / "c.state", fresh) and not fresh.round_finished_
    fresh.follow(agg0, agg1)
    assert fresh.head_ == dep.clients[ids[1]].head_


def test_run_round_lets_a_client_that_erred_verify_and_rejoin():
    dep = InProcessDeployment(config=JanusConfig(dim=8))
    ids = dep.add_clients(4)
    ups = random_updates(8, ids, random_state=1)
    rep = dep.run_round({**ups, ids[0]: np.ones(7)})
    assert ids[0] in rep.errors and len(rep.results) == 3
    rep = dep.run_round(ups)
    assert not any(isinstance(e, ModelReplayError) for e in rep.errors.values()) and len(rep.results) == 4
    rep = dep.run_round(ups, received_models={ids[1]: np.full(8, 1e-12)})
    assert ids[1] in rep.errors
    rep = dep.run_round(ups)
    assert not rep.errors and len(rep.results) == 4


def test_a_finished_round_cannot_be_finished_again():
    """Before, a second finish_round applied the aggregate to the successor model and lost the chain."""
    from janus_sa.errors import ProtocolError

    dep = InProcessDeployment(config=JanusConfig(dim=8))
    ids = dep.add_clients(3)
    ups = random_updates(8, ids, random_state=2)
    dep.run_round(ups)
    client = dep.clients[ids[0]]
    head = client.head_
    with pytest.raises(ProtocolError, match="already finished"):
        client.finish_round(dep.s0.aggregate(), dep.s1.aggregate())
    assert client.head_ == head and not dep.run_round(ups).errors
