"""Wire format: named errors for malformed input, plus Hypothesis fuzzing of every decoder entry point."""

import msgpack
import numpy as np
import pytest
import rbcl
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from janus_sa import InProcessDeployment, JanusConfig, JanusError, Roster
from janus_sa.crypto import GROUP_ORDER, SigningKey
from janus_sa.errors import (
    InvalidGroupElementError,
    MalformedMessageError,
    OversizedMessageError,
    UnknownMessageTypeError,
    UnsupportedVersionError,
    WrongSessionError,
)
from janus_sa.net import ServerNode, read_request
from janus_sa.simulation import random_updates
from janus_sa.wire import SCHEMAS, MsgType, decode, encode

FUZZ = settings(max_examples=150, deadline=None, suppress_health_check=list(HealthCheck), database=None)


def _setup():
    dep = InProcessDeployment(config=JanusConfig(dim=8))
    ids = dep.add_clients(2)
    a0, a1 = dep.s0.announce(1, dep.s0.head_), dep.s1.announce(1, dep.s1.head_)
    client = dep.clients[ids[0]]
    client.begin_round(a0, a1)
    up = client.upload(random_updates(8, ids)[ids[0]])
    return dep, client, up, a0, a1


def _sketch_agreed():
    dep = InProcessDeployment(config=JanusConfig(dim=8, mode="sketch"))
    ids = dep.add_clients(3)
    a0, a1 = dep.s0.announce(1, dep.s0.head_), dep.s1.announce(1, dep.s1.head_)
    for cid in ids:
        dep.clients[cid].begin_round(a0, a1)
        up = dep.clients[cid].upload(np.zeros(8))
        dep.s0.receive(up.to_s0)
        dep.s1.receive(up.to_s1)
    dep.s0.agree(dep.s1.participants())
    dep.s1.agree(dep.s0.participants())
    return dep


DEP, CLIENT, UP, A0, A1 = _setup()
SK = _sketch_agreed()
NODE1 = ServerNode(DEP.s1)
EXTRA = [DEP.roster.signed0, read_request("Aggregate", DEP.session, 1, CLIENT.key), SK.s1.seal_commit()]
SAMPLES = EXTRA + [UP.to_s0, UP.to_s1, A0, A1, encode(MsgType.PARTICIPANTS, DEP.session, 1, {"ids": [CLIENT.id], "checks": bytes(32)},
                                   DEP.keys1.sign)]


def _repack(data, index, value):
    env = msgpack.unpackb(data, raw=False)
    env[index] = value
    return msgpack.packb(env, use_bin_type=True)


def test_named_errors_for_each_defect():
    good = UP.to_s0
    assert decode(good, max_bytes=10**4).type == MsgType.UPLOAD0
    with pytest.raises(OversizedMessageError):
        decode(good, max_bytes=len(good) - 1)
    with pytest.raises(MalformedMessageError):
        decode(good[:-10], max_bytes=10**4)  # truncated
    with pytest.raises(MalformedMessageError):
        decode(good + b"\x00", max_bytes=10**4)  # trailing bytes
    with pytest.raises(UnsupportedVersionError):
        decode(_repack(good, 1, 2), max_bytes=10**4)
    with pytest.raises(UnknownMessageTypeError):
        decode(_repack(good, 2, 99), max_bytes=10**4)
    with pytest.raises(WrongSessionError):
        decode(good, max_bytes=10**4, session=bytes(16))
    env = msgpack.unpackb(good, raw=False)
    body = list(env[6])
    body[2] = body[2][:-1]  # seed ciphertext one byte short
    with pytest.raises(MalformedMessageError, match="seed_ct"):
        decode(_repack(good, 6, body), max_bytes=10**4)
    body = list(env[6])
    body[1] = body[1][:-2]  # masked vector not whole words
    with pytest.raises(MalformedMessageError, match="uint32"):
        decode(_repack(good, 6, body), max_bytes=10**4)
    body = list(env[6])
    body[3] = bytes([1]) * 32  # not a canonical ristretto255 encoding
    with pytest.raises(InvalidGroupElementError):
        decode(_repack(good, 6, body), max_bytes=10**4)
    with pytest.raises(MalformedMessageError):
        DEP.s0.receive(_repack(good, 6, env[6][:3]))  # missing field
    # a masked vector of the wrong length is refused by the server with a named error
    short = encode(MsgType.UPLOAD0, DEP.session, 1, {**decode(good, max_bytes=10**4).body,
                                                      "masked": np.zeros(7, np.uint32)}, CLIENT.key)
    with pytest.raises(MalformedMessageError, match="words"):
        DEP.s0.receive(short)
    with pytest.raises(OversizedMessageError):
        decode(encode(MsgType.UPLOAD0, DEP.session, 1, {**decode(good, max_bytes=10**4).body,
                                                         "masked": np.zeros(100, np.uint32)}, CLIENT.key),
               max_bytes=10**4, max_dim=8)


