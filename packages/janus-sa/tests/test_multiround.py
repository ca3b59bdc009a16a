"""Cross-round differencing: two rounds whose aggregates differ by one client reveal that client's update.

The attack (one malicious server, no colluding client): round r aggregates everyone; in round r + 1 the
server re-announces the same model (or nudges one weight by 1e-12, a new digest with identical codes),
claims it never received the victim's upload, and subtracts the two verified aggregates. Every test
below runs it and checks that it is refused before any aggregate that depends on the victim's second
upload exists: the model chain (a model is announced only as the successor of the last verified
aggregate, each version gets one aggregate, each client uploads once per version) and the batch
participation policy (every participant set is a union of whole batches).
"""

import numpy as np
import pytest

from janus_sa import (
    ConfigError,
    ExcludedError,
    InProcessDeployment,
    JanusConfig,
    MaskServer,
    ModelInconsistencyError,
    SigningKey,
    enroll,
    model_digest,
)
from janus_sa.errors import ModelReplayError, ParticipationPolicyError, TooFewParticipantsError
from janus_sa.protocol import next_model
from janus_sa.simulation import random_updates

DIM = 16


def _deployment(n=10, **kw):
    dep = InProcessDeployment(config=JanusConfig(dim=DIM, **kw))
    ids = dep.add_clients(n)
    return dep, ids, random_updates(DIM, ids, random_state=7)


def _announce_attack(dep, evil_role, digest, rnd=2):
    """The malicious server announces round ``rnd`` for ``digest`` (bypassing its own chain check)."""
    evil = dep.s0 if evil_role == 0 else dep.s1
    return evil._announce(rnd, digest, evil.roster_, nonce=evil.start_nonce, retry=1)


def test_the_attack_recovers_the_victim_when_two_rounds_share_a_model():
    """What is refused below: with identical updates on one model, two verified aggregates over P and
    P minus the victim differ by exactly the victim's codes (shown on two independent deployments)."""
    dep_a, ids, ups = _deployment(n=10, min_participants=9)
    dep_b = InProcessDeployment(config=dep_a.config)
    ids_b = dep_b.add_clients(10)
    ups_b = {b: ups[a] for a, b in zip(ids, ids_b, strict=True)}
    full = dep_a.run_round(ups).results[ids[1]].sum_codes
    without = dep_b.run_round(ups_b, drop_before_s1=[ids_b[0]]).results[ids_b[1]].sum_codes
    np.testing.assert_array_equal(full - without, dep_a.config.quantizer.quantize(ups[ids[0]]))


@pytest.mark.parametrize("nudge", [0.0, 1e-12], ids=["same model", "nudged model"])
@pytest.mark.parametrize("evil_role", [0, 1])
def test_second_round_on_the_same_or_a_nudged_model_is_refused(evil_role, nudge):
    dep, ids, ups = _deployment(n=10, min_participants=9)
    first = dep.run_round(ups)
    assert len(first.results) == 10 and not first.errors
    w1 = np.zeros(DIM)
    w1[0] += nudge
    stale = model_digest(w1)  # round 1's model (nudge 0) or a copy whose codes are identical
    honest = dep.s1 if evil_role == 0 else dep.s0
    # the honest server refuses to announce it: not the successor of the aggregate it verified
    with pytest.raises(ModelReplayError):
        honest.announce(2, stale)
    # the honest server's successor is what the clients expect; a mixed pair is inconsistent
    ann_evil = _announce_attack(dep, evil_role, stale)
    ann_honest = honest.announce(2, honest.head_)
    pair = (ann_evil, ann_honest) if evil_role == 0 else (ann_honest, ann_evil)
    for c in dep.clients.values():
        with pytest.raises(ModelInconsistencyError):
            c.begin_round(*pair)
    # even two announcements of the stale model (the honest server's key used as if it were stolen)
    # are refused by every client: it is not the successor of the aggregate the client verified
    other = dep.s0 if evil_role == 1 else dep.s1
    other_stale = other._announce(3, stale, other.roster_, nonce=other.start_nonce, retry=1)
    evil = dep.s0 if evil_role == 0 else dep.s1
    evil._announce(3, stale, evil.roster_, nonce=evil.start_nonce, retry=1)
    both = (evil.announcement_, other_stale) if evil_role == 0 else (other_stale, evil.announcement_)
    for c in dep.clients.values():
        with pytest.raises(ModelReplayError):
            c.begin_round(*both)
    # nobody uploaded: no victim-dependent aggregate of a second round exists
    assert not dep.s0.uploads_ and not dep.s1.uploads_


