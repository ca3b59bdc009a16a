"""Adversary suite: the security review's attacks (privacy, integrity, authentication) must all fail.

Each test ports one attack script; the attack is run as written against the hardened protocol and the
test asserts that it is refused, and by whom.
"""

import msgpack
import numpy as np
import pytest

from janus_sa import (
    AggregationServer,
    ConfigError,
    ExcludedError,
    InProcessDeployment,
    JanusClient,
    JanusConfig,
    JanusError,
    MaskServer,
    ModelInconsistencyError,
    NotEnrolledError,
    Quantizer,
    ReplayError,
    Roster,
    ServerKeys,
    TooFewParticipantsError,
    crypto,
    enroll,
    model_digest,
)
from janus_sa.errors import ProtocolError, RoundClosedError, RoundFailedError, SealMismatchError
from janus_sa.net import NetworkClient, Remote, ServerNode, make_server, read_request, start_server
from janus_sa.protocol import check_exclusion, seal_commitment
from janus_sa.simulation import random_updates
from janus_sa.wire import MsgType, decode, encode

DIM = 16


def _new(n=5, **kw):
    dep = InProcessDeployment(config=JanusConfig(dim=DIM, **kw))
    ids = dep.add_clients(n)
    return dep, ids, random_updates(DIM, ids, random_state=3)


def _swap(dep, role, cls):
    """Replace S0 (role 0) or S1 by an instance of ``cls`` that continues the old one's model chain."""
    old = dep.s0 if role == 0 else dep.s1
    if role == 0:
        dep.s0 = cls(config=dep.config, keys=dep.keys0, session=dep.session, peer=dep.keys1.sign.public,
                     roster=dep.roster)
    else:
        dep.s1 = cls(config=dep.config, keys=dep.keys1, session=dep.session, peer=dep.keys0.sign.public,
                     roster=dep.roster)
    new = dep.s0 if role == 0 else dep.s1
    new.head_, new.head_model_, new.head_round_, new.head_released_ = (
        old.head_, old.head_model_, old.head_round_, old.head_released_)


def _shrinking(base):
    """A server that names only ``keep`` in its PARTICIPANTS and aggregates over them alone."""

    class Shrink(base):
        keep: tuple = ()

        def participants(self):
            keep = sorted(self.keep)
            return encode(MsgType.PARTICIPANTS, self.session, self.round_,
                          {"ids": keep, "checks": b"".join(self._check_value(c) for c in keep)}, self.keys.sign)

        def agree(self, peer):
            self.participants_ = tuple(sorted(self.keep))
            self.excluded_ = tuple((c, 2) for c in sorted(set(self.uploads_) - set(self.keep)))  # as S1 computes
            self._aggregate_uploads(self.participants_)
            return self.participants_

    return Shrink


def _finish(dep, seals=None):
    """End a hand-driven round: both servers follow the verified aggregate and every client verifies it."""
    seals = seals or {}
    agg0, agg1 = dep.s0.aggregate(), dep.s1.aggregate()
    assert dep.s0.advance(agg1, peer_seal=seals.get("seal1")) and dep.s1.advance(agg0, peer_seal=seals.get("seal0"))
    for c in dep.clients.values():
        if c.head_ == dep.s0.model_digest_:
            try:
                c.finish_round(agg0, agg1, **seals)
            except ExcludedError:
                pass


def _upload_all(dep, ups, rnd=1):
    a0, a1 = dep.s0.announce(rnd, dep.s0.head_), dep.s1.announce(rnd, dep.s1.head_)
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
    for c in dep.clients.values():  # the new server object does not certify round 1 as abandoned
        c.spent_.clear()
    _upload_all(dep, ups, rnd=2)
    dep.s0.agree(dep.s1.participants())
    dep.s1.agree(dep.s0.participants())
    agg0, agg1 = dep.s0.aggregate(), dep.s1.aggregate()
    for c in dep.clients.values():
        with pytest.raises(TooFewParticipantsError):
            c.finish_round(agg0, agg1)



@pytest.mark.parametrize(("kw", "match"), [
    ({"min_participants": 1}, "int >= 2"),
    ({"min_participants": True}, "int >= 2"),
    ({"min_participants": 6, "n_expected": 5}, "exceeds n_expected=5"),
    ({"dropout_rate": 1.0}, "dropout_rate"),  # a round that tolerates losing everyone has no threshold
    ({"n_expected": True}, "n_expected"),
    ({"min_participants": 5, "quantizer": Quantizer(quantization_range=2**22, modulus_range=2**24)}, "can sum"),
])
def test_min_participants_outside_2_to_n_is_refused(kw, match):
    """A threshold no round can reach (above n_expected or above what the modulus can sum) is a
    configuration error; before, it was accepted and every round failed with TooFewParticipantsError."""
    with pytest.raises(ConfigError, match=match):
        JanusConfig(dim=4, **kw).validate()
    assert JanusConfig(dim=4, min_participants=2, n_expected=2).validate().threshold == 2
    assert JanusConfig(dim=4, min_participants=5, n_expected=5).validate().threshold == 5

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
        clients = [JanusClient(config=cfg, s0=k0.public, s1=k1.public, session=session) for _ in range(5)]
        roster = enroll([c.id for c in clients], version=1, s0=s0, s1=node.server)
        for c in clients:
            c.set_roster(roster)
        ann0 = s0.announce(1, s0.head_)
        ann1 = r1.call("Open", msgpack.packb([ann0, b"", b""]))
        for i, c in enumerate(clients):
            c.begin_round(ann0, ann1)
            up = c.upload(np.random.default_rng(i).uniform(-1, 1, DIM))
            s0.receive(up.to_s0)
            r1.call("Submit", up.to_s1)
        evil = encode(MsgType.PARTICIPANTS, session, 1,
                      {"ids": [clients[3].id], "checks": s0._check_value(clients[3].id)}, k0.sign)
        with pytest.raises(TooFewParticipantsError):
            r1.call("Agree", evil)
        assert node.server.participants_ is None and 1 not in node.finished
        r1.close()
    finally:
        grpc_server.stop(0)


def _with_member(roster, key):
    """A roster object that claims ``key`` is enrolled but carries the servers' signatures of the real one."""
    return Roster(version=roster.version, members=tuple(sorted((*roster.members, key))), signed0=roster.signed0,
                  signed1=roster.signed1)


# --- client authentication ------------------------------------------------------------------------
def test_unenrolled_keys_are_refused_and_the_sybil_hijack_fails():
    """net_sybil.py in process: an outsider precomputes uploads with self-made keys for the predictable
    round and model digest; both servers refuse them, and the honest clients' round completes."""
    dep, ids, ups = _new(3)
    sybils = [JanusClient(config=dep.config, s0=dep.keys0.public, s1=dep.keys1.public, session=dep.session)
              for _ in range(5)]
    a0, a1 = dep.s0.announce(1, dep.s0.head_), dep.s1.announce(1, dep.s1.head_)
    for sy in sybils:  # the outsider copies the roster and forces its way past its own client-side check
        sy.set_roster(dep.roster)
        sy.begin_round(a0, a1)
        sy.roster_ = _with_member(dep.roster, sy.id)
        up = sy.upload(np.full(DIM, 8.0))
        with pytest.raises(NotEnrolledError):
            dep.s0.receive(up.to_s0)
        with pytest.raises(NotEnrolledError):
            dep.s1.receive(up.to_s1)
    with pytest.raises(NotEnrolledError):  # the honest client API refuses an unenrolled key up front
        fresh = JanusClient(config=dep.config, s0=dep.keys0.public, s1=dep.keys1.public, session=dep.session,
                            roster=dep.roster)
        fresh.begin_round(a0, a1)
        fresh.upload(np.zeros(DIM))
    for cid in ids:
        c = dep.clients[cid]
        c.begin_round(a0, a1)
        up = c.upload(ups[cid])
        dep.s0.receive(up.to_s0)
        dep.s1.receive(up.to_s1)
    dep.s0.agree(dep.s1.participants())
    dep.s1.agree(dep.s0.participants())
    res = dep.clients[ids[0]].finish_round(dep.s0.aggregate(), dep.s1.aggregate())
    q = dep.config.quantizer
    assert res.n_participants == 3 and res.included
    np.testing.assert_array_equal(res.sum_codes, sum(q.quantize(ups[c]).astype(np.int64) for c in ids))


