"""Smaller holes: forgeable roster keys, phantom exclusion evidence, upload replay after a restart,
plaintext gRPC off loopback, the default threshold, and the sketch-mode cheater in the servers' view."""

import numpy as np
import pytest

from janus_sa import InProcessDeployment, JanusConfig, MaskServer, SigningKey
from janus_sa.crypto import SMALL_ORDER_Y, _has_small_order, is_weak_ed25519_key
from janus_sa.deploy import _is_loopback
from janus_sa.deploy import main as deploy_main
from janus_sa.errors import (
    AggregateMismatchError,
    ConfigError,
    ReplayError,
    SignatureError,
    TooFewParticipantsError,
    VerificationError,
)
from janus_sa.protocol import Roster, Upload, check_exclusion
from janus_sa.simulation import random_updates
from janus_sa.wire import MsgType, decode, encode

P = 2**255 - 19


def test_identity_small_order_and_noncanonical_keys_are_refused():
    weak = [y.to_bytes(32, "little") for y in SMALL_ORDER_Y]
    weak += [(y | 1 << 255).to_bytes(32, "little") for y in SMALL_ORDER_Y]  # the other sign of x
    weak += [(P + 1).to_bytes(32, "little"), bytes([0xFF] * 31 + [0x7F])]  # y >= p: non-canonical
    assert all(_has_small_order(y) for y in SMALL_ORDER_Y)  # the list is what it claims
    assert all(map(is_weak_ed25519_key, weak))
    assert not any(is_weak_ed25519_key(SigningKey().public) for _ in range(200))
    dep = InProcessDeployment(config=JanusConfig(dim=4))
    ids = dep.add_clients(3)
    identity = (1).to_bytes(32, "little")
    with pytest.raises(ConfigError, match="small-order"):
        dep.s0.sign_roster([*ids, identity], version=2)
    # a roster both servers signed outside sign_roster is still refused by everyone who reads it
    members = sorted([*ids, identity])
    body = {"version": 2, "ids": members, "batches": np.arange(4, dtype=np.uint32)}
    r0 = encode(MsgType.ROSTER, dep.session, 0, body, dep.keys0.sign)
    r1 = encode(MsgType.ROSTER, dep.session, 0, body, dep.keys1.sign)
    with pytest.raises(SignatureError, match="small-order"):
        Roster.from_signed(r0, r1, s0=dep.keys0.sign.public, s1=dep.keys1.sign.public, session=dep.session)


def test_exclusion_evidence_for_a_key_that_never_uploaded_is_refused():
    dep = InProcessDeployment(config=JanusConfig(dim=4))
    ids = dep.add_clients(5)
    ups = random_updates(4, ids[:4])
    report = dep.run_round(ups, drop_before_s1=ids[:1])
    err = report.errors[ids[0]]
    keys = {"s0": dep.keys0.public, "s1": dep.keys1.public, "session": dep.session}
    assert check_exclusion(err.aggregate0, err.aggregate1, client=ids[0], **keys)[0] == 1
    for phantom in (SigningKey().public, ids[4]):  # never enrolled; enrolled but did not upload
        with pytest.raises(VerificationError, match="never uploaded"):
            check_exclusion(err.aggregate0, err.aggregate1, client=phantom, **keys)


def test_uploads_captured_before_a_stateless_s1_restart_are_refused():
    """A server that saw client-to-S1 traffic replays the uploads of round 1 into the same round number
    opened on an S1 restarted without --state-dir: the fresh per-start nonce refuses every one."""
    dep = InProcessDeployment(config=JanusConfig(dim=4))
    ids = dep.add_clients(4)
    a0, a1 = dep.s0.announce(1, dep.s0.head_), dep.s1.announce(1, dep.s1.head_)
    captured = []
    for c in dep.clients.values():
        c.begin_round(a0, a1)
        up = c.upload(np.full(4, 0.5))
        dep.s0.receive(up.to_s0)
        captured.append(up.to_s1)
    restarted = MaskServer(config=dep.config, keys=dep.keys1, session=dep.session, peer=dep.keys0.sign.public,
                           roster=dep.roster)
    restarted.announce(1, restarted.head_)
    assert restarted.start_nonce != dep.s1.start_nonce
    for data in captured:
        with pytest.raises(ReplayError, match="another announcement"):
            restarted.receive(data)
    assert not restarted.uploads_ and len(captured) == len(ids)


def test_plaintext_grpc_off_loopback_needs_an_explicit_flag(tmp_path):
    assert _is_loopback("127.0.0.1:7000") and _is_loopback("localhost:1") and _is_loopback("[::1]:7000")
    assert not _is_loopback("10.0.0.5:7000") and not _is_loopback("0.0.0.0:7000")
    for role in ("s0", "s1"):
        deploy_main(["keygen", "--role", role, "--out", str(tmp_path / role)])
    deploy_main(["keygen", "--role", "client", "--name", "c0", "--out", str(tmp_path / "c")])
    dep, roster = str(tmp_path / "deployment.json"), str(tmp_path / "roster.json")
    deploy_main(["bundle", "--s0", str(tmp_path / "s0" / "s0.pub.json"), "--s1", str(tmp_path / "s1" / "s1.pub.json"),
                 "--dim", "4", "--out", dep])
    with pytest.raises(SystemExit, match="not a loopback address"):
        deploy_main(["serve", "--role", "s1", "--deployment", dep, "--key", str(tmp_path / "s1" / "s1.key"),
                     "--roster", roster, "--host", "0.0.0.0"])
    with pytest.raises(SystemExit, match="insecure-plaintext"):
        deploy_main(["client", "--deployment", dep, "--key", str(tmp_path / "c" / "c0.key"), "--roster", roster,
                     "--s0", "10.0.0.5:7000", "--s1", "10.0.0.6:7001"])