def test_a_server_releases_one_aggregate_per_model_version():
    """S0 lets round 1 reach agreement, reads S1's aggregate, then claims the round failed and re-opens
    the same model without the victim: S1 refuses, having released an aggregate for that version."""
    dep, ids, ups = _deployment(n=10, min_participants=9)
    a0, a1 = dep.s0.announce(1, dep.s0.head_), dep.s1.announce(1, dep.s1.head_)
    for cid, c in dep.clients.items():
        c.begin_round(a0, a1)
        up = c.upload(ups[cid])
        dep.s0.receive(up.to_s0)
        dep.s1.receive(up.to_s1)
    dep.s0.agree(dep.s1.participants())
    dep.s1.agree(dep.s0.participants())
    dep.s1.aggregate()  # S0 reads S1's aggregate (it may), then withholds its own
    dep.s0.head_released_ = False  # the malicious S0 forgets it aggregated
    ann0 = dep.s0.announce(2, dep.s0.head_)
    with pytest.raises(ModelReplayError, match="already released an aggregate"):
        dep.s1.announce(2, dep.s1.head_)
    # and each client that uploaded refuses a second upload for the version unless both servers certify
    # the first round as abandoned (S1 does not: an S1 restarted without state announces retry=0)
    fresh = MaskServer(config=dep.config, keys=dep.keys1, session=dep.session, peer=dep.keys0.sign.public,
                       roster=dep.roster)
    ann1 = fresh.announce(2, fresh.head_)
    for cid, c in dep.clients.items():
        c.begin_round(ann0, ann1)
        with pytest.raises(ModelReplayError, match="already uploaded for this model version"):
            c.upload(ups[cid])


def test_a_round_that_failed_before_agreement_is_retried_on_the_same_model():
    """Liveness: a round that ended before either server released anything (too few uploads) is retried
    on the same version; both servers certify it (retry = 1) and the clients that uploaded upload again."""
    dep, ids, ups = _deployment(n=6, min_participants=5)
    a0, a1 = dep.s0.announce(1, dep.s0.head_), dep.s1.announce(1, dep.s1.head_)
    for cid in ids[:3]:
        c = dep.clients[cid]
        c.begin_round(a0, a1)
        up = c.upload(ups[cid])
        dep.s0.receive(up.to_s0)
        dep.s1.receive(up.to_s1)
    with pytest.raises(TooFewParticipantsError):
        dep.s0.agree(dep.s1.participants())
    dep.round = 1
    report = dep.run_round(ups)
    assert len(report.results) == 6 and not report.errors
    q = dep.config.quantizer
    np.testing.assert_array_equal(report.results[ids[0]].sum_codes,
                                  sum(q.quantize(ups[c]).astype(np.int64) for c in ids))


def test_the_coordinator_cannot_reannounce_a_model_and_the_chain_follows_the_update_rule():
    """The honest-dropout leak: an in-process coordinator that re-announces round 1's model is refused;
    each round's model is the successor w + lr * mean of the previous verified aggregate."""
    dep, ids, ups = _deployment(n=5, learning_rate=0.5)
    w0 = dep.model.copy()
    r1 = dep.run_round(ups)
    res = r1.results[ids[0]]
    w1 = next_model(w0, res.sum_codes, res.n_participants, dep.config)
    np.testing.assert_array_equal(w1, w0 + 0.5 * res.mean)
    assert res.next_model_digest == model_digest(w1) == dep.s0.head_ == dep.s1.head_
    assert all(c.head_ == model_digest(w1) for c in dep.clients.values())
    with pytest.raises(ModelReplayError):
        dep.run_round(ups, model=w0)  # the same model again, with one client dropping out
    dep.round = 1
    r2 = dep.run_round(ups, drop_before_s1=[ids[0]])
    assert r2.results[ids[1]].model_digest == model_digest(w1)


