"""The two-server range proof: a client with codes outside [0, Q) is excluded in exact and sketch mode and
the others get their exact sum; honest rounds are unchanged; forged bits or proofs fail the joint check."""

import os

import numpy as np
import pytest

from janus_sa import (
    AggregationServer,
    InProcessDeployment,
    JanusClient,
    JanusConfig,
    Quantizer,
    ServerKeys,
    crypto,
    validity,
)
from janus_sa.errors import ConfigError, ConfigTypeError, ExcludedError, MalformedMessageError, SketchCheatError
from janus_sa.simulation import random_updates

DIM = 12


class _Shifted(Quantizer):
    """Same parameters as the default (so the same configuration digest); every code set to ``code``."""

    def __init__(self, code):
        super().__init__()
        object.__setattr__(self, "_code", code)

    def quantize(self, x):
        return np.full(np.shape(x), self._code, dtype=np.uint32)


def _round_with_cheater(mode, code, n=4):
    dep = InProcessDeployment(config=JanusConfig(dim=DIM, mode=mode, range_proof=True))
    ids = dep.add_clients(n)
    ups = random_updates(DIM, ids, random_state=5)
    cheat = dep.clients[ids[0]]
    object.__setattr__(cheat, "config", JanusConfig(dim=DIM, mode=mode, range_proof=True, quantizer=_Shifted(code)))
    assert cheat.config.digest == dep.config.digest
    return dep, ids, ups, dep.run_round(ups)


def _honest_sum(dep, ups, ids):
    return sum(dep.config.quantizer.quantize(ups[c]).astype(np.int64) for c in ids)


@pytest.mark.parametrize("mode", ["exact", "sketch"])
@pytest.mark.parametrize("code", [2**22, 2 * (2**22 - 1), 2**31])
def test_out_of_range_client_is_excluded_and_the_others_get_their_exact_sum(mode, code):
    """Without the proof, 2 (Q - 1) verified (moving the sum by > 10 error bounds) and 2**31 ended the
    deployment (AggregateRangeError at every verifier); with it both servers exclude the client."""
    dep, ids, ups, report = _round_with_cheater(mode, code)
    assert isinstance(report.errors[ids[0]], ExcludedError)
    assert report.errors[ids[0]].reason == "invalid range proof"
    for c in ids[1:]:
        res = report.results[c]
        assert res.n_participants == 3 and res.excluded == {ids[0]: "invalid range proof"}
        np.testing.assert_array_equal(res.sum_codes, _honest_sum(dep, ups, ids[1:]))
    assert not report.server_errors
    # the chain goes on: the next version's round completes over the honest clients
    follow = dep.run_round({c: ups[c] for c in ids[1:]})
    assert not follow.errors and {r.n_participants for r in follow.results.values()} == {3}


@pytest.mark.parametrize("mode", ["exact", "sketch"])
def test_honest_rounds_are_unchanged_by_the_proof(mode):
    results = {}
    for proof in (False, True):
        dep = InProcessDeployment(config=JanusConfig(dim=DIM, mode=mode, range_proof=proof))
        ids = dep.add_clients(5)
        ups = random_updates(DIM, ids, random_state=11)
        report = dep.run_round(dict(zip(ids, ups.values(), strict=True)))
        assert not report.errors and len(report.results) == 5
        res = report.results[ids[0]]
        np.testing.assert_array_equal(res.sum_codes, _honest_sum(dep, ups, ids))
        results[proof] = res.sum_codes
    np.testing.assert_array_equal(results[False], results[True])


def test_sketch_client_uploading_y_plus_one_is_excluded_with_the_proof():
    """Sketch mode's y_i + 1 client made every client reject the round; with the proof the link between
    its masked vector and its bits fails at both servers, so it is excluded before the seals."""
    from janus_sa.protocol import JanusClient, Upload
    from janus_sa.wire import decode, encode

    class PlusOne(JanusClient):
        def upload(self, update):
            up = super().upload(update)
            m = decode(up.to_s0, max_bytes=10**7)
            masked = m.body["masked"].copy()
            masked[0] += np.uint32(1)
            return Upload(encode(m.type, m.session, m.round, {**m.body, "masked": masked}, self.key), up.to_s1)

    dep = InProcessDeployment(config=JanusConfig(dim=16, mode="sketch", range_proof=True))
    ids = dep.add_clients(4)
    ups = random_updates(16, ids, random_state=3)
    dep.clients[ids[0]].__class__ = PlusOne
    report = dep.run_round(ups)
    assert report.errors[ids[0]].reason == "invalid range proof"
    for c in ids[1:]:
        np.testing.assert_array_equal(report.results[c].sum_codes, _honest_sum(dep, ups, ids[1:]))