def test_duplicate_keys_second_uploads_and_revoked_keys_are_refused():
    dep, ids, ups = _new(4)
    first_roster = dep.roster
    with pytest.raises(ConfigError, match="duplicate key"):
        dep.s0.sign_roster([ids[0], ids[1], ids[0]], version=dep.roster.version + 1)
    with pytest.raises(ConfigError, match="signing key"):
        dep.s1.sign_roster([*ids, dep.keys0.sign.public], version=dep.roster.version + 1)
    with pytest.raises(ConfigError, match="not above"):
        dep.s0.sign_roster(ids, version=dep.roster.version)
    a0, a1 = dep.s0.announce(1, dep.s0.head_), dep.s1.announce(1, dep.s1.head_)
    c = dep.clients[ids[0]]
    c.begin_round(a0, a1)
    first = c.upload(ups[ids[0]])
    dep.s0.receive(first.to_s0)
    dep.s1.receive(first.to_s1)
    with pytest.raises(ProtocolError, match="already uploaded"):
        c.upload(ups[ids[0]])  # the client API allows one upload per round
    again = JanusClient(config=dep.config, s0=dep.keys0.public, s1=dep.keys1.public, session=dep.session,
                        signing_key=c.key, roster=dep.roster)  # a second, freshly masked upload, same key
    again.begin_round(a0, a1)
    second = again.upload(np.full(DIM, 5.0))
    with pytest.raises(ReplayError, match="second upload"):
        dep.s0.receive(second.to_s0)
    with pytest.raises(ReplayError, match="second upload"):
        dep.s1.receive(second.to_s1)
    # revocation: a later roster version without ids[3]; its next-round upload is refused by both servers
    dep_key = dep.clients[ids[3]].key
    dep.remove_clients([ids[3]])
    revoked = JanusClient(config=dep.config, s0=dep.keys0.public, s1=dep.keys1.public, session=dep.session,
                          signing_key=dep_key, roster=dep.roster)
    b0, b1 = dep.s0.announce(2, dep.s0.head_), dep.s1.announce(2, dep.s1.head_)
    assert decode(b0, max_bytes=4096).body["roster_digest"] == dep.roster.digest != \
        decode(a0, max_bytes=4096).body["roster_digest"]
    revoked.begin_round(b0, b1)
    revoked.roster_ = _with_member(dep.roster, revoked.id)
    up = revoked.upload(np.zeros(DIM))
    for server, msg in ((dep.s0, up.to_s0), (dep.s1, up.to_s1)):
        with pytest.raises(NotEnrolledError):
            server.receive(msg)
    with pytest.raises(ReplayError, match="older"):  # servers and clients never go back to an old version
        dep.s0.install_roster(first_roster)
    with pytest.raises(ReplayError, match="older"):
        dep.clients[ids[0]].set_roster(first_roster)


# --- inclusion ----------------------------------------------------------------------------------
def test_censored_client_gets_excluded_error_with_both_signed_lists():
    """attacks_integrity.py [3]: S0 silently forgets one client's upload (claims non-receipt)."""

    class Censor(AggregationServer):
        target = None

        def receive(self, data):
            super().receive(data)
            self.uploads_.pop(Censor.target, None)

    dep, ids, ups = _new(5)
    _swap(dep, 0, Censor)
    Censor.target = ids[0]
    report = dep.run_round(ups)
    err = report.errors[ids[0]]
    assert isinstance(err, ExcludedError) and set(report.errors) == {ids[0]}
    for raw, key, mtype in ((err.aggregate0, dep.keys0, MsgType.AGGREGATE0), (err.aggregate1, dep.keys1,
                                                                              MsgType.AGGREGATE1)):
        m = decode(raw, max_bytes=10**6, expect=(mtype,)).verify(expected_sender=key.sign.public)
        assert ids[0] not in m.body["ids"] and len(m.body["ids"]) == 4  # signed evidence of the exclusion
    assert all(r.included and r.n_participants == 4 for r in report.results.values())



def test_exclusion_evidence_is_checkable_and_forged_evidence_is_refused():
    """A third party checks an ExcludedError's evidence with the servers' public keys; evidence built
    from another round, re-signed by someone else, mixed across rounds, or naming the client is refused."""
    from janus_sa.errors import SignatureError, VerificationError, WireFormatError, WrongSessionError

    class Censor(AggregationServer):
        def receive(self, data):
            super().receive(data)
            self.uploads_.pop(ids[0], None)

    dep, ids, ups = _new(5)
    first = dep.run_round(ups)  # round 1: nobody excluded
    a1_0, a1_1 = dep.s0.aggregate(), dep.s1.aggregate()
    assert not first.errors
    _swap(dep, 0, Censor)
    err = dep.run_round(ups).errors[ids[0]]
    keys = {"s0": dep.keys0.public, "s1": dep.keys1.sign.public, "session": dep.session}
    rnd, final = check_exclusion(err.aggregate0, err.aggregate1, client=ids[0], **keys)
    assert rnd == 2 and final == tuple(sorted(ids[1:]))
    outsider = ServerKeys()
    m0 = decode(err.aggregate0, max_bytes=10**6)
    resigned = encode(MsgType.AGGREGATE0, dep.session, 2, dict(m0.body), outsider.sign)
    forged = [
        ((a1_0, a1_1), ids[0], VerificationError),            # round 1's aggregates name the client
        ((a1_0, err.aggregate1), ids[0], JanusError),          # rounds mixed
        ((err.aggregate1, err.aggregate0), ids[0], WireFormatError),  # S1's aggregate passed as S0's
        ((resigned, err.aggregate1), ids[0], SignatureError),   # an outsider's signature
        ((b"\x00" * 64, err.aggregate1), ids[0], WireFormatError),
        ((err.aggregate0, err.aggregate1), ids[1], VerificationError),  # another client was included
    ]
    for (g0, g1), who, error in forged:
        with pytest.raises(error):
            check_exclusion(g0, g1, client=who, **keys)
    with pytest.raises(WrongSessionError):  # evidence of another deployment
        check_exclusion(err.aggregate0, err.aggregate1, client=ids[0], s0=keys["s0"], s1=keys["s1"], session=bytes(16))

