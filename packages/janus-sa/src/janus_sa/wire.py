"""Versioned, length-checked, signed wire format (msgpack).

Every message is one msgpack array::

    [b"JSA", version, type, session(16 B), round, sender(32 B Ed25519 key), body(list), signature(64 B)]

The signature is Ed25519 by ``sender`` over the msgpack encoding of the first seven items. ``body`` is a
list whose fields, types and lengths are fixed by :data:`SCHEMAS`; the decoder checks all of them
(including that points are canonical ristretto255 encodings and scalars are reduced) before any
protocol logic sees the message, and raises only subclasses of :class:`~janus_sa.errors.WireFormatError`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import IntEnum
from typing import Any

import msgpack
import numpy as np

from janus_sa.crypto import (
    POINT_BYTES,
    SEED_CIPHERTEXT_BYTES,
    SigningKey,
    check_point,
    scalar_bytes,
    scalar_from_bytes,
    verify_signature,
)
from janus_sa.errors import (
    MalformedMessageError,
    OversizedMessageError,
    SignatureError,
    UnknownMessageTypeError,
    UnsupportedVersionError,
    WrongSessionError,
)

MAGIC = b"JSA"
VERSION = 1
SESSION_BYTES = 16
MAX_ROUND = 2**63 - 1
NONCE_BYTES = 16


class MsgType(IntEnum):
    """Message types of wire format v1 (the third field of every envelope)."""

    ANNOUNCE = 1        # server -> client: round opens for a model digest and config digest
    UPLOAD0 = 2         # client -> S0: masked update, commitment, seed for S0's randomness
    UPLOAD1 = 3         # client -> S1: seed for mask and S1's randomness, commitment
    PARTICIPANTS = 4    # server -> server: ids of the clients it accepted
    SEAL = 5            # server -> client (sketch mode): digest of its aggregate, fixed before the challenge
    SKETCH_COMMIT = 6   # client -> server (sketch mode): commitment to the projected update
    AGGREGATE0 = 7      # S0 -> client: masked sum Y, aggregated commitment, randomness sum S
    AGGREGATE1 = 8      # S1 -> client: mask sum K, aggregated commitment, randomness sum R
    ROSTER = 9          # server -> all: the enrolled client keys of one roster version
    REQUEST = 10        # client/server -> server: signed read request (Aggregate, Seal, Count)
    SEAL_COMMIT = 11    # server -> server (sketch mode): H(value digest, nonce), sent before either reveals
    SKETCH_CHECK = 12   # server -> server (sketch mode, range proof): per-participant sketch consistency pairs


# field kinds: ("b", n) bytes of exactly n; "point"; "opt_point" (point or b""); "scalar";
# "u32vec" little-endian uint32 array; ("int", lo, hi); "ids" sorted unique list of 32-byte ids;
# "blob" bytes of any length (bounded by the message limit)
_AGG = [("participants_digest", ("b", 32)), ("n", ("int", 0, 2**32)), ("model_digest", ("b", 32)),
        ("value", "u32vec"), ("commitment", "point"), ("randomness", "scalar"), ("ids", "ids"),
        ("excluded", "ids"), ("reasons", "blob"), ("checks", "blob")]
SCHEMAS: dict[MsgType, list[tuple[str, Any]]] = {
    # nonce: drawn afresh each time the server starts; retry: the earlier round on the same model version
    # that this server certifies ended without it releasing an aggregate (0 on a version's first round)
    MsgType.ANNOUNCE: [("model_digest", ("b", 32)), ("config_digest", ("b", 32)), ("roster_digest", ("b", 32)),
                       ("nonce", ("b", NONCE_BYTES)), ("retry", ("int", 0, MAX_ROUND))],
    # nonces: S0's then S1's announcement nonce of the round (an upload captured before a restart is refused)
    MsgType.UPLOAD0: [("model_digest", ("b", 32)), ("masked", "u32vec"),
                      ("seed_ct", ("b", SEED_CIPHERTEXT_BYTES)), ("commitment", "opt_point"),
                      ("nonces", ("b", 2 * NONCE_BYTES)), ("proof", "blob")],
    # proof: the range proof's shares (empty without one): S0's bit and proof shares and S1's
    # joint-randomness part in UPLOAD0, S0's joint-randomness part in UPLOAD1
    MsgType.UPLOAD1: [("model_digest", ("b", 32)), ("seed_ct", ("b", SEED_CIPHERTEXT_BYTES)),
                      ("commitment", "opt_point"), ("nonces", ("b", 2 * NONCE_BYTES)), ("proof", "blob")],
    MsgType.PARTICIPANTS: [("ids", "ids"), ("checks", "blob")],
    MsgType.SEAL: [("participants_digest", ("b", 32)), ("n", ("int", 0, 2**32)),
                   ("value_digest", ("b", 32)), ("nonce", ("b", 32)), ("peer_commitment", ("b", 32))],
    MsgType.SKETCH_CHECK: [("ids", "ids"), ("checks", "blob")],
    MsgType.SEAL_COMMIT: [("participants_digest", ("b", 32)), ("n", ("int", 0, 2**32)),
                          ("commitment", ("b", 32))],
    MsgType.SKETCH_COMMIT: [("commitment", "point")],
    MsgType.AGGREGATE0: _AGG,
    MsgType.AGGREGATE1: _AGG,
    MsgType.ROSTER: [("version", ("int", 1, 2**32)), ("ids", "ids"), ("batches", "u32vec")],
    MsgType.REQUEST: [("method", ("int", 0, 255))],
}


@dataclass(frozen=True)
class Message:
    """A decoded message whose format (not yet its signature) has been checked."""

    type: MsgType
    session: bytes
    round: int
    sender: bytes
    body: dict[str, Any]
    signature: bytes
    raw_body: list = field(repr=False, compare=False, default_factory=list)

    def signed_payload(self) -> bytes:
        """The bytes the signature covers: the msgpack encoding of the first seven fields."""
        return _payload(self.type, self.session, self.round, self.sender, self.raw_body)

    def verify(self, expected_sender: bytes | None = None) -> Message:
        """Check the Ed25519 signature (and, if given, that ``sender`` is the expected key)."""
        if expected_sender is not None and self.sender != expected_sender:
            raise SignatureError("message is not from the expected sender key")
        verify_signature(self.sender, self.signature, self.signed_payload())
        return self


def _payload(mtype: int, session: bytes, rnd: int, sender: bytes, body: list) -> bytes:
    return msgpack.packb([MAGIC, VERSION, int(mtype), session, rnd, sender, body], use_bin_type=True)


def _encode_field(kind: Any, value: Any) -> Any:
    if kind == "u32vec":
        return np.ascontiguousarray(value, dtype="<u4").tobytes()
    if kind == "ids":
        return sorted(value)
    if kind == "scalar" and isinstance(value, int):
        return scalar_bytes(value)
    if kind in ("point", "opt_point", "scalar", "blob") or kind[0] == "b":
        return bytes(value)
    return int(value)


def _encode_body(mtype: MsgType, body: dict[str, Any]) -> list:
    # an absent "blob" field is empty (the optional parts: a range proof, the listed consistency pairs)
    return [_encode_field(kind, body[name] if name in body or kind != "blob" else b"") for name, kind in SCHEMAS[mtype]]


def encode(mtype: MsgType, session: bytes, rnd: int, body: dict[str, Any], signer: SigningKey) -> bytes:
    """Sign and serialise one message."""
    fields = _encode_body(mtype, body)
    signature = signer.sign(_payload(mtype, session, rnd, signer.public, fields))
    return msgpack.packb([MAGIC, VERSION, int(mtype), session, rnd, signer.public, fields, signature],
                         use_bin_type=True)


def _bad(msg: str) -> MalformedMessageError:
    return MalformedMessageError(msg)


def _decode_field(name: str, kind: Any, value: Any, max_dim: int) -> Any:
    if kind == "u32vec":
        if not isinstance(value, bytes) or len(value) % 4:
            raise _bad(f"field {name!r} must be a byte string of whole uint32 words")
        if len(value) // 4 > max_dim:
            raise OversizedMessageError(f"field {name!r} has {len(value) // 4} coordinates, limit {max_dim}")
        return np.frombuffer(value, dtype="<u4").astype(np.uint32)
    if kind == "ids":
        if not isinstance(value, list) or not all(isinstance(v, bytes) and len(v) == 32 for v in value):
            raise _bad(f"field {name!r} must be a list of 32-byte ids")
        if any(a >= b for a, b in zip(value, value[1:], strict=False)):
            raise _bad(f"field {name!r} must be sorted without duplicates")
        return tuple(value)
    if kind == "blob":
        if not isinstance(value, bytes):
            raise _bad(f"field {name!r} must be bytes")
        return value
    if kind == "point":
        if not isinstance(value, bytes):
            raise _bad(f"field {name!r} must be bytes")
        return check_point(value)
    if kind == "opt_point":
        if not isinstance(value, bytes):
            raise _bad(f"field {name!r} must be bytes")
        return check_point(value) if value else b""
    if kind == "scalar":
        if not isinstance(value, bytes):
            raise _bad(f"field {name!r} must be bytes")
        return scalar_from_bytes(value)
    if kind[0] == "b":
        if not isinstance(value, bytes) or len(value) != kind[1]:
            raise _bad(f"field {name!r} must be exactly {kind[1]} bytes")
        return value
    lo, hi = kind[1], kind[2]
    if not isinstance(value, int) or isinstance(value, bool) or not lo <= value <= hi:
        raise _bad(f"field {name!r} must be an int in [{lo}, {hi}]")
    return value


def decode(data: bytes, *, max_bytes: int, max_dim: int = 2**26, session: bytes | None = None,
           expect: tuple[MsgType, ...] | None = None) -> Message:
    """Parse and format-check one message (the signature is checked by :meth:`Message.verify`).

    Raises :class:`OversizedMessageError`, :class:`MalformedMessageError`,
    :class:`UnsupportedVersionError`, :class:`UnknownMessageTypeError`,
    :class:`~janus_sa.errors.InvalidGroupElementError` or :class:`WrongSessionError`.
    """
    if not isinstance(data, (bytes, bytearray, memoryview)):
        raise _bad(f"expected bytes, got {type(data).__name__}")
    if len(data) > max_bytes:
        raise OversizedMessageError(f"message of {len(data)} bytes exceeds the limit of {max_bytes}")
    try:
        env = msgpack.unpackb(bytes(data), raw=False, use_list=True, strict_map_key=True,
                              max_bin_len=max_bytes, max_str_len=64, max_array_len=max(max_dim, 1 << 16),
                              max_map_len=0, max_ext_len=0)
    except Exception as err:  # msgpack raises many types on garbage; all mean "malformed"
        raise _bad(f"not a msgpack envelope: {type(err).__name__}") from err
    if not isinstance(env, list) or len(env) != 8:
        raise _bad("envelope must be an array of 8 items")
    magic, version, mtype, sess, rnd, sender, body, sig = env
    if magic != MAGIC:
        raise _bad("bad magic bytes")
    if not isinstance(version, int) or isinstance(version, bool):
        raise _bad("version must be an int")
    if version != VERSION:
        raise UnsupportedVersionError(f"protocol version {version} is not supported (this is version {VERSION})")
    if not isinstance(mtype, int) or isinstance(mtype, bool) or mtype not in MsgType._value2member_map_:
        raise UnknownMessageTypeError(f"unknown message type {mtype!r}")
    mtype = MsgType(mtype)
    if not isinstance(sess, bytes) or len(sess) != SESSION_BYTES:
        raise _bad(f"session must be {SESSION_BYTES} bytes")
    if session is not None and sess != session:
        raise WrongSessionError("message belongs to another session")
    if not isinstance(rnd, int) or isinstance(rnd, bool) or not 0 <= rnd <= MAX_ROUND:
        raise _bad("round must be a non-negative 63-bit int")
    if not isinstance(sender, bytes) or len(sender) != POINT_BYTES:
        raise _bad("sender must be a 32-byte Ed25519 public key")
    if not isinstance(sig, bytes) or len(sig) != 64:
        raise _bad("signature must be 64 bytes")
    schema = SCHEMAS[mtype]
    if not isinstance(body, list) or len(body) != len(schema):
        raise _bad(f"{mtype.name} body must have {len(schema)} fields")
    fields = {name: _decode_field(name, kind, value, max_dim) for (name, kind), value in zip(schema, body, strict=True)}
    if expect is not None and mtype not in expect:
        raise UnknownMessageTypeError(f"{mtype.name} is not accepted here (expected {[e.name for e in expect]})")
    return Message(mtype, sess, rnd, sender, fields, sig, body)