def test_batch_policy_leaves_out_a_dropped_clients_batch_and_clients_refuse_split_batches():
    """batch_size = 2 (So et al.): a dropout removes its whole batch, so the aggregate differs from the
    full one by a sum of two updates, never one; an aggregate over a split batch is refused."""
    dep, ids, ups = _deployment(n=6, batch_size=2, min_participants=2)
    batches = dep.roster.batch_members
    assert sorted(len(b) for b in batches.values()) == [2, 2, 2]
    victim = ids[0]
    mate = next(iter(batches[dep.roster.batch_of[victim]] - {victim}))
    report = dep.run_round(ups, drop_before_s1=[victim])
    res = report.results[ids[1] if ids[1] != mate else ids[2]]
    assert res.n_participants == 4 and res.excluded == {victim: "reached one server only", mate: "batch incomplete"}
    assert isinstance(report.errors[mate], ExcludedError) and report.errors[mate].reason == "batch incomplete"
    # both servers aggregating the split set {all but the victim} (their batch filter switched off):
    # every client refuses it
    a0, a1 = dep.s0.announce(2, dep.s0.head_), dep.s1.announce(2, dep.s1.head_)
    for cid, c in dep.clients.items():
        c.begin_round(a0, a1)
        up = c.upload(ups[cid])
        dep.s0.receive(up.to_s0)
        if cid != victim:
            dep.s1.receive(up.to_s1)
    dep.s0._round_roster = dep.s1._round_roster = None
    dep.s0.agree(dep.s1.participants())
    dep.s1.agree(dep.s0.participants())
    agg0, agg1 = dep.s0.aggregate(), dep.s1.aggregate()
    for c in dep.clients.values():
        with pytest.raises(ParticipationPolicyError):
            c.finish_round(agg0, agg1)


def test_batches_are_kept_whole_across_roster_versions():
    dep, ids, _ = _deployment(n=4, batch_size=2, min_participants=2)
    with pytest.raises(ConfigError, match="keep a batch whole"):
        dep.remove_clients(ids[:1])
    with pytest.raises(ConfigError, match="cannot form a batch"):
        dep.add_clients(1)
    batch = dep.roster.batch_members[dep.roster.batch_of[ids[0]]]
    dep.remove_clients(batch)  # revoking the whole batch is accepted
    assert set(dep.roster.members) == set(ids) - batch


def test_a_revoked_key_cannot_return_in_another_batch():
    """Re-enrolment attack on the batch policy: batches {A, B}, {C, D}, {E, F}; revoke {A, B}, then enrol
    A again beside a new key G (and later B beside G, ...). Rounds over {A, B}, {A, G} and {B, G} isolate
    A as (X1 + X2 - X3) / 2, so a key keeps the batch it first had, for good: it returns only with that
    whole batch, under that batch number."""
    dep, ids, _ = _deployment(n=6, batch_size=2, min_participants=2)
    a = ids[0]
    number = dep.roster.batch_of[a]
    batch = dep.roster.batch_members[number]
    dep.remove_clients(batch)
    new = dep.add_clients(2)  # a fresh batch is accepted
    version = dep.roster.version + 1
    for server in (dep.s0, dep.s1):  # A back without B, in a new batch with two new keys
        with pytest.raises(ConfigError, match="keep a batch whole"):
            server.sign_roster([*dep.roster.members, a, SigningKey().public, SigningKey().public], version=version)
        with pytest.raises(ConfigError, match="keep a batch whole"):  # or alone under its old number
            server.sign_roster([*dep.roster.members, a], version=version)
    assert set(new) <= set(dep.roster.members)
    roster = enroll([*dep.roster.members, *batch], version=version, s0=dep.s0, s1=dep.s1)
    assert {roster.batch_of[c] for c in batch} == {number}  # the whole batch returns under its number