def test_default_threshold_follows_n_and_the_declared_dropout_rate():
    cfg = JanusConfig(dim=4)
    assert [cfg.threshold_for(n) for n in (2, 3, 5, 10, 1000)] == [2, 3, 3, 5, 500]
    assert JanusConfig(dim=4, dropout_rate=0.1).threshold_for(100) == 90
    assert JanusConfig(dim=4, dropout_rate=0.1, n_expected=20).threshold_for(100) == 18
    assert JanusConfig(dim=4, min_participants=7).threshold_for(1000) == 7
    dep = InProcessDeployment(config=JanusConfig(dim=4))
    ids = dep.add_clients(10)  # t = 5: four uploads are too few
    with pytest.raises(TooFewParticipantsError, match="min_participants=5"):
        dep.run_round(random_updates(4, ids[:4]))


def test_sketch_mode_cheater_is_seen_by_both_servers_not_only_the_clients():
    """y_i + 1 in sketch mode still fails the round (no per-client check exists in that mode), but both
    servers check each other's aggregate before moving the model on: each records the mismatch and the
    model version stays, so no party treats the round as finished."""
    dep = InProcessDeployment(config=JanusConfig(dim=8, mode="sketch", sketch_k=8))
    ids = dep.add_clients(4)
    cheat = dep.clients[ids[0]]
    honest_upload = cheat.upload

    def plus_one(update):
        up = honest_upload(update)
        m = decode(up.to_s0, max_bytes=10**6)
        masked = m.body["masked"].copy()
        masked[0] += np.uint32(1)
        return Upload(encode(m.type, m.session, m.round, {**m.body, "masked": masked}, cheat.key), up.to_s1)

    cheat.upload = plus_one
    head = dep.s0.head_
    report = dep.run_round(random_updates(8, ids))
    assert not report.results and all(isinstance(e, AggregateMismatchError) for e in report.errors.values())
    assert set(report.server_errors) == {"S0", "S1"}
    assert all(isinstance(e, AggregateMismatchError) for e in report.server_errors.values())
    assert dep.s0.head_ == dep.s1.head_ == head  # the model did not move on


def test_bundle_binds_the_initial_model_file_and_load_model_checks_it(tmp_path):
    from janus_sa import model_digest
    from janus_sa.deploy import _config, load_model

    w0 = np.linspace(-1, 1, 4)
    np.save(tmp_path / "w0.npy", w0)
    for role in ("s0", "s1"):
        deploy_main(["keygen", "--role", role, "--out", str(tmp_path / role)])
    dep = tmp_path / "deployment.json"
    assert deploy_main(["bundle", "--s0", str(tmp_path / "s0" / "s0.pub.json"), "--s1",
                        str(tmp_path / "s1" / "s1.pub.json"), "--dim", "4", "--model", str(tmp_path / "w0.npy"),
                        "--batch-size", "2", "--learning-rate", "0.5", "--out", str(dep)]) == 0
    import json

    cfg = _config(json.loads(dep.read_text())["config"])
    assert cfg.initial_model == model_digest(w0) and cfg.batch_size == 2 and cfg.learning_rate == 0.5
    np.testing.assert_array_equal(load_model(tmp_path / "w0.npy", 4), w0)
    np.save(tmp_path / "bad.npy", np.zeros(5))
    with pytest.raises(ValueError, match="length 4"):
        load_model(tmp_path / "bad.npy", 4)
    np.save(tmp_path / "other.npy", w0 + 1e-12)
    with pytest.raises(SystemExit, match="digests differ"):
        load_model(tmp_path / "other.npy", 4, cfg)
    with pytest.raises(SystemExit, match="pass it with --model"):
        load_model(None, 4, cfg)


def test_enroll_command_keeps_the_batches_of_the_previous_roster_version(tmp_path):
    """With --batch-size 2, version 2 of the roster (two clients added) keeps every version-1 batch for
    both signers; planned from scratch, the sorted keys would be re-cut into new pairs and the serving
    servers would refuse the roster (or, worse, pair old clients differently)."""
    import json

    from janus_sa.deploy import load_roster

    for role in ("s0", "s1"):
        deploy_main(["keygen", "--role", role, "--out", str(tmp_path / role)])
    for i in range(8):
        assert deploy_main(["keygen", "--role", "client", "--name", f"c{i}", "--out", str(tmp_path / "c")]) == 0
    dep, roster = str(tmp_path / "deployment.json"), str(tmp_path / "roster.json")
    assert deploy_main(["bundle", "--s0", str(tmp_path / "s0" / "s0.pub.json"), "--s1",
                        str(tmp_path / "s1" / "s1.pub.json"), "--dim", "4", "--batch-size", "2", "--out", dep]) == 0
    pubs = [str(tmp_path / "c" / f"c{i}.pub.json") for i in range(8)]
    rosters = []
    for version, clients in ((1, pubs[:6]), (2, pubs)):
        for role in ("s0", "s1"):
            assert deploy_main(["enroll", "--role", role, "--key", str(tmp_path / role / f"{role}.key"),
                                "--deployment", dep, "--clients", *clients, "--version", str(version),
                                "--roster", roster]) == 0
        rosters.append(load_roster(roster, json.loads(open(dep).read())))
    v1, v2 = rosters
    assert v2.version == 2 and len(v2.members) == 8
    assert all(v2.batch_of[m] == b for m, b in v1.batch_of.items())
    assert sorted(len(g) for g in v2.batch_members.values()) == [2, 2, 2, 2]