# --- keys -------------------------------------------------------------------------------------------
def test_keygen_per_party_exports_only_public_bundles(tmp_path, capsys):
    """Each party generates its own key in its own folder; only public bundles leave it. Bad inputs end
    the command with exit code 2 and one line on stderr (before: a traceback)."""
    import json
    import stat

    from janus_sa.deploy import main as deploy_main

    for role in ("s0", "s1"):
        assert deploy_main(["keygen", "--role", role, "--out", str(tmp_path / role)]) == 0
    assert deploy_main(["keygen", "--role", "client", "--out", str(tmp_path / "c")]) == 0
    for role, folder in (("s0", "s0"), ("s1", "s1"), ("client", "c")):
        key = tmp_path / folder / f"{role}.key"
        assert stat.S_IMODE(key.stat().st_mode) == 0o600
        assert sorted(p.name for p in (tmp_path / folder).iterdir()) == [f"{role}.key", f"{role}.pub.json"]
        pub = (tmp_path / folder / f"{role}.pub.json").read_text()
        assert key.read_bytes().hex() not in pub and key.read_bytes()[:32].hex() not in pub
    s0_pub = json.loads((tmp_path / "s0" / "s0.pub.json").read_text())
    assert set(s0_pub) == {"role", "sign", "kem"}
    with pytest.raises(SystemExit, match="refusing to overwrite"):
        deploy_main(["keygen", "--role", "s0", "--out", str(tmp_path / "s0")])
    with pytest.raises(SystemExit, match="same key"):
        (tmp_path / "s1copy.json").write_text(json.dumps({**s0_pub, "role": "s1"}))
        deploy_main(["bundle", "--s0", str(tmp_path / "s0" / "s0.pub.json"), "--s1", str(tmp_path / "s1copy.json"),
                     "--dim", "4", "--out", str(tmp_path / "dep.json")])
    dep = str(tmp_path / "dep.json")
    assert deploy_main(["bundle", "--s0", str(tmp_path / "s0" / "s0.pub.json"), "--s1",
                        str(tmp_path / "s1" / "s1.pub.json"), "--dim", "4", "--out", dep]) == 0
    roster = str(tmp_path / "roster.json")
    pubs = [str(tmp_path / "c" / "client.pub.json")] * 2
    capsys.readouterr()
    assert deploy_main(["enroll", "--role", "s0", "--key", str(tmp_path / "s0" / "s0.key"), "--deployment", dep,
                        "--clients", *pubs, "--version", "1", "--roster", roster]) == 2
    for bad in (["--min-participants", "1"], ["--min-participants", "6", "--n-expected", "5"]):
        assert deploy_main(["bundle", "--s0", str(tmp_path / "s0" / "s0.pub.json"), "--s1",
                            str(tmp_path / "s1" / "s1.pub.json"), "--dim", "4", "--out", dep + ".bad", *bad]) == 2
    assert deploy_main(["bundle", "--s0", str(tmp_path / "nowhere.json"), "--s1", str(tmp_path / "s1" / "s1.pub.json"),
                        "--dim", "4", "--out", dep + ".bad"]) == 2
    err = capsys.readouterr().err.splitlines()
    assert len(err) == 4 and "Traceback" not in "".join(err)
    assert "ConfigError: duplicate key" in err[0] and "int >= 2" in err[1] and "exceeds n_expected=5" in err[2]
    assert "FileNotFoundError" in err[3] and "nowhere.json" in err[3]
    assert deploy_main(["enroll", "--role", "s0", "--key", str(tmp_path / "s0" / "s0.key"), "--deployment", dep,
                        "--clients", pubs[0], "--version", "1", "--roster", roster]) == 0
    from janus_sa.deploy import load_roster

    with pytest.raises(SystemExit, match="not signed by s1"):
        load_roster(roster, json.loads((tmp_path / "dep.json").read_text()))
    assert deploy_main(["enroll", "--role", "s1", "--key", str(tmp_path / "s1" / "s1.key"), "--deployment", dep,
                        "--clients", pubs[0], "--version", "1", "--roster", roster]) == 0
    r = load_roster(roster, json.loads((tmp_path / "dep.json").read_text()))
    assert r.version == 1 and r.members == (bytes.fromhex(json.loads(open(pubs[0]).read())["sign"]),)


# --- sketch soundness -----------------------------------------------------------------------------
def _sketch_round_to_agree(k=16, dim=64, n=4):
    dep = InProcessDeployment(config=JanusConfig(dim=dim, mode="sketch", sketch_k=k))
    ids = dep.add_clients(n)
    ups = random_updates(dim, ids, random_state=0)
    _upload_all(dep, ups)
    dep.s0.agree(dep.s1.participants())
    dep.s1.agree(dep.s0.participants())
    return dep, ids, ups


def test_second_server_cannot_grind_the_sketch_challenge():
    """attack_sketch_grind.py at k = 16: S0 reads S1's revealed seal, then grinds Y + t (e_0 - e_1).

    Before, the wrong sum passed once A had two equal columns (14,913 and 199,563 trials measured at
    k = 16). Now S1 reveals only after holding S0's commitment and signs it into its seal, so every
    ground value fails the clients' commitment check, whatever the projection: 0 of 2**17 accepted.
    """
    dep, ids, ups = _sketch_round_to_agree()
    s0 = dep.s0
    c0 = s0.seal_commit()                 # S0 must commit first: S1 reveals only against a commitment
    seal1 = dep.s1.seal(c0)               # S1's reveal (public on the Seal RPC), binding c0
    bound = decode(seal1, max_bytes=4096).body["peer_commitment"]
    key, rnd = s0.keys.sign.to_bytes(), (1).to_bytes(8, "little")
    y = bytearray(s0._value.astype("<u4").tobytes())
    base0, base1 = s0._value[0].item(), s0._value[1].item()
    d_true = crypto.sha256(bytes(y))  # control: the honest value (t = 0) does pass the same check
    assert seal_commitment(d_true, crypto.sha256(b"janus/seal-nonce", key, dep.session, rnd, d_true)) == bound
    accepted = 0
    for t in range(1, 2**17 + 1):
        y[0:4] = ((base0 + t) % 2**32).to_bytes(4, "little")
        y[4:8] = ((base1 - t) % 2**32).to_bytes(4, "little")
        d0 = crypto.sha256(bytes(y))
        nonce = crypto.sha256(b"janus/seal-nonce", key, dep.session, rnd, d0)
        accepted += seal_commitment(d0, nonce) == bound  # the first check a client runs on the seals
    assert accepted == 0
    # the round itself with a ground value (t = 1): every client refuses before any projection is used
    s0._value = s0._value.copy()
    s0._value[0] += np.uint32(1)
    s0._value[1] -= np.uint32(1)
    seal0 = s0.seal(dep.s1.seal_commit())
    for cid in ids:
        with pytest.raises(SealMismatchError, match="S0's seal does not open"):
            dep.clients[cid].sketch_commit(seal0, seal1)


def test_sketch_commit_refuses_a_second_challenge():
    """sketch_twice.py: two commitments with one r_i under two challenges would reveal A x - A' x."""
    dep, ids, ups = _sketch_round_to_agree(k=8, dim=32, n=3)
    c0, c1 = dep.s0.seal_commit(), dep.s1.seal_commit()
    seals = {"seal0": dep.s0.seal(c1), "seal1": dep.s1.seal(c0)}
    c = dep.clients[ids[0]]
    c.sketch_commit(**seals)
    with pytest.raises(ProtocolError, match="already called"):
        c.sketch_commit(**seals)
    with pytest.raises(ProtocolError, match="already committed to a different seal"):
        dep.s0.seal(encode(MsgType.SEAL_COMMIT, dep.session, 1, {**decode(c1, max_bytes=4096).body,
                                                                 "commitment": bytes(32)}, dep.keys1.sign))