def _shares(codes, lay, *, bits=None, tamper_proof=False):
    """Run the proof between two simulated servers on exact-mode packed shares; returns the verdict."""
    seed0, seed1 = os.urandom(32), os.urandom(32)
    original = validity.encode_bits
    if bits is not None:
        validity.encode_bits = lambda *a, **k: bits
    try:
        blob0, blob1 = validity.prove(codes, lay=lay, seed0=seed0, seed1=seed1, blind=os.urandom(32))
    finally:
        validity.encode_bits = original
    if tamper_proof:  # P(0) of S0's proof share + 1
        nb = 32 * lay.n_bits + 32 * lay.chunk
        v = (int.from_bytes(blob0[nb:nb + 32], "little") + 1) % crypto.GROUP_ORDER
        blob0 = blob0[:nb] + v.to_bytes(32, "little") + blob0[nb + 32:]
    s0 = validity.leader_share(blob0, lay=lay, seed0=seed0)
    s1 = validity.helper_share(blob1, lay=lay, seed1=seed1)
    width, slots = crypto.slot_layout(32)
    packed = crypto.pack(codes, 32)
    pad = crypto.expand_scalars(os.urandom(32), b"pad", len(packed))
    y = np.array([(a + b) % crypto.GROUP_ORDER for a, b in zip(packed, pad, strict=True)], dtype=object)
    key = os.urandom(32)
    v = [validity.verifier_share(s, role=role, lay=lay, key=key, context=b"ctx",
                                 link=validity.link_vector(s.bits, lay, term=term, slot_width=width, slots=slots))
         for role, s, term in ((0, s0, y), (1, s1, -np.array(pad, dtype=object)))]
    return validity.decide(v[0], v[1], lay=lay)


def test_forged_bits_and_forged_proofs_fail_the_joint_check():
    lay = validity.layout(40, 2**8, wrap=False)
    codes = np.random.default_rng(0).integers(0, 2**8, 40)
    assert _shares(codes, lay)
    # a code of 2**8 + 3 written with a "bit" of value 3 at the top (sum of 2^k b_k is the code, so the
    # link holds): the bit check fails
    bad = codes.copy()
    bad[7] = 2**8 + 3
    bits = validity.encode_bits(bad % 2**8, lay).astype(np.int64)
    bits[7 * 8 + 7] += 2  # 2^7 * (b + 2) adds 2^8
    assert int(sum(int(b) << k for k, b in enumerate(bits[7 * 8:8 * 8]))) == 2**8 + 3
    assert not _shares(bad, lay, bits=bits)
    # the low bits of an out-of-range code are valid bits but do not link to the upload
    assert not _shares(bad, lay)
    # a proof polynomial that is not the gadget's fails at the servers' secret point
    assert not _shares(codes, lay, tamper_proof=True)


def test_soundness_error_layout_and_upload_size():
    lay = JanusConfig(dim=1000, range_proof=True).proof_layout
    assert (lay.bits, lay.n_bits, lay.calls) == (22, 22_000, 128)
    assert lay.soundness_error < 2.0**-243
    assert lay.upload_bytes == 32 * (22_000 + lay.chunk + 2 * 128 + 1) + 32
    assert JanusConfig(dim=1000, mode="sketch", range_proof=True).proof_layout.n_bits == 23_000
    assert JanusConfig(dim=1000).proof_layout is None