def test_the_batch_history_survives_a_server_restart(tmp_path):
    config = JanusConfig(dim=DIM, batch_size=2, min_participants=2)
    dep = InProcessDeployment(config=config, state_dir=tmp_path)
    ids = dep.add_clients(4)
    dep.remove_clients(dep.roster.batch_members[dep.roster.batch_of[ids[0]]])
    s1 = MaskServer(config=config, keys=dep.keys1, session=dep.session, peer=dep.keys0.public.sign,
                    state_dir=tmp_path / "s1")
    assert ids[0] in s1.batch_history_
    with pytest.raises(ConfigError, match="keep a batch whole"):
        s1.sign_roster([*dep.roster.members, ids[0], SigningKey().public, SigningKey().public],
                       version=dep.roster.version + 1)


def test_rolling_back_the_honest_servers_state_dir_reopens_a_version_only_for_clients_that_saw_nothing(tmp_path):
    """S1's state is copied after it announced round 1; round 1 reaches agreement and S1 releases its
    aggregate while S0 withholds its own; S1 is restarted from the copy (a restored backup or VM
    snapshot), so it certifies round 1 as abandoned (retry = 1). Before, every client uploaded again on
    the same version and S0 subtracted the two aggregates to recover the victim's codes exactly. A client
    that holds S1's signed aggregate of its upload round (NetworkClient polls both servers) now refuses
    the retry. The gap that stays: a victim offline from its upload until the rollback saw nothing and
    uploads again, and the subtraction works."""
    import shutil

    from janus_sa.protocol import open_aggregate
    from janus_sa.wire import decode

    dep = InProcessDeployment(config=JanusConfig(dim=DIM, min_participants=9), state_dir=tmp_path)
    ids = dep.add_clients(10)
    ups = random_updates(DIM, ids, random_state=7)
    s0, s1, victim, head = dep.s0, dep.s1, ids[0], dep.s0.head_

    def run(ann0, ann1, s1, skip=()):
        for cid, c in dep.clients.items():
            c.begin_round(ann0, ann1)
            up = c.upload(ups[cid])
            if cid not in skip:
                s0.receive(up.to_s0)
            s1.receive(up.to_s1)
        s0.agree(s1.participants())
        s1.agree(s0.participants())
        agg0, agg1 = s0.aggregate(), s1.aggregate()
        msgs = [decode(a, max_bytes=2**24, max_dim=2**20, session=dep.session) for a in (agg0, agg1)]
        return open_aggregate(dep.config, *msgs, session=dep.session, roster=dep.roster, model_digest=head)[0], agg1

    ann0, ann1 = s0.announce(1, head), s1.announce(1, head)
    shutil.copytree(tmp_path / "s1", tmp_path / "backup")
    full, agg1 = run(ann0, ann1, s1)
    for cid in ids[1:]:  # every client but the victim polled S1 and holds its aggregate
        assert dep.clients[cid].note_aggregate(agg1)
    shutil.rmtree(tmp_path / "s1")
    shutil.copytree(tmp_path / "backup", tmp_path / "s1")
    restored = MaskServer(config=dep.config, keys=dep.keys1, session=dep.session, peer=dep.keys0.sign.public,
                          state_dir=tmp_path / "s1")
    assert restored.head_ == head and not restored.head_released_  # it has forgotten its release
    ann0 = s0._announce(2, head, s0.roster_, nonce=s0.start_nonce, retry=1)
    ann1 = restored.announce(2, head)
    for cid in ids[1:]:
        c = dep.clients[cid]
        c.begin_round(ann0, ann1)  # for verification only
        with pytest.raises(ModelReplayError, match="holds a server's aggregate"):
            c.upload(ups[cid])
    # the documented gap: had they all been offline like the victim, the rounds would subtract
    for cid in ids[1:]:
        dep.clients[cid].released_.clear()
    shutil.rmtree(tmp_path / "s1")
    shutil.copytree(tmp_path / "backup", tmp_path / "s1")
    again = MaskServer(config=dep.config, keys=dep.keys1, session=dep.session, peer=dep.keys0.sign.public,
                       state_dir=tmp_path / "s1")
    ann0 = s0._announce(3, head, s0.roster_, nonce=s0.start_nonce, retry=1)
    without, _ = run(ann0, again.announce(3, head), again, skip={victim})
    np.testing.assert_array_equal(full - without, dep.config.quantizer.quantize(ups[victim]))