def test_seals_and_seal_commitments_of_an_earlier_round_are_refused():
    """Round 1's SEAL_COMMIT replayed to a server in round 2, and round 1's seals (alone or mixed with a
    fresh one) handed to a client in round 2: each is refused as a replay."""
    dep, ids, ups = _sketch_round_to_agree(k=8, dim=32, n=3)
    c0, c1 = dep.s0.seal_commit(), dep.s1.seal_commit()
    old = {"seal0": dep.s0.seal(c1), "seal1": dep.s1.seal(c0)}
    for cid in ids:
        up = dep.clients[cid].sketch_commit(**old)
        dep.s0.receive(up.to_s0)
        dep.s1.receive(up.to_s1)
    assert dep.clients[ids[0]].finish_round(dep.s0.aggregate(), dep.s1.aggregate(), **old).n_participants == 3
    _finish(dep, old)
    _upload_all(dep, ups, rnd=2)
    dep.s0.agree(dep.s1.participants())
    dep.s1.agree(dep.s0.participants())
    for server, stale in ((dep.s0, c1), (dep.s1, c0)):
        with pytest.raises(ReplayError, match="round 1"):
            server.seal(stale)
    fresh0 = dep.s0.seal(dep.s1.seal_commit())
    for seals in (old, {"seal0": fresh0, "seal1": old["seal1"]}):
        with pytest.raises(ReplayError, match="round 1"):
            dep.clients[ids[1]].sketch_commit(**seals)
    # a refused seal does not use up the client's one commitment of the round (before: it did, so one
    # stale seal shut the client out and the round ended without an aggregate)
    fresh1 = dep.s1.seal(dep.s0.seal_commit())
    for cid in ids:
        up = dep.clients[cid].sketch_commit(seal0=fresh0, seal1=fresh1)
        dep.s0.receive(up.to_s0)
        dep.s1.receive(up.to_s1)
    res = dep.clients[ids[1]].finish_round(dep.s0.aggregate(), dep.s1.aggregate(), seal0=fresh0, seal1=fresh1)
    q = dep.config.quantizer
    np.testing.assert_array_equal(res.sum_codes, sum(q.quantize(ups[c]).astype(np.int64) for c in ids))


def test_read_requests_signed_by_a_revoked_key_are_refused():
    """After a revocation, the revoked key's signed REQUEST no longer reads aggregates or counts."""
    dep, ids, ups = _new(4)
    dep.run_round(ups)
    node = ServerNode(dep.s1)
    revoked = dep.clients[ids[3]].key
    assert node.Aggregate(read_request("Aggregate", dep.session, 1, revoked))
    dep.remove_clients([ids[3]])
    for method in ("Aggregate", "Count", "Seal"):
        with pytest.raises(NotEnrolledError):
            getattr(node, method)(read_request(method, dep.session, 1, revoked))
    assert node.Aggregate(read_request("Aggregate", dep.session, 1, dep.clients[ids[0]].key))

# --- agreement race -------------------------------------------------------------------------------
def test_upload_landing_during_agreement_is_refused_and_the_round_completes():
    """An upload that reaches S0 after its snapshot and S1 before S1's agree no longer splits the sets."""
    dep, ids, ups = _new(5)
    a0, a1 = dep.s0.announce(1, dep.s0.head_), dep.s1.announce(1, dep.s1.head_)
    sent = {}
    for cid in ids:
        dep.clients[cid].begin_round(a0, a1)
        sent[cid] = dep.clients[cid].upload(ups[cid])
    for cid in ids[:4]:
        dep.s0.receive(sent[cid].to_s0)
        dep.s1.receive(sent[cid].to_s1)
    p0 = dep.s0.participants()              # S0 snapshots and closes atomically
    late = sent[ids[4]]
    with pytest.raises(RoundClosedError):
        dep.s0.receive(late.to_s0)
    dep.s1.receive(late.to_s1)              # S1 is still open: the late upload lands there
    p1 = dep.s1.participants()
    dep.s1.agree(p0)
    dep.s0.agree(p1)
    agg0, agg1 = dep.s0.aggregate(), dep.s1.aggregate()
    q = dep.config.quantizer
    for cid in ids[:4]:
        res = dep.clients[cid].finish_round(agg0, agg1)
        assert res.n_participants == 4
        np.testing.assert_array_equal(res.sum_codes, sum(q.quantize(ups[c]).astype(np.int64) for c in ids[:4]))
    with pytest.raises(ExcludedError):
        dep.clients[ids[4]].finish_round(agg0, agg1)


# --- model inconsistency --------------------------------------------------------------------------
def test_right_digest_wrong_weights_is_detected_by_the_client():
    """attack_mia.py [c]: S0 announces the good digest to everyone but hands the victim crafted weights."""
    good, evil = np.linspace(-1, 1, DIM), np.zeros(DIM)
    dep = InProcessDeployment(config=JanusConfig(dim=DIM, initial_model=model_digest(good)), model=good)
    ids = dep.add_clients(5)
    ups = random_updates(DIM, ids, random_state=3)
    report = dep.run_round(ups, received_models={ids[0]: evil})
    assert isinstance(report.errors[ids[0]], ModelInconsistencyError) and set(report.errors) == {ids[0]}
    assert all(r.n_participants == 4 and r.included for r in report.results.values())
    assert ids[0] not in dep.s0.participants_  # the victim trained on nothing and uploaded nothing


# --- restarts -------------------------------------------------------------------------------------
@pytest.mark.parametrize("mode", ["exact", "sketch"])
def test_restarted_s1_reserves_its_aggregate_and_restarted_s0_marks_an_open_round_failed(tmp_path, mode):
    """s1_die_after_agree.py / net_restart.py on the node objects with their state directories."""
    dep = InProcessDeployment(config=JanusConfig(dim=DIM, mode=mode), state_dir=tmp_path)
    ids = dep.add_clients(3)
    ups = random_updates(DIM, ids, random_state=4)
    _upload_all(dep, ups)
    dep.s0.agree(dep.s1.participants())
    dep.s1.agree(dep.s0.participants())
    seals = {}
    if mode == "sketch":
        c0 = dep.s0.seal_commit()
        seals = {"seal1": dep.s1.seal(c0), "seal0": dep.s0.seal(dep.s1.seal_commit())}
        for cid in ids:
            up = dep.clients[cid].sketch_commit(**seals)
            dep.s0.receive(up.to_s0)
            dep.s1.receive(up.to_s1)
    before = dep.s1.aggregate()
    # S1 restarts after agreement: the node rebuilds and serves the same signed aggregate
    s1 = MaskServer(config=dep.config, keys=dep.keys1, session=dep.session, peer=dep.keys0.sign.public,
                    state_dir=tmp_path / "s1")
    node1 = ServerNode(s1)
    req = read_request("Aggregate", dep.session, 1, dep.clients[ids[0]].key)
    assert node1.Aggregate(req) == before
    if mode == "sketch":
        assert node1.Seal(read_request("Seal", dep.session, 1, dep.clients[ids[0]].key)) == seals["seal1"]
    res = dep.clients[ids[0]].finish_round(dep.s0.aggregate(), node1.Aggregate(req), **seals)
    assert res.n_participants == 3
    # S0 restarts while round 2 is open: the round is listed as failed, clients get RoundFailedError
    assert dep.s0.advance(before, peer_seal=seals.get("seal1"))
    dep.s0.announce(2, dep.s0.head_)
    s0 = AggregationServer(config=dep.config, keys=dep.keys0, session=dep.session, peer=dep.keys1.sign.public,
                           state_dir=tmp_path / "s0")
    node0 = ServerNode(s0)
    assert s0.round_ == 2 and node0.failed == {2}
    with pytest.raises(RoundFailedError):
        node0.Aggregate(read_request("Aggregate", dep.session, 2, dep.clients[ids[0]].key))


class _Local:
    """S1's node as S0's peer, in process (``call`` dispatches to the RPC handler, as gRPC would)."""

    def __init__(self, node, fail=None):
        self.node, self.fail = node, fail

    def call(self, method, payload=b""):
        if self.fail is not None:
            return self.fail(method, payload)
        return getattr(self.node, method)(payload)