def test_scalar_above_group_order_is_rejected():
    agg = {"participants_digest": bytes(32), "n": 1, "model_digest": bytes(32), "value": np.zeros(8, np.uint32),
           "commitment": rbcl.crypto_core_ristretto255_random(), "randomness": bytes(32), "ids": [],
           "excluded": [], "reasons": b"", "checks": b""}
    raw = encode(MsgType.AGGREGATE0, DEP.session, 1, agg, SigningKey())
    env = msgpack.unpackb(raw, raw=False)
    env[6][5] = GROUP_ORDER.to_bytes(32, "little")
    with pytest.raises(InvalidGroupElementError):
        decode(msgpack.packb(env, use_bin_type=True), max_bytes=10**4)


def _entry_points(data):
    """Every place that parses untrusted bytes; each may only raise JanusError subclasses."""
    yield lambda: decode(data, max_bytes=4096, max_dim=64)
    yield lambda: DEP.s0.receive(data)
    yield lambda: DEP.s1.receive(data)
    yield lambda: DEP.s0.agree(data)
    yield lambda: CLIENT.finish_round(data, data)
    yield lambda: CLIENT.begin_round(data, A1)
    yield lambda: Roster.from_signed(data, data, s0=DEP.keys0.sign.public, s1=DEP.keys1.sign.public,
                                     session=DEP.session)
    yield lambda: NODE1._authorize(data, "Aggregate")
    yield lambda: NODE1.Agree(data)
    yield lambda: SK.s0.seal(data)


def _only_janus_errors(data):
    for call in _entry_points(data):
        try:
            call()
        except JanusError:
            pass


@FUZZ
@given(st.binary(max_size=600))
def test_fuzz_random_bytes(data):
    _only_janus_errors(data)


@FUZZ
@given(st.sampled_from(SAMPLES), st.integers(0, 10**6), st.integers(0, 255), st.booleans())
def test_fuzz_mutated_valid_messages(sample, pos, byte, truncate):
    pos %= len(sample)
    mutated = sample[:pos] if truncate else sample[:pos] + bytes([byte]) + sample[pos + 1:]
    _only_janus_errors(mutated)


_field = st.one_of(st.binary(max_size=80), st.integers(-(2**63), 2**64 - 1), st.none(), st.booleans(),
                   st.text(max_size=5), st.lists(st.binary(min_size=32, max_size=32), max_size=3),
                   st.floats(allow_nan=True))


@FUZZ
@given(st.sampled_from(list(MsgType)), st.lists(_field, min_size=0, max_size=7), st.integers(-3, 3),
       st.binary(min_size=0, max_size=20), st.integers(-5, 2**64 - 1))
def test_fuzz_structured_envelopes(mtype, body, version, session, rnd):
    env = [b"JSA", 1 + version % 2, int(mtype), DEP.session if len(session) % 2 else session, rnd,
           SigningKey().public, body, bytes(64)]
    _only_janus_errors(msgpack.packb(env, use_bin_type=True))


@FUZZ
@given(st.sampled_from([MsgType.UPLOAD0, MsgType.SKETCH_COMMIT, MsgType.AGGREGATE0, MsgType.SEAL]),
       st.binary(min_size=32, max_size=32))
def test_fuzz_group_encodings(mtype, point):
    """Well-formed envelopes whose point fields hold arbitrary 32-byte strings."""
    body = []
    for _name, kind in SCHEMAS[mtype]:
        if kind in ("point", "opt_point", "scalar"):
            body.append(point)
        elif kind == "u32vec":
            body.append(bytes(32))
        elif kind == "ids":
            body.append([])
        elif kind == "blob":
            body.append(b"")
        elif kind[0] == "b":
            body.append(bytes(kind[1]))
        else:
            body.append(1)
    env = [b"JSA", 1, int(mtype), DEP.session, 1, CLIENT.id, body, bytes(64)]
    data = msgpack.packb(env, use_bin_type=True)
    valid = rbcl.crypto_core_ristretto255_is_valid_point(point)
    try:
        decode(data, max_bytes=4096)
    except InvalidGroupElementError:
        assert not valid or mtype in (MsgType.AGGREGATE0,)  # aggregate also has a scalar field
    _only_janus_errors(data)
