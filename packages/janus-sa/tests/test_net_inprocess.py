"""gRPC services in one process over 127.0.0.1, with TLS (self-signed certificate made here)."""

import datetime
import ipaddress
import threading

import numpy as np
import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

from janus_sa import JanusClient, JanusConfig, Quantizer, ServerKeys, SigningKey, enroll, model_digest
from janus_sa.errors import NotEnrolledError, ServerUnavailableError, SignatureError
from janus_sa.net import NetworkClient, Remote, ServerNode, TLSConfig, make_server, read_request, start_server
from janus_sa.wire import MsgType, encode


def _self_signed():
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "localhost")])
    now = datetime.datetime.now(datetime.timezone.utc)
    cert = (x509.CertificateBuilder().subject_name(name).issuer_name(name).public_key(key.public_key())
            .serial_number(x509.random_serial_number()).not_valid_before(now - datetime.timedelta(minutes=1))
            .not_valid_after(now + datetime.timedelta(hours=1))
            .add_extension(x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]),
                           critical=False)
            .sign(key, hashes.SHA256()))
    pem = cert.public_bytes(serialization.Encoding.PEM)
    kpem = key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                             serialization.NoEncryption())
    return TLSConfig(cert=pem, key=kpem, ca=pem)


class Services:
    """S0 and S1 as gRPC services on 127.0.0.1 with enrolled clients; use as a context manager.

    ``clients`` are JanusClient classes (one client each); ``coordinate(**kw)`` runs S0's coordinator in a
    thread (its finished rounds go to ``done``); ``net(i)`` is client i's NetworkClient. Leaving the
    block joins the coordinator, closes every NetworkClient and stops both services.
    """

    def __init__(self, cfg, clients, *, tls=None, model=None, peer_timeout=None):
        self.cfg, self.session, self.tls = cfg, bytes(range(16)), tls
        self.k0, self.k1 = ServerKeys(), ServerKeys()
        kw = dict(config=cfg, session=self.session, model=model)
        self.s1 = ServerNode(make_server("s1", keys=self.k1, peer_sign=self.k0.sign.public,
                                         peer_kem=self.k0.kem.public, **kw))
        self.g1, self.p1 = start_server(self.s1, "127.0.0.1:0", tls=tls)
        self.s0 = ServerNode(make_server("s0", keys=self.k0, peer_sign=self.k1.sign.public,
                                         peer_kem=self.k1.kem.public, **kw),
                             peer=Remote(f"127.0.0.1:{self.p1}", max_bytes=2**20, tls=tls))
        self.g0, self.p0 = start_server(self.s0, "127.0.0.1:0", tls=tls)
        self.jcs = [cls(config=cfg, s0=self.k0.public, s1=self.k1.public, session=self.session, model=model)
                    for cls in clients]
        self.roster = enroll([c.id for c in self.jcs], version=1, s0=self.s0.server, s1=self.s1.server)
        for c in self.jcs:
            c.set_roster(self.roster)
        self.nets = [NetworkClient(c, s0=f"127.0.0.1:{self.p0}", s1=f"127.0.0.1:{self.p1}", tls=tls)
                     for c in self.jcs]
        self.done: list[int] = []
        self._coord = None

    def net(self, i):
        return self.nets[i]

    def coordinate(self, **kw):
        self._coord = threading.Thread(target=lambda: self.done.extend(self.s0.coordinate(**kw)))
        self._coord.start()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        if self._coord is not None:
            self._coord.join(60)
        for n in self.nets:
            n.close()
        self.g0.stop(0)
        self.g1.stop(0)