@pytest.mark.parametrize("case", ["resumed", "resumed, s1 had sealed", "s1 unreachable", "forged s1 commitment",
                                  "no sketch commitments"])
def test_sketch_s0_restarted_between_agree_and_seal_resumes_or_marks_the_round_failed(tmp_path, case):
    """S0 logged its agreement, then stopped before the seal exchange. Before, the restarted S0 left that
    round neither finished nor failed (clients polled Seal until they timed out). Now ``resume`` (run by
    ``coordinate``) repeats the seal exchange and the round completes; if S1 is unreachable or answers
    with a commitment S0 refuses, or the sketch commitments never come, the round is listed failed."""
    import threading

    from janus_sa.errors import NotReadyError, ServerUnavailableError

    dep = InProcessDeployment(config=JanusConfig(dim=DIM, mode="sketch"), state_dir=tmp_path)
    ids = dep.add_clients(3)
    ups = random_updates(DIM, ids, random_state=6)
    _upload_all(dep, ups)
    node1 = ServerNode(dep.s1)
    dep.s0.agree(node1.Agree(dep.s0.participants()))  # logged; S0 stops here, before SealCommit
    if case == "resumed, s1 had sealed":  # S0 stopped after sending its commitment, before S1's answer
        node1.SealCommit(dep.s0.seal_commit())
    s0 = AggregationServer(config=dep.config, keys=dep.keys0, session=dep.session, peer=dep.keys1.sign.public,
                           state_dir=tmp_path / "s0")
    fail = None
    if case == "s1 unreachable":
        def fail(method, payload):
            raise ServerUnavailableError("127.0.0.1:1: UNAVAILABLE")
    elif case == "forged s1 commitment":  # S1's key, but a commitment for another participant set
        def fail(method, payload):
            return encode(MsgType.SEAL_COMMIT, dep.session, 1, {"participants_digest": bytes(32), "n": 3,
                                                                "commitment": bytes(32)}, dep.keys1.sign)
    node0 = ServerNode(s0, peer=_Local(node1, fail))
    req = {c: read_request("Seal", dep.session, 1, dep.clients[c].key) for c in ids}
    assert s0.participants_ is not None and 1 not in node0.failed  # agreed, unsealed, not yet failed
    with pytest.raises(NotReadyError):
        node0.Seal(req[ids[0]])
    out = []
    worker = threading.Thread(target=lambda: out.append(node0.resume(timeout=20 if case.startswith("resumed") else 0.5)))
    worker.start()
    if case.startswith("resumed"):
        for _ in range(200):
            try:
                seals = {"seal0": node0.Seal(req[ids[0]]), "seal1": node1.Seal(req[ids[0]])}
                break
            except NotReadyError:
                threading.Event().wait(0.05)
        for cid in ids:
            up = dep.clients[cid].sketch_commit(**seals)
            node0.Submit(up.to_s0)
            node1.Submit(up.to_s1)
    worker.join(30)
    agg = {c: read_request("Aggregate", dep.session, 1, dep.clients[c].key) for c in ids}
    if not case.startswith("resumed"):
        assert out == [False] and node0.failed == {1}
        with pytest.raises(RoundFailedError):
            node0.Aggregate(agg[ids[0]])
        with pytest.raises(RoundFailedError):
            node0.Seal(req[ids[0]])
        return
    assert out == [True] and not node0.failed
    q = dep.config.quantizer
    for cid in ids:
        res = dep.clients[cid].finish_round(node0.Aggregate(agg[cid]), node1.Aggregate(agg[cid]), **seals)
        np.testing.assert_array_equal(res.sum_codes, sum(q.quantize(ups[c]).astype(np.int64) for c in ids))
    assert node0.resume() is False  # nothing left to resume


# --- malicious clients ----------------------------------------------------------------------------
@pytest.mark.parametrize("role", [0, 1])
def test_client_with_inconsistent_commitments_is_excluded_and_the_round_completes(role):
    """attacks_clients.py: one client commits to x towards one server and to x + e_3 towards the other.

    Before, every client rejected the round (0/5 accepted, a server blamed). The servers now compare
    Com(x_i; r_i + s_i) computed from each side and drop the client; the others verify the right sum.
    """
    dep, ids, ups = _new(5)
    a0, a1 = dep.s0.announce(1, dep.s0.head_), dep.s1.announce(1, dep.s1.head_)
    cheat = ids[0]
    for cid in ids:
        c = dep.clients[cid]
        c.begin_round(a0, a1)
        up = c.upload(ups[cid])
        to0, to1 = up.to_s0, up.to_s1
        if cid == cheat:
            msg = decode(to0 if role == 0 else to1, max_bytes=10**6)
            shift = crypto.point_mul(2 ** (33 * 3), crypto.generators(1)[0])  # + 1 on coordinate 3
            forged = encode(msg.type, dep.session, 1, {**msg.body, "commitment": crypto.point_add(
                msg.body["commitment"], shift)}, c.key)
            to0, to1 = (forged, to1) if role == 0 else (to0, forged)
        dep.s0.receive(to0)
        dep.s1.receive(to1)
    dep.s0.agree(dep.s1.participants())
    dep.s1.agree(dep.s0.participants())
    assert dep.s0.inconsistent_ == dep.s1.inconsistent_ == (cheat,)
    agg0, agg1 = dep.s0.aggregate(), dep.s1.aggregate()
    q = dep.config.quantizer
    for cid in ids[1:]:
        res = dep.clients[cid].finish_round(agg0, agg1)
        assert res.n_participants == 4
        np.testing.assert_array_equal(res.sum_codes, sum(q.quantize(ups[c]).astype(np.int64) for c in ids[1:]))
    with pytest.raises(ExcludedError):
        dep.clients[cheat].finish_round(agg0, agg1)