def test_configuration_errors():
    with pytest.raises(ConfigError, match="power of two"):
        JanusConfig(dim=4, range_proof=True, quantizer=Quantizer(quantization_range=1000)).validate()
    with pytest.raises(ConfigTypeError, match="range_proof"):
        JanusConfig(dim=4, range_proof="yes").validate()
    k0, k1 = ServerKeys(), ServerKeys()
    with pytest.raises(ConfigError, match="peer=ServerPublicKeys"):
        AggregationServer(config=JanusConfig(dim=4, range_proof=True), keys=k0, session=bytes(16), peer=k1.sign.public)
    with pytest.raises(MalformedMessageError):
        validity.helper_share(b"short", lay=validity.layout(4, 2**22, wrap=False), seed1=bytes(32))


class _SketchLiar(JanusClient):
    """Uploads x consistently (masked vector and proven bits), then commits its sketch to x + e_0."""

    def sketch_commit(self, seal0, seal1):
        self._secrets["codes"] = self._secrets["codes"].copy()
        self._secrets["codes"][0] += 1
        return super().sketch_commit(seal0, seal1)


def test_sketch_commitment_contradicting_the_upload_is_identified_and_the_retry_completes_without_it():
    """Before, such a client made every client reject the round (AggregateMismatchError) unidentified.
    With the range proof both servers compare per-client pairs of the sketch commitments against their
    shares of A x_i before releasing anything: the round ends with no aggregate and the client named by
    both, and the retry on the same model version refuses its upload and completes over the others."""

    dep = InProcessDeployment(config=JanusConfig(dim=DIM, mode="sketch", range_proof=True))
    ids = dep.add_clients(4)
    ups = random_updates(DIM, ids, random_state=8)
    dep.clients[ids[0]].__class__ = _SketchLiar
    head = dep.s0.head_
    first = dep.run_round(ups)
    assert not first.results and set(first.server_errors) == {"S0", "S1"}
    assert all(e.cheaters == (ids[0],) for e in first.server_errors.values())
    assert dep.s0.banned_ == dep.s1.banned_ == {ids[0]} and not dep.s0.head_released_ and dep.s0.head_ == head
    retry = dep.run_round(ups)
    assert isinstance(retry.errors[ids[0]], SketchCheatError)
    for c in ids[1:]:
        res = retry.results[c]
        assert res.n_participants == 3 and res.model_digest == head
        np.testing.assert_array_equal(res.sum_codes, _honest_sum(dep, ups, ids[1:]))
    assert dep.s0.banned_ == dep.s1.banned_ == {ids[0]}  # the ban outlives the model version
    for later in (dep.run_round(ups), dep.run_round(ups)):  # before, the cheater broke every other round
        assert not later.server_errors and len(later.results) == 3
        assert isinstance(later.errors[ids[0]], SketchCheatError)


def test_the_sketch_check_verdict_survives_a_server_restart(tmp_path):
    """The verdict is in the round log: S1 restarted from its state_dir still names the cheater, keeps it
    banned on the version and releases nothing; after an honest round it re-serves the same aggregate."""
    from janus_sa import MaskServer

    def restart(dep, where):
        return MaskServer(config=dep.config, keys=dep.keys1, session=dep.session, peer=dep.keys0.public,
                          state_dir=where / "s1")

    dep = InProcessDeployment(config=JanusConfig(dim=DIM, mode="sketch", range_proof=True), state_dir=tmp_path / "a")
    ids = dep.add_clients(4)
    dep.clients[ids[0]].__class__ = _SketchLiar
    dep.run_round(random_updates(DIM, ids, random_state=2))
    s1 = restart(dep, tmp_path / "a")
    assert s1.cheaters_ == (ids[0],) and s1.banned_ == {ids[0]}
    with pytest.raises(SketchCheatError):
        s1.aggregate()

    dep = InProcessDeployment(config=JanusConfig(dim=DIM, mode="sketch", range_proof=True), state_dir=tmp_path / "b")
    ids = dep.add_clients(4)
    assert len(dep.run_round(random_updates(DIM, ids, random_state=2)).results) == 4
    assert restart(dep, tmp_path / "b").aggregate() == dep.s1.aggregate()