def _in_threads(fn, count):
    """Run ``fn(i)`` for i < count in parallel threads; returns the results (an exception is returned too)."""
    out = [None] * count

    def run(i):
        try:
            out[i] = fn(i)
        except Exception as err:  # noqa: BLE001 - the test inspects what each client got
            out[i] = err

    threads = [threading.Thread(target=run, args=(i,)) for i in range(count)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(90)
    return out


@pytest.mark.parametrize("mode", ["exact", "sketch"])
def test_tls_round_over_loopback(mode):
    tls = _self_signed()
    cfg = JanusConfig(dim=40, mode=mode)
    with Services(cfg, [JanusClient] * 4, tls=tls) as sv:
        sv.coordinate(rounds=1, expect=3, round_timeout=30, gap=0)
        ups = [np.random.default_rng(i).uniform(-1, 1, 40) for i in range(3)]
        for i in range(3):
            assert sv.net(i).wait_for_round(0, timeout=20) == 1
        results = _in_threads(lambda i: sv.net(i).participate(ups[i]), 3)
        exact = sum(cfg.quantizer.quantize(u).astype(np.int64) for u in ups)
        for r in results:
            assert r.n_participants == 3
            np.testing.assert_array_equal(r.sum_codes, exact)
        # a client that does not trust the server certificate cannot talk to it
        plain = Remote(f"127.0.0.1:{sv.p0}", max_bytes=2**20, timeout=2)
        with pytest.raises(ServerUnavailableError):
            plain.call("Announcement")
        # protocol errors cross the wire as the same exception class
        late = sv.net(3)
        late.client.begin_round(late.s0.call("Announcement"), late.s1.call("Announcement"))
        forged = late.client.upload(ups[0]).to_s0[:-64] + bytes(64)
        with pytest.raises(SignatureError):
            sv.net(0).s0.call("Submit", forged)
        # read RPCs answer only enrolled clients and the peer server
        outsider = SigningKey()
        for method in ("Aggregate", "Count"):
            with pytest.raises(NotEnrolledError):
                sv.net(0).s1.call(method, read_request(method, sv.session, 1, outsider))
        assert sv.net(0).s1.call("Aggregate", read_request("Aggregate", sv.session, 1, sv.jcs[0].key))
        with pytest.raises(SignatureError):  # Agree answers only S0
            sv.net(0).s1.call("Agree", encode(MsgType.PARTICIPANTS, sv.session, 1, {"ids": [], "checks": b""},
                                              outsider))


def test_network_client_checks_the_received_model_against_the_announced_digest():
    """The deployed MIA defence: S0 announces the digest of the model file (``serve --model``); a client
    given other weights (``client --model``) refuses the round, one given the same weights takes part.
    Before, ``wait_for_round`` took no model and the CLI always announced the digest of an empty model."""
    from janus_sa.errors import ModelInconsistencyError

    weights = np.arange(8.0)
    cfg = JanusConfig(dim=8, initial_model=model_digest(weights))
    with Services(cfg, [JanusClient] * 4, model=weights) as sv:
        sv.coordinate(rounds=1, expect=3, round_timeout=20, gap=0)
        with pytest.raises(ModelInconsistencyError, match="do not match"):
            sv.net(3).wait_for_round(0, timeout=20, model=weights + 1e-12)  # a tampered copy
        assert sv.jcs[3].round_ is None  # it takes no part
        for i in range(3):
            assert sv.net(i).wait_for_round(0, timeout=20, model=weights) == 1
        results = _in_threads(lambda i: sv.net(i).participate(np.full(8, i)), 3)
        assert [r.n_participants for r in results] == [3, 3, 3]
        np.testing.assert_allclose(results[0].sum, np.full(8, 3.0), atol=results[0].error_bound)


def _plus_one_client(mode):
    """A JanusClient class whose UPLOAD0 carries y_i + 1 on coordinate 0 under honest commitments and proof."""
    from janus_sa import crypto
    from janus_sa.protocol import Upload
    from janus_sa.wire import decode

    class PlusOne(JanusClient):
        def upload(self, update):
            up = super().upload(update)
            m = decode(up.to_s0, max_bytes=10**7)
            if mode == "exact":
                sc = crypto.words_to_scalars(m.body["masked"])
                sc[0] = (sc[0] + 1) % crypto.GROUP_ORDER
                masked = crypto.scalars_to_words(sc)
            else:
                masked = m.body["masked"].copy()
                masked[0] += np.uint32(1)
            return Upload(encode(m.type, m.session, m.round, {**m.body, "masked": masked}, self.key), up.to_s1)

    return PlusOne


def _participate_or_error(sv, ups):
    def run(i):
        sv.net(i).wait_for_round(0, timeout=20)
        return sv.net(i).participate(ups[i], timeout=30)
    return run


@pytest.mark.parametrize(("mode", "proof", "reason"), [("exact", False, "inconsistent upload"),
                                                       ("sketch", True, "invalid range proof")])
def test_client_uploading_y_plus_1_is_excluded_over_grpc_and_the_round_completes(mode, proof, reason):
    """The malicious-client case over the gRPC services: one of four clients sends y_i + 1. Exact mode:
    both servers drop it at Agree (its commitments do not open to its masked vector). Sketch mode with
    the range proof: its masked vector does not link to the bits it proved, both servers drop it before
    the seals. The three others verify their exact sum and see it named as excluded; the cheater's
    participate raises ExcludedError with the servers' signed reason."""
    from janus_sa.errors import ExcludedError

    cfg = JanusConfig(dim=24, mode=mode, sketch_k=8, range_proof=proof)
    ups = [np.random.default_rng(i).uniform(-1, 1, 24) for i in range(4)]
    with Services(cfg, [_plus_one_client(mode)] + [JanusClient] * 3) as sv:
        sv.coordinate(rounds=1, expect=4, round_timeout=20, gap=0)
        out = _in_threads(_participate_or_error(sv, ups), 4)
    assert isinstance(out[0], ExcludedError) and out[0].reason == reason, out
    exact = sum(cfg.quantizer.quantize(u).astype(np.int64) for u in ups[1:])
    for r in out[1:]:
        assert r.n_participants == 3 and r.excluded == {sv.jcs[0].id: reason}
        np.testing.assert_array_equal(r.sum_codes, exact)
    assert sv.done == [1]


def run_many_clients_over_grpc(n: int, workers: int = 4) -> dict:
    """One exact-mode round of ``n`` in-process clients (l = 1) with both servers as gRPC services.

    Uploads go to the services' Submit handlers directly; the coordinator's Open, Count and Agree
    exchange between S0 and S1 and the reads of both aggregates by a verifying client go over gRPC,
    the messages that grow with n (PARTICIPANTS carries 99 B per client, an aggregate 35 B per id).
    """
    from concurrent.futures import ThreadPoolExecutor

    cfg = JanusConfig(dim=1, min_participants=2, quantizer=Quantizer(quantization_range=2**16))  # 65,537 fit
    k0, k1, session = ServerKeys(), ServerKeys(), bytes(range(16))
    s1 = ServerNode(make_server("s1", config=cfg, keys=k1, session=session, peer_sign=k0.sign.public))
    g1, p1 = start_server(s1, "127.0.0.1:0")
    s0 = ServerNode(make_server("s0", config=cfg, keys=k0, session=session, peer_sign=k1.sign.public),
                    peer=Remote(f"127.0.0.1:{p1}", max_bytes=2**20))
    g0, p0 = start_server(s0, "127.0.0.1:0")
    jcs = [JanusClient(config=cfg, s0=k0.public, s1=k1.public, session=session) for _ in range(n)]
    roster = enroll([c.id for c in jcs], version=1, s0=s0.server, s1=s1.server)
    jcs[0].set_roster(roster)
    for c in jcs[1:]:
        c.roster_ = roster  # the same checked roster (set_roster re-verifies it once per client)
    done: list[int] = []
    coord = threading.Thread(target=lambda: done.extend(s0.coordinate(rounds=1, expect=n, round_timeout=600,
                                                                       settle=1, gap=0)))
    coord.start()
    net = NetworkClient(jcs[0], s0=f"127.0.0.1:{p0}", s1=f"127.0.0.1:{p1}", timeout=60)
    try:
        net.wait_for_round(0, timeout=120)
        a0, a1 = s0.server.announcement_, s1.server.announcement_

        def upload(c):
            if c is not jcs[0]:
                c.begin_round(a0, a1)
            up = c.upload(np.full(1, 0.5))
            s0.Submit(up.to_s0)
            s1.Submit(up.to_s1)

        with ThreadPoolExecutor(workers) as pool:
            list(pool.map(upload, jcs))
        res = net.participate(None, timeout=600)
        coord.join(60)
    finally:
        net.close()
        g0.stop(0)
        g1.stop(0)
    return {"done": done, "n": res.n_participants, "sum": int(res.sum_codes[0]),
            "code": int(cfg.quantizer.quantize(np.full(1, 0.5))[0])}


@pytest.mark.scale  # ~2-10 CPU-minutes: run with `pytest -m scale packages/janus-sa/tests`
def test_twenty_thousand_clients_in_one_round_over_grpc():
    """Before, gRPC's default message limits stopped a round above about 10,800 clients."""
    out = run_many_clients_over_grpc(20_000)
    assert out["done"] == [1] and out["n"] == 20_000 and out["sum"] == 20_000 * out["code"]


def test_a_client_that_missed_a_round_catches_up_and_takes_part_in_the_next():
    """Round 2 announces the successor of round 1's aggregate; a client that slept through round 1 has
    the initial model, so it first verifies round 1's aggregates (catch_up) and then verifies round 2."""
    cfg = JanusConfig(dim=6, min_participants=3)
    results: dict = {}
    with Services(cfg, [JanusClient] * 4) as sv:
        sv.coordinate(rounds=2, expect=3, round_timeout=30, settle=0.5, gap=0.5)

        def take_part(i, rounds, upload=True):
            for after in rounds:
                rnd = sv.net(i).wait_for_round(after, timeout=30)
                results[(i, rnd)] = sv.net(i).participate(np.full(6, 0.25 * (i + 1)) if upload else None, timeout=30)

        early = [threading.Thread(target=take_part, args=(i, (0, 1))) for i in range(3)]
        for t in early:
            t.start()
        while (0, 1) not in results:
            threading.Event().wait(0.05)
        late = threading.Thread(target=take_part, args=(3, (1,), False))  # verifies round 2 only
        late.start()
        for t in [*early, late]:
            t.join(90)
    assert sv.done == [1, 2]
    jcs = sv.jcs
    assert jcs[3].round_ == 2 and jcs[3].head_ == jcs[0].head_ == sv.s0.server.head_  # S1 moves on at the next Open
    assert results[(3, 2)].n_participants == 3 and results[(0, 2)].sum_codes.tolist() == \
        results[(3, 2)].sum_codes.tolist()


def test_sketch_round_broken_by_a_client_is_listed_failed_by_the_coordinator():
    """Sketch mode without the range proof cannot identify a client sending y_i + 1: every client
    rejects the aggregate. S0 checks S1's aggregate before it records the round, so its log lists the
    round as failed (before: "finished") and the model version does not move on."""
    from janus_sa.errors import AggregateMismatchError

    cfg = JanusConfig(dim=8, mode="sketch", sketch_k=8)
    with Services(cfg, [_plus_one_client("sketch")] + [JanusClient] * 3) as sv:
        head = sv.s0.server.head_
        sv.coordinate(rounds=1, expect=4, round_timeout=30, settle=0.5, gap=0)
        errs = _in_threads(_participate_or_error(sv, [np.full(8, 0.5)] * 4), 4)
    assert all(isinstance(e, AggregateMismatchError) for e in errs), errs
    assert sv.done == [] and sv.s0.failed == {1} and sv.s0.server.head_ == head


class _SketchLiar(JanusClient):
    """Uploads x consistently (masked vector and proven bits), then commits its sketch to x + e_0."""

    def sketch_commit(self, seal0, seal1):
        self._secrets["codes"] = self._secrets["codes"].copy()
        self._secrets["codes"][0] += 1
        return super().sketch_commit(seal0, seal1)


def test_sketch_cheater_is_identified_over_grpc_and_the_retry_completes_without_it():
    """Sketch mode with the range proof over the gRPC services: a client whose sketch commitment
    contradicts its (consistent) upload. S0 runs the per-client check with S1 (SketchCheck) before either
    releases an aggregate: round 1 is listed failed with the client named in S0's log, no client gets an
    aggregate, and round 2 (a retry on the same model version) refuses the client's upload and gives the
    three others their exact sum."""
    from janus_sa.errors import RoundFailedError, SketchCheatError

    cfg = JanusConfig(dim=16, mode="sketch", sketch_k=8, range_proof=True)
    ups = [np.random.default_rng(i).uniform(-1, 1, 16) for i in range(4)]
    with Services(cfg, [_SketchLiar] + [JanusClient] * 3) as sv:
        head = sv.s0.server.head_
        sv.coordinate(rounds=2, expect=4, round_timeout=4, settle=0.5, gap=0)

        def two_rounds(i):
            out = []
            for after in (0, 1):
                sv.net(i).wait_for_round(after, timeout=30)
                try:
                    out.append(sv.net(i).participate(ups[i], timeout=30))
                except (RoundFailedError, SketchCheatError) as err:
                    out.append(err)
            return out

        outs = _in_threads(two_rounds, 4)
    assert sv.done == [2] and sv.s0.failed == {1}, (sv.done, sv.s0.failed, outs)
    assert all(isinstance(o[0], RoundFailedError) for o in outs), outs  # nobody got a round-1 aggregate
    assert isinstance(outs[0][1], SketchCheatError)
    exact = sum(cfg.quantizer.quantize(u).astype(np.int64) for u in ups[1:])
    for o in outs[1:]:
        assert o[1].n_participants == 3 and o[1].model_digest == head
        np.testing.assert_array_equal(o[1].sum_codes, exact)


def test_a_client_that_uploaded_but_missed_the_aggregate_finishes_that_round_and_rejoins():
    """Client 3 uploads in round 1 and never fetches the aggregate (a timeout); at round 2 its catch_up
    starts with round 1, the round it began, and it then uploads in round 2."""
    cfg = JanusConfig(dim=6, min_participants=3)
    results: dict = {}
    with Services(cfg, [JanusClient] * 4) as sv:
        sv.coordinate(rounds=2, expect=4, round_timeout=30, settle=0.5, gap=0.5)

        def take_part(i):
            for after in (0, 1):
                rnd = sv.net(i).wait_for_round(after, timeout=30)
                if i == 3 and rnd == 1:  # uploads, then gives up before the aggregate is released
                    up = sv.jcs[3].upload(np.full(6, 1.0))
                    sv.net(3).s0.call("Submit", up.to_s0)
                    sv.net(3).s1.call("Submit", up.to_s1)
                    continue
                results[(i, rnd)] = sv.net(i).participate(np.full(6, 0.25 * (i + 1)), timeout=30)

        _in_threads(take_part, 4)
    assert sv.done == [1, 2]
    assert results[(0, 1)].n_participants == 4 and results[(3, 2)].included
    assert results[(3, 2)].n_participants == 4 and sv.jcs[3].head_ == sv.jcs[0].head_