def _shift_masked(data, key, coord=0, by=1):
    """Re-sign an UPLOAD0 whose masked vector carries ``x + by * e_coord`` (the commitments are unchanged)."""
    m = decode(data, max_bytes=10**6)
    if m.body["commitment"]:  # exact mode: packed scalars, 7 codes of 33-bit slots per scalar
        sc = crypto.words_to_scalars(m.body["masked"])
        width, slots = crypto.slot_layout(32)
        sc[coord // slots] = (sc[coord // slots] + (by << (width * (coord % slots)))) % crypto.GROUP_ORDER
        masked = crypto.scalars_to_words(sc)
    else:  # sketch mode: codes mod M
        masked = m.body["masked"].copy()
        masked[coord] += np.uint32(by)
    return encode(m.type, m.session, m.round, {**m.body, "masked": masked}, key)


def _shift_commitment(data, key, coord=3):
    m = decode(data, max_bytes=10**6)
    shift = crypto.point_mul(2 ** (33 * (coord % 7)), crypto.generators(1 + coord // 7)[coord // 7])
    return encode(m.type, m.session, m.round, {**m.body, "commitment": crypto.point_add(m.body["commitment"], shift)},
                  key)


def _cheating_client(client, tamper):
    """Turn ``client`` into one whose uploads go through ``tamper(upload, key) -> Upload``."""
    from janus_sa.protocol import Upload

    class Cheat(type(client)):
        def upload(self, update):
            return Upload(*tamper(super().upload(update), self.key))

    client.__class__ = Cheat
    return client


# y + 1 under honest commitments; honest y under commitments both shifted by e_3 (consistent with each
# other, so the earlier C_i-versus-C'_i check passed them); y + e_3 together with both commitments shifted
# (a consistent client whose input is x + e_3: included, and its +1 lands in the sum)
CHEATS = {"y+1": (lambda up, k: (_shift_masked(up.to_s0, k), up.to_s1), None),
          "commitments+e3": (lambda up, k: (_shift_commitment(up.to_s0, k), _shift_commitment(up.to_s1, k)), None),
          "consistent x+e3": (lambda up, k: (_shift_commitment(_shift_masked(up.to_s0, k, coord=3), k),
                                             _shift_commitment(up.to_s1, k)), 3)}


@pytest.mark.parametrize("kind", list(CHEATS))
def test_client_whose_masked_vector_contradicts_its_commitments_is_excluded(kind):
    """attacks_clients.py, y + 1: before, every client rejected the round (AggregateMismatchError, 0/4).

    Each server checks the client's packed masked vector ``y_i`` (S0) or pad ``k_i`` (S1) against the
    commitments; the cheater is excluded by both, named in every RoundResult, and gets ExcludedError with
    checkable evidence; the others verify exactly the sum of their own codes.
    """
    tamper, extra = CHEATS[kind]
    dep, ids, ups = _new(5)
    cheat = ids[0]
    _cheating_client(dep.clients[cheat], tamper)
    report = dep.run_round(ups)
    q = dep.config.quantizer
    honest = sum(q.quantize(ups[c]).astype(np.int64) for c in ids[1:])
    if extra is not None:  # consistent: not a cheat, counted with its shifted input
        assert set(report.results) == set(ids) and not report.errors and dep.s0.inconsistent_ == ()
        want = honest + q.quantize(ups[cheat]).astype(np.int64)
        want[extra] += 1
        np.testing.assert_array_equal(report.results[ids[1]].sum_codes, want)
        return
    assert dep.s0.inconsistent_ == dep.s1.inconsistent_ == (cheat,)
    assert set(report.results) == set(ids[1:]) and set(report.errors) == {cheat}
    for cid in ids[1:]:
        res = report.results[cid]
        assert res.n_participants == 4 and res.included and res.excluded == {cheat: "inconsistent upload"}
        np.testing.assert_array_equal(res.sum_codes, honest)
    err = report.errors[cheat]
    assert isinstance(err, ExcludedError) and err.reason == "inconsistent upload"
    assert check_exclusion(err.aggregate0, err.aggregate1, client=cheat, s0=dep.keys0.public, s1=dep.keys1.public, session=dep.session) == \
        (1, tuple(sorted(ids[1:])))
    # evidence whose two aggregates give different reasons is refused
    from janus_sa.errors import ParticipantSetMismatchError


    lie = encode(MsgType.AGGREGATE0, dep.session, 1, {**decode(err.aggregate0, max_bytes=10**6).body,
                                                      "reasons": b"\x02"}, dep.keys0.sign)
    with pytest.raises(ParticipantSetMismatchError, match="excluded"):
        check_exclusion(lie, err.aggregate1, client=cheat, s0=dep.keys0.public, s1=dep.keys1.public,
                        session=dep.session)
    # the points each server received for an honest client are the ones it computes itself: nothing new
    for cid in ids[1:]:
        assert dep.s0._check_value(cid) == dep.s1._check_value(cid)


def test_excluded_cheaters_do_not_stop_the_round_until_fewer_than_t_remain():
    """Two cheaters among five: excluded, the three others (t = 3) complete; three cheaters: no round."""
    dep, ids, ups = _new(5)
    for c in ids[:2]:
        _cheating_client(dep.clients[c], CHEATS["y+1"][0])
    report = dep.run_round(ups)
    assert set(report.results) == set(ids[2:])
    assert report.results[ids[2]].excluded == dict.fromkeys(ids[:2], "inconsistent upload")
    _cheating_client(dep.clients[ids[2]], CHEATS["y+1"][0])
    with pytest.raises(TooFewParticipantsError):
        dep.run_round(ups)


@pytest.mark.parametrize("role", [0, 1])
def test_server_lying_in_the_consistency_check_only_excludes_the_victim_who_holds_the_evidence(role):
    """A malicious server sends a wrong consistency pair for an honest victim. Both servers drop the
    victim (the same power as claiming non-receipt); the victim gets ExcludedError with both signed
    aggregates, the others verify their exact sum. The liar learns nothing from the honest server's pair."""
    dep, ids, ups = _new(5)
    victim = ids[0]
    base = AggregationServer if role == 0 else MaskServer

    class Liar(base):
        def _check_value(self, cid):
            real = super()._check_value(cid)
            return crypto.point_add(real[:32], crypto.H) + real[32:] if cid == victim else real

    _swap(dep, role, Liar)
    report = dep.run_round(ups)
    assert isinstance(report.errors[victim], ExcludedError) and set(report.errors) == {victim}
    q = dep.config.quantizer
    for cid in ids[1:]:
        assert report.results[cid].excluded == {victim: "inconsistent upload"}
        np.testing.assert_array_equal(report.results[cid].sum_codes,
                                      sum(q.quantize(ups[c]).astype(np.int64) for c in ids[1:]))


def test_consistency_points_of_the_wrong_width_are_refused():
    """A peer list with one point per client (the earlier format) or a truncated pair: MalformedMessageError."""
    from janus_sa.errors import MalformedMessageError

    dep, ids, ups = _new(4)
    _upload_all(dep, ups)
    for width in (32, 63):
        bad = encode(MsgType.PARTICIPANTS, dep.session, 1,
                     {"ids": sorted(ids), "checks": b"".join(dep.s0._check_value(c)[:width] for c in sorted(ids))},
                     dep.keys0.sign)
        with pytest.raises(MalformedMessageError, match="checks"):
            dep.s1.agree(bad)
    assert dep.s1.participants_ is None  # nothing was fixed by the refused lists
    assert len(dep.s1.agree(dep.s0.participants())) == 4


def test_malformed_masked_vectors_and_excluded_lists_are_refused():
    """New fields, malicious variants: a non-canonical scalar in a masked upload (S0 refuses it); aggregates
    whose excluded lists differ, overlap the participants, or lack reasons; a non-canonical mask sum."""
    from janus_sa.errors import MalformedMessageError, ParticipantSetMismatchError

    dep, ids, ups = _new(4)
    a0, a1 = dep.s0.announce(1, dep.s0.head_), dep.s1.announce(1, dep.s1.head_)
    for cid in ids:
        c = dep.clients[cid]
        c.begin_round(a0, a1)
        up = c.upload(ups[cid])
        if cid == ids[0]:
            m = decode(up.to_s0, max_bytes=10**6)
            bad = m.body["masked"].copy()
            bad[:8] = 0xFFFFFFFF  # 2**256 - 1: above the group order
            with pytest.raises(MalformedMessageError, match="group order"):
                dep.s0.receive(encode(m.type, dep.session, 1, {**m.body, "masked": bad}, c.key))
        dep.s0.receive(up.to_s0)
        dep.s1.receive(up.to_s1)
    dep.s0.agree(dep.s1.participants())
    dep.s1.agree(dep.s0.participants())
    agg0, agg1 = dep.s0.aggregate(), dep.s1.aggregate()
    body = decode(agg0, max_bytes=10**6).body
    outsider = crypto.SigningKey().public

    def forged(**kw):
        return encode(MsgType.AGGREGATE0, dep.session, 1, {**body, **kw}, dep.keys0.sign)

    client = dep.clients[ids[1]]
    value = body["value"].copy()
    value[8:16] = 0xFFFFFFFF
    cases = [(forged(excluded=[outsider], reasons=b"\x01"), ParticipantSetMismatchError),  # S1 names none
             (forged(value=value), MalformedMessageError)]
    for data, err in cases:
        with pytest.raises(err):
            client.finish_round(data, agg1)
    both = [(dict(excluded=[ids[2]], reasons=b"\x01"), ParticipantSetMismatchError),  # also a participant
            (dict(excluded=[outsider], reasons=b""), MalformedMessageError),
            (dict(excluded=[outsider], reasons=b"\x07"), MalformedMessageError)]
    b1 = decode(agg1, max_bytes=10**6).body
    for kw, err in both:
        g1 = encode(MsgType.AGGREGATE1, dep.session, 1, {**b1, **kw}, dep.keys1.sign)
        with pytest.raises(err):
            client.finish_round(forged(**kw), g1)
    assert client.finish_round(agg0, agg1).excluded == {}


def test_documented_gaps_sketch_mode_masked_vector_and_out_of_range_codes():
    """The threat model's open gaps, pinned: (1) in sketch mode the commitment comes after the challenge
    and commits to projections, which no server can relate to its share, so a client uploading y_i + 1
    is not identified and every client rejects the round; (2) without a range proof a client can commit
    to codes outside [0, Q): every verifier refuses a sum above n (Q - 1) on any coordinate (here codes
    shifted by 2**31), but a shift that keeps the sum within that bound verifies and leaves error_bound."""
    from janus_sa.errors import AggregateMismatchError, AggregateRangeError

    dep, ids, ups = _new(4, mode="sketch")
    _cheating_client(dep.clients[ids[0]], CHEATS["y+1"][0])
    report = dep.run_round(ups)
    assert not report.results and all(isinstance(report.errors[c], AggregateMismatchError) for c in ids)

    for mode in ("exact", "sketch"):
        for code, refused in ((2**31, True), (2 * (2**22 - 1), False)):
            class Shifted(Quantizer):  # same parameters (same config digest), every code set past Q
                def quantize(self, x, code=code):
                    return np.full(np.shape(x), code, dtype=np.uint32)

            dep, ids, ups = _new(4, mode=mode)
            bad = dep.clients[ids[0]]
            object.__setattr__(bad, "config", JanusConfig(dim=DIM, mode=mode, quantizer=Shifted()))
            assert bad.config.digest == dep.config.digest
            report = dep.run_round(ups)
            if refused:
                assert not report.results and all(isinstance(e, AggregateRangeError) for e in report.errors.values())
                continue
            res = report.results[ids[1]]
            honest = sum(np.clip(ups[c], -8, 8) for c in ids)
            assert res.n_participants == 4 and np.abs(res.sum - honest).max() > 10 * res.error_bound
            assert np.all(np.abs(res.mean) <= 8 + res.error_bound)  # the bound that holds: mean in [-c, c]


def test_shrink_by_s1_against_the_real_s0_coordinator():
    """The same attack from S1's side over gRPC: a malicious S1 service answers Agree with [victim].

    The real S0 refuses to agree, lists the round as failed and never publishes Y; clients get
    RoundFailedError, never an aggregate.
    """
    import threading

    cfg = JanusConfig(dim=DIM)
    session, k0, k1 = bytes(range(16)), ServerKeys(), ServerKeys()
    evil = _shrinking(MaskServer)(config=cfg, keys=k1, session=session, peer=k0.sign.public)
    node1 = ServerNode(evil)
    g1, p1 = start_server(node1, "127.0.0.1:0")
    node0 = ServerNode(make_server("s0", config=cfg, keys=k0, session=session, peer_sign=k1.sign.public),
                       peer=Remote(f"127.0.0.1:{p1}", max_bytes=2**20))
    g0, p0 = start_server(node0, "127.0.0.1:0")
    jcs = [JanusClient(config=cfg, s0=k0.public, s1=k1.public, session=session) for _ in range(4)]
    roster = enroll([c.id for c in jcs], version=1, s0=node0.server, s1=evil)
    evil.keep = (jcs[0].id,)
    done = []
    coord = threading.Thread(target=lambda: done.extend(node0.coordinate(rounds=1, expect=4, round_timeout=20,
                                                                          settle=0.5, gap=0)))
    nets = []
    try:
        coord.start()
        errors = [None] * 4

        def run(i):
            jcs[i].set_roster(roster)
            net = NetworkClient(jcs[i], s0=f"127.0.0.1:{p0}", s1=f"127.0.0.1:{p1}", timeout=5)
            nets.append(net)
            net.wait_for_round(0, timeout=20)
            try:
                net.participate(np.full(DIM, 0.5 * i), timeout=20)
            except JanusError as err:
                errors[i] = err

        threads = [threading.Thread(target=run, args=(i,)) for i in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(60)
        coord.join(30)
        assert done == [] and node0.failed == {1}
        assert node0.server.participants_ is None and 1 not in node0.finished  # Y is never published
        assert all(isinstance(e, RoundFailedError) for e in errors), errors
    finally:
        for net in nets:
            net.close()
        g0.stop(0)
        g1.stop(0)


@pytest.mark.parametrize("role", [0, 1])
def test_client_framed_as_inconsistent_learns_which_server_lied(role):
    """A lying server sends a wrong consistency pair for an honest victim, so both servers sign
    "inconsistent upload" against it. Both aggregates carry the two pairs the servers compared; the
    victim recomputes both pairs from its own secrets and names the liar (``ExcludedError.blamed``).
    The pairs reveal nothing to other clients: for the honest victim they are the points each server
    computes itself (uniform, blinded by r_i and s_i). Aggregates that list different pairs are refused."""
    from janus_sa.errors import ParticipantSetMismatchError


    dep, ids, ups = _new(5)
    victim = ids[0]
    base = AggregationServer if role == 0 else MaskServer

    class Liar(base):
        def _check_value(self, cid):
            real = super()._check_value(cid)
            return crypto.point_add(real[:32], crypto.H) + real[32:] if cid == victim else real

    _swap(dep, role, Liar)
    report = dep.run_round(ups)
    err = report.errors[victim]
    assert isinstance(err, ExcludedError) and err.reason == "inconsistent upload"
    assert err.blamed == (f"S{role}",)
    a0, a1 = (decode(a, max_bytes=10**6) for a in (err.aggregate0, err.aggregate1))
    assert a0.body["checks"] == a1.body["checks"] and len(a0.body["checks"]) == 128
    honest = dep.s1 if role == 0 else dep.s0
    pair0, pair1 = a0.body["checks"][:64], a0.body["checks"][64:]
    assert (pair1 if role == 0 else pair0) == honest._check_value(victim)  # the honest server's own pair
    # one server listing other pairs than the peer: the aggregates disagree and no client accepts them
    forged = encode(MsgType.AGGREGATE0, dep.session, 1, {**a0.body, "checks": pair1 + pair1}, dep.keys0.sign)
    with pytest.raises(ParticipantSetMismatchError, match="pairs"):
        check_exclusion(forged, err.aggregate1, client=victim, s0=dep.keys0.public, s1=dep.keys1.public,
                        session=dep.session)
    with pytest.raises(ParticipantSetMismatchError):
        dep.clients[ids[1]].finish_round(forged, err.aggregate1)


def test_genuine_cheater_is_not_blamed_on_a_server_by_honest_clients_and_no_pairs_for_reason_2():
    """A y_i + 1 client: both honest servers list the same pairs, which differ from each other (the
    cheat); a client dropped because it reached S0 only has no pairs (nothing was compared)."""
    dep, ids, ups = _new(5)
    _cheating_client(dep.clients[ids[0]], CHEATS["y+1"][0])
    report = dep.run_round(ups, drop_before_s1=[ids[1]])
    a0 = decode(report.errors[ids[0]].aggregate0, max_bytes=10**6)
    assert a0.body["reasons"] == (b"\x01\x02" if ids[0] < ids[1] else b"\x02\x01")
    pairs = a0.body["checks"]
    assert len(pairs) == 128 and pairs[:64] == dep.s0._check_value(ids[0]) and pairs[64:] == dep.s1._check_value(ids[0])
    assert report.errors[ids[1]].blamed == ()


def test_client_copying_anothers_masked_vector_and_commitments_is_excluded_not_the_victim():
    """A malicious client uploads, under its own key, the victim's masked vector and commitments (the
    victim's seed ciphertexts are bound to the victim's id: S1 cannot open them for another sender).
    With its own pad the copy fails the check: the copier is excluded, the victim counted."""
    from janus_sa.errors import DecryptionError
    from janus_sa.protocol import Upload

    dep, ids, ups = _new(5)
    victim, copier = ids[0], ids[1]
    a0, a1 = dep.s0.announce(1, dep.s0.head_), dep.s1.announce(1, dep.s1.head_)
    sent = {}
    for cid in ids:
        c = dep.clients[cid]
        c.begin_round(a0, a1)
        up = c.upload(ups[cid])
        if cid == copier:
            v0, v1 = (decode(m, max_bytes=10**6) for m in (sent[victim].to_s0, sent[victim].to_s1))
            m0, m1 = (decode(m, max_bytes=10**6) for m in (up.to_s0, up.to_s1))
            with pytest.raises(DecryptionError):
                dep.s1.receive(encode(m1.type, dep.session, 1, {**m1.body, "seed_ct": v1.body["seed_ct"]}, c.key))
            up = Upload(encode(m0.type, dep.session, 1, {**m0.body, "masked": v0.body["masked"],
                                                         "commitment": v0.body["commitment"]}, c.key),
                        encode(m1.type, dep.session, 1, {**m1.body, "commitment": v1.body["commitment"]}, c.key))
        sent[cid] = up
        dep.s0.receive(up.to_s0)
        dep.s1.receive(up.to_s1)
    dep.s0.agree(dep.s1.participants())
    dep.s1.agree(dep.s0.participants())
    assert dep.s0.inconsistent_ == dep.s1.inconsistent_ == (copier,)
    agg0, agg1 = dep.s0.aggregate(), dep.s1.aggregate()
    res = dep.clients[victim].finish_round(agg0, agg1)
    q = dep.config.quantizer
    assert res.included and res.n_participants == 4 and res.excluded == {copier: "inconsistent upload"}
    np.testing.assert_array_equal(res.sum_codes, sum(q.quantize(ups[c]).astype(np.int64) for c in ids if c != copier))


@pytest.mark.parametrize("role", [0, 1])
def test_keys_outside_the_roster_are_never_signed_as_excluded(role):
    """A malicious server lists keys nobody enrolled in its PARTICIPANTS. Before, the honest server put
    them in its signed excluded list ("reached one server only") and clients accepted the round with
    them in ``RoundResult.excluded``, so one server could make the other sign claims about arbitrary keys
    (and grow every aggregate past the clients' size limit). The honest server now names only roster
    members, and a client refuses aggregates that name an excluded key outside the roster."""
    from janus_sa.errors import ParticipantSetMismatchError

    dep, ids, ups = _new(4)
    _upload_all(dep, ups)
    outsiders = sorted(crypto.SigningKey().public for _ in range(3))
    liar, honest = (dep.s0, dep.s1) if role == 0 else (dep.s1, dep.s0)
    ids_ = sorted(set(ids) | set(outsiders))
    own = liar._checks()
    fake = encode(MsgType.PARTICIPANTS, dep.session, 1,
                  {"ids": ids_, "checks": b"".join(own.get(c, bytes(64)) for c in ids_)}, liar.keys.sign)
    honest.agree(fake)
    liar.agree(honest.participants())
    assert honest.excluded_ == ()
    res = dep.clients[ids[0]].finish_round(dep.s0.aggregate(), dep.s1.aggregate())
    assert res.n_participants == 4 and res.excluded == {}
    # both servers signing an outsider as excluded: the client refuses the aggregates
    b0, b1 = (decode(a, max_bytes=10**6).body for a in (dep.s0.aggregate(), dep.s1.aggregate()))
    g0 = encode(MsgType.AGGREGATE0, dep.session, 1, {**b0, "excluded": outsiders[:1], "reasons": b"\x02"},
                dep.keys0.sign)
    g1 = encode(MsgType.AGGREGATE1, dep.session, 1, {**b1, "excluded": outsiders[:1], "reasons": b"\x02"},
                dep.keys1.sign)
    with pytest.raises(ParticipantSetMismatchError, match="roster"):
        dep.clients[ids[1]].finish_round(g0, g1)


def test_documented_gap_a_negative_code_passes_the_consistency_check():
    """The out-of-range gap includes negative codes: a client whose packed scalar carries -5 on coordinate
    0 (commitments and masked vector consistent with it) is not excluded, every client verifies, and the
    sum has -5 in place of its code there (within the aggregate range every client checks). Only a range
    proof would catch it (README, threat model)."""
    class Negative(JanusClient):
        def upload(self, update):
            pack = crypto.pack

            def minus_five(values, bits):
                out = pack(values, bits)
                out[0] = (out[0] - int(values[0]) - 5) % crypto.GROUP_ORDER
                return out

            crypto.pack = minus_five
            try:
                return super().upload(update)
            finally:
                crypto.pack = pack

    dep, ids, ups = _new(5)
    dep.clients[ids[0]].__class__ = Negative
    report = dep.run_round(ups)
    q = dep.config.quantizer
    want = sum(q.quantize(ups[c]).astype(np.int64) for c in ids)
    want[0] -= q.quantize(ups[ids[0]])[0] + 5  # its code 0 replaced by -5, the rest counted as uploaded
    assert set(report.results) == set(ids) and dep.s0.inconsistent_ == ()
    np.testing.assert_array_equal(report.results[ids[1]].sum_codes, want)


def test_sketch_s0_restarted_from_a_stale_state_dir_does_not_reopen_an_old_round(tmp_path):
    """S0 restarted from a copy of its state_dir taken in round 1 (agreed, unsealed) while S1 is already
    agreed in round 2: ``resume`` lists round 1 failed, publishes no seal or aggregate for it, and leaves
    S1's round 2 untouched (S1 refuses the round-1 seal commitment as a replay)."""
    import shutil

    dep = InProcessDeployment(config=JanusConfig(dim=DIM, mode="sketch"), state_dir=tmp_path)
    ids = dep.add_clients(3)
    ups = random_updates(DIM, ids, random_state=6)
    _upload_all(dep, ups, rnd=1)
    node1 = ServerNode(dep.s1)
    dep.s0.agree(node1.Agree(dep.s0.participants()))
    shutil.copytree(tmp_path / "s0", tmp_path / "stale")
    _upload_all(dep, ups, rnd=2)
    dep.s0.agree(node1.Agree(dep.s0.participants()))
    s0 = AggregationServer(config=dep.config, keys=dep.keys0, session=dep.session, peer=dep.keys1.sign.public,
                           state_dir=tmp_path / "stale")
    node0 = ServerNode(s0, peer=_Local(node1))
    assert s0.round_ == 1 and s0.participants_ is not None
    assert node0.resume(timeout=0.5) is False and node0.failed == {1} and not node0.finished
    assert dep.s1.round_ == 2 and dep.s1._peer_seal_commit is None and not node1.finished.get(2)
    with pytest.raises(RoundFailedError):
        node0.Seal(read_request("Seal", dep.session, 1, dep.clients[ids[0]].key))