def test_a_sketch_cheater_stays_banned_after_the_version_moves_and_a_restart(tmp_path):
    """The ban is kept in the chain state: after the retry moves the model version on, S1 restarted from
    its state_dir still refuses the cheater's upload."""
    from janus_sa import MaskServer

    dep = InProcessDeployment(config=JanusConfig(dim=DIM, mode="sketch", range_proof=True), state_dir=tmp_path)
    ids = dep.add_clients(4)
    dep.clients[ids[0]].__class__ = _SketchLiar
    ups = random_updates(DIM, ids, random_state=3)
    dep.run_round(ups)
    head = dep.s1.head_
    assert len(dep.run_round(ups).results) == 3 and dep.s1.head_ != head
    s1 = MaskServer(config=dep.config, keys=dep.keys1, session=dep.session, peer=dep.keys0.public,
                    state_dir=tmp_path / "s1")
    assert s1.banned_ == {ids[0]} and s1.head_ == dep.s1.head_


def _tampered_client(tweak):
    from janus_sa.protocol import Upload
    from janus_sa.wire import decode, encode

    class Tampered(JanusClient):
        def upload(self, update):
            up = super().upload(update)
            m0, m1 = decode(up.to_s0, max_bytes=10**8), decode(up.to_s1, max_bytes=10**8)
            b0, b1 = tweak(dict(m0.body), dict(m1.body))
            return Upload(encode(m0.type, m0.session, m0.round, b0, self.key),
                          encode(m1.type, m1.session, m1.round, b1, self.key))

    return Tampered


def _short_proof(b0, b1):
    return {**b0, "proof": b0["proof"][:-1]}, b1


def _no_proof(b0, b1):
    return {**b0, "proof": b""}, {**b1, "proof": b""}


def _scalar_past_the_order(b0, b1):
    proof = b0["proof"]
    return {**b0, "proof": proof[:32] + (2**256 - 1).to_bytes(32, "little") + proof[64:]}, b1


@pytest.mark.parametrize("mode", ["exact", "sketch"])
@pytest.mark.parametrize("tweak", [_short_proof, _no_proof, _scalar_past_the_order])
@pytest.mark.parametrize("position", [0, 3])
def test_a_malformed_upload_leaves_out_its_client_and_the_round_completes(mode, tweak, position):
    """Before, the server's MalformedMessageError ended run_round for everyone (and left S0 holding the
    uploads that came first); now the client is left out, as the gRPC Submit leaves it out."""
    dep = InProcessDeployment(config=JanusConfig(dim=DIM, mode=mode, range_proof=True))
    ids = dep.add_clients(4)
    ups = random_updates(DIM, ids, random_state=6)
    dep.clients[ids[position]].__class__ = _tampered_client(tweak)
    rep = dep.run_round(ups)
    assert isinstance(rep.errors[ids[position]], MalformedMessageError)
    honest = [c for c in ids if c != ids[position]]
    for c in honest:
        assert rep.results[c].n_participants == 3
        np.testing.assert_array_equal(rep.results[c].sum_codes, _honest_sum(dep, ups, honest))
    dep.clients[ids[position]].__class__ = JanusClient
    assert not dep.run_round(ups).errors  # the tampering client verified the aggregate and takes part again


def test_documented_exclusion_reasons_and_proof_size_match_the_code():
    """ExcludedError's docstring names every reason the servers can sign, and the proof's size is the
    formula JanusConfig and PROTOCOL.md give: 32 (N + c + 2L + 1) + 32 bytes in the upload to S0."""
    import math

    from janus_sa.protocol import EXCLUSION_REASONS
    from janus_sa.wire import decode

    assert all(f'``"{why}"``' in ExcludedError.__doc__ for why in EXCLUSION_REASONS.values())
    for mode, extra_bit in (("exact", 0), ("sketch", 1)):
        dep = InProcessDeployment(config=JanusConfig(dim=DIM, mode=mode, range_proof=True))
        ids = dep.add_clients(3)
        client = dep.clients[ids[0]]
        client.begin_round(dep.s0.announce(1, dep.s0.head_), dep.s1.announce(1, dep.s1.head_))
        proof = decode(client.upload(np.zeros(DIM)).to_s0, max_bytes=10**8).body["proof"]
        n_bits = DIM * (int(math.log2(dep.config.quantizer.quantization_range)) + extra_bit)
        calls = min(128, math.isqrt(n_bits))
        assert len(proof) == 32 * (n_bits + math.ceil(n_bits / calls) + 2 * calls + 1) + 32