def test_one_out_of_range_client_ends_the_deployment():
    """The availability gap the threat model names for deployments without range_proof: one client whose
    codes push the sum past n (Q - 1) makes every verifier refuse the round, the version is spent, and
    revoking the client does not let the deployment announce another round (re-opening the version would
    re-enable the subtraction). With range_proof the client is excluded instead (test_range_proof.py)."""
    from janus_sa import Quantizer
    from janus_sa.errors import AggregateRangeError

    class Shifted(Quantizer):  # same parameters, hence the same configuration digest
        def quantize(self, x):
            return np.full(np.shape(x), 2**31, dtype=np.uint32)

    dep, ids, ups = _deployment(n=4)
    object.__setattr__(dep.clients[ids[0]], "config", JanusConfig(dim=DIM, quantizer=Shifted()))
    report = dep.run_round(ups)
    assert not report.results and all(isinstance(e, AggregateRangeError) for e in report.errors.values())
    assert set(report.server_errors) == {"S0", "S1"}
    dep.remove_clients(ids[:1])
    with pytest.raises(ModelReplayError, match="already released an aggregate"):
        dep.run_round({c: ups[c] for c in ids[1:]})


def test_a_client_state_file_keeps_the_spent_version_across_a_client_restart(tmp_path):
    """S1 restarted without state re-opens the initial model (retry = 0); a client process restarted
    without state would upload for it again, one restarted from `client --state-dir` refuses."""
    from janus_sa import JanusClient
    from janus_sa.deploy import load_client_state, save_client_state

    dep, ids, ups = _deployment(n=10, min_participants=9)
    a0, a1 = dep.s0.announce(1, dep.s0.head_), dep.s1.announce(1, dep.s1.head_)
    c = dep.clients[ids[0]]
    c.begin_round(a0, a1)
    c.upload(ups[ids[0]])
    save_client_state(tmp_path / "client.state", c)

    def restarted(with_state):
        jc = JanusClient(config=dep.config, s0=dep.keys0.public, s1=dep.keys1.public, session=dep.session,
                         signing_key=c.key, roster=dep.roster)
        if with_state:
            assert load_client_state(tmp_path / "client.state", jc)
        return jc

    fresh = MaskServer(config=dep.config, keys=dep.keys1, session=dep.session, peer=dep.keys0.sign.public,
                       roster=dep.roster)
    ann0 = dep.s0._announce(2, dep.s0.head_, dep.s0.roster_, nonce=dep.s0.start_nonce, retry=0)
    ann1 = fresh.announce(2, fresh.head_)
    amnesiac = restarted(False)
    amnesiac.begin_round(ann0, ann1)
    amnesiac.upload(ups[ids[0]])  # the gap a client without a state file has
    remembers = restarted(True)
    assert remembers.spent_ == {dep.s0.head_: 1} and remembers.round_ == 1
    remembers.begin_round(ann0, ann1)
    with pytest.raises(ModelReplayError, match="already uploaded for this model version"):
        remembers.upload(ups[ids[0]])


def test_an_aggregate_that_fails_in_follow_leaves_the_client_where_it_was():
    """A client catching up is handed S0's round-2 aggregate with S1's round-1 one (a server mixing
    rounds, or a corrupted fetch): follow refuses, and the client can still follow the real round 2
    (before, its round counter had jumped to 2 and every later catch-up was refused as a replay)."""
    from janus_sa.errors import ReplayError

    dep, ids, ups = _deployment(n=5, min_participants=3)
    dep.run_round(ups)
    agg1_round1 = dep.s1.aggregate()
    late = dep.clients.pop(ids[0])  # misses round 2 (still enrolled)
    dep.run_round({c: ups[c] for c in ids[1:]})
    agg0, agg1 = dep.s0.aggregate(), dep.s1.aggregate()
    with pytest.raises(ReplayError, match="AGGREGATE1 is from round 1"):
        late.follow(agg0, agg1_round1)
    assert late.round_ == 1
    res = late.follow(agg0, agg1)
    assert res.round == 2 and late.head_ == dep.s0.head_
