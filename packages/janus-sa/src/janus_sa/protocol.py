"""Janus protocol core: typed configuration, the client and the two servers as state machines.

Every method consumes and produces signed wire messages (``bytes``), so the same objects run
in-process (tests, demo, benchmarks) and behind the gRPC services of :mod:`janus_sa.net`.

Round ``t`` (see README, "Protocol spec"):

1. S0 and S1 each sign ``ANNOUNCE(t, model_digest, config_digest)``; a client accepts the round only if
   both announcements carry the same model digest (model-inconsistency check).
2. Client ``i`` quantises its update to codes ``x_i`` in ``[0, Q)``, draws two one-time seeds,
   ``seed1 -> (pad k_i, scalar r_i)`` and ``seed0 -> scalar s_i``, and sends
   ``UPLOAD0 = (y_i = pack(x_i) + k_i mod l, C_i = x_i.G + r_i H, Enc_S0(seed0))`` to S0 and
   ``UPLOAD1 = (Enc_S1(seed1), C'_i = x_i.G + s_i H)`` to S1 (the pad acts on the packed scalars, in
   the group order ``l``). Neither server knows the randomness of the commitment it holds, so each
   commitment is perfectly hiding towards its holder.
3. S0 and S1 exchange signed participant sets with two consistency points per client
   (``C_i - Y_i, Y_i + s_i H`` from S0, ``r_i H - K_i, C'_i + K_i`` from S1, ``Y_i = y_i.G``,
   ``K_i = k_i.G``), drop a client whose points differ, and aggregate over the rest ``P``:
   S0 returns ``(Y, C = sum C_i, S = sum s_i)``, S1 returns ``(K, C' = sum C'_i, R = sum r_i)``.
4. The client computes ``X = Y - K`` and accepts iff ``C = X.G + R H`` and ``C' = X.G + S H``,
   both servers name the same ``P`` and model digest. A single cheating server would have to find
   ``log_H(G)``.

Sketch mode (our deviation, for large ``l``): masks are mod ``M`` per coordinate; step 2 sends no commitment; after step 3 both servers
sign a SEAL (digest of ``Y`` resp. ``K``); the challenge is the hash of both seals, it selects a
``k x l`` Rademacher matrix ``A``, and each client commits to ``A x_i`` instead of ``x_i``.
"""

from __future__ import annotations

import logging
import math
import os
from abc import ABC, abstractmethod
from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any, ClassVar

import msgpack
import numpy as np
from icml25_shared.validation import Interval, Options

from janus_sa import crypto, validity
from janus_sa._validation import validate
from janus_sa.crypto import H, ServerKeys, ServerPublicKeys, SigningKey, point_add, point_mul, point_sub, sha256
from janus_sa.errors import (
    AggregateMismatchError,
    AggregateRangeError,
    ConfigError,
    ExcludedError,
    IncompleteRoundError,
    JanusError,
    MalformedMessageError,
    ModelInconsistencyError,
    ModelReplayError,
    NotAParticipantError,
    NotEnrolledError,
    ParticipantSetMismatchError,
    ParticipationPolicyError,
    ProtocolError,
    ReplayError,
    RoundClosedError,
    SealMismatchError,
    SignatureError,
    SketchCheatError,
    TooFewParticipantsError,
    VerificationError,
    WrongRoundError,
)
from janus_sa.quantize import Quantizer
from janus_sa.wire import NONCE_BYTES, SESSION_BYTES, Message, MsgType, decode, encode

log = logging.getLogger(__name__)
MODES = ("exact", "sketch")


@dataclass(frozen=True)
class JanusConfig:
    """Parameters every party of a deployment must agree on (their digest is in each ANNOUNCE).

    Parameters
    ----------
    dim : int
        Length ``l`` of each update vector.
    mode : {"exact", "sketch"}
        ``"exact"`` commits to every coordinate; ``"sketch"`` commits to ``sketch_k`` random
        projections chosen after the servers sealed their aggregates (one extra client message).
    sketch_k : int
        Number of Rademacher projections in sketch mode; a wrong aggregate passes with
        probability at most ``2**-sketch_k``.
    quantizer : Quantizer
        Fixed-point codec (clip range, levels, modulus).
    min_participants : int, optional
        Smallest participant set ``t`` any party accepts (at least 2). Both servers refuse to agree on
        fewer and every client refuses an aggregate over fewer, so isolating one client's update within
        a round needs ``t - 1`` colluding enrolled clients. Default: derived from the round's number of
        enrolled clients ``n`` (or ``n_expected``) and ``dropout_rate``, see :meth:`threshold_for`.
    n_expected : int, optional
        Number of clients a round expects; when given it replaces the roster size in the default of
        ``min_participants``.
    dropout_rate : float, default 0.5
        Fraction of the enrolled clients a round must tolerate losing (Flower's SecAgg+ sets its
        threshold the same way); the default threshold is ``max(min(3, n), ceil((1 - dropout_rate) n))``.
    initial_model : bytes, optional
        32-byte :func:`~janus_sa.model_digest` of the model of the first round (default: the digest of
        ``np.zeros(dim)``). Every later round's model must be the successor of the last verified
        aggregate, ``w_next = w + learning_rate * mean``; clients and servers refuse any other.
    learning_rate : float, default 1.0
        Server learning rate of the update rule (1.0 is FedAvg on model deltas).
    batch_size : int, default 1
        Participation policy: clients are enrolled in batches of at least ``batch_size`` and every
        participant set is a union of whole batches (a client whose batch-mate is missing is left out,
        reason ``"batch incomplete"``). A key keeps its batch for good: a revoked key returns only with
        its whole batch. Any combination of aggregates over any number of rounds then reveals sums over
        whole batches only (So et al., 2023). 1 disables the policy.
    range_proof : bool, default False
        Each upload carries a two-server validity proof (:mod:`janus_sa.validity`) that every code lies
        in ``[0, quantization_range)`` (which must then be a power of two); both servers check it and
        leave out a client whose proof fails (reason ``"invalid range proof"``), so one client moves
        the sum by at most its clip range. The proof adds ``32 (N + c + 2L + 1) + 32`` bytes to each
        upload, with ``N = dim log2 Q`` bits (sketch mode: ``dim (log2 Q + 1)``), ``L = min(128, ⌊√N⌋)``
        and ``c = ⌈N / L⌉`` (717,760 B at ``dim`` = 1000, Q = 2^22), and costs about ``N L`` scalar
        operations of client CPU.
    """

    dim: int
    mode: str = "exact"
    sketch_k: int = 32
    quantizer: Quantizer = field(default_factory=Quantizer)
    min_participants: int | None = None
    n_expected: int | None = None
    dropout_rate: float = 0.5
    initial_model: bytes | None = None
    learning_rate: float = 1.0
    batch_size: int = 1
    range_proof: bool = False

    _constraints: ClassVar[dict[str, list[Any]]] = {
        "dim": [Interval(int, 1, 2**26)],
        "mode": [Options(str, set(MODES))],
        "sketch_k": [Interval(int, 1, 256)],
        "quantizer": [Quantizer],
        "min_participants": [None, Interval(int, 2, None)],
        "n_expected": [None, Interval(int, 1, None)],
        "dropout_rate": [Interval(float, 0, 1, closed="left")],
        "initial_model": [None, bytes],
        "learning_rate": [Interval(float, 0, None, closed="neither")],
        "batch_size": [Interval(int, 1, None)],
        "range_proof": ["boolean"],
    }

    def validate(self) -> JanusConfig:
        """Check every field; raise :class:`ConfigError` naming the bad one. Returns ``self``.

        A value of the wrong type raises :class:`~janus_sa.errors.ConfigTypeError` (a ``TypeError``).
        """
        validate({name: getattr(self, name) for name in self._constraints}, self._constraints, owner="JanusConfig")
        if self.initial_model is not None and len(self.initial_model) != 32:
            raise ConfigError(f"JanusConfig: initial_model must be a 32-byte model digest (janus_sa.model_digest); "
                              f"got {len(self.initial_model)} bytes")
        if not math.isfinite(self.learning_rate):
            raise ConfigError(f"JanusConfig: learning_rate must be finite; got {self.learning_rate!r}")
        self.quantizer.validate()
        q = self.quantizer.quantization_range
        if self.range_proof and q & (q - 1):
            raise ConfigError(f"JanusConfig: range_proof proves codes in [0, quantization_range) bit by bit, so "
                              f"quantization_range must be a power of two; got {q}")
        n = self.n_expected
        if n is not None and self.threshold > n:
            raise ConfigError(f"min_participants={self.threshold} exceeds n_expected={n}: no round could complete "
                              f"(accepted: 2 <= min_participants <= n_expected)")
        if self.threshold > self.quantizer.max_clients:
            raise ConfigError(f"min_participants={self.threshold} exceeds the {self.quantizer.max_clients} clients "
                              "these quantizer settings can sum: no round could complete")
        return self

    @property
    def threshold(self) -> int:
        """The minimum participant set size ``t`` for ``n_expected`` clients (3 when neither is set)."""
        return self.threshold_for(self.n_expected or 0)

    def threshold_for(self, n_enrolled: int) -> int:
        """``t`` for a round with ``n_enrolled`` clients in its roster.

        ``min_participants`` when set; otherwise ``max(min(3, n), ceil((1 - dropout_rate) n))`` with
        ``n = n_expected`` or ``n_enrolled``: a round survives the declared dropout rate and a single
        server needs at least ``t - 1`` colluding clients to isolate anyone.
        """
        if self.min_participants is not None:
            return self.min_participants
        n = self.n_expected or n_enrolled
        if n <= 0:
            return 3
        return max(min(3, n), 2, math.ceil((1 - self.dropout_rate) * n - 1e-9))

    @cached_property
    def initial_digest(self) -> bytes:
        """Digest of the first round's model (``initial_model`` or the digest of ``np.zeros(dim)``)."""
        return self.initial_model if self.initial_model is not None else crypto.model_digest(np.zeros(self.dim))

    @property
    def modulus_bits(self) -> int:
        """``log2 M``, the bits of one masked coordinate."""
        return self.quantizer.modulus_range.bit_length() - 1

    @property
    def value_bits(self) -> int:
        """Bit bound on committed values: codes below ``M``, or projections below ``l * M``."""
        if self.mode == "exact":
            return self.modulus_bits
        return self.modulus_bits + max(1, math.ceil(math.log2(self.dim))) + 1

    @cached_property
    def digest(self) -> bytes:
        """SHA-256 of the canonical encoding of the configuration (carried by every announcement)."""
        q = self.quantizer
        return sha256(b"janus/config", msgpack.packb(
            [self.dim, self.mode, self.sketch_k, repr(float(q.clipping_range)), q.quantization_range,
             q.modulus_range, self.min_participants, self.n_expected, repr(float(self.dropout_rate)),
             self.initial_digest, repr(float(self.learning_rate)), self.batch_size, bool(self.range_proof)]))

    @property
    def mask_scalars(self) -> int:
        """Exact mode: scalars of a packed vector (``ceil(l / slots)``, 7 codes per scalar at ``M = 2**32``)."""
        return -(-self.dim // crypto.slot_layout(self.modulus_bits)[1])

    @property
    def masked_words(self) -> int:
        """Length of a masked vector or mask sum in uint32 words.

        Sketch mode: ``l`` codes mod ``M``; exact mode: ``mask_scalars`` packed scalars mod the group
        order, 8 words each.
        """
        return 8 * self.mask_scalars if self.mode == "exact" else self.dim

    @property
    def max_words(self) -> int:
        """Longest uint32 vector any client-facing message carries."""
        return max(self.dim, self.masked_words)

    @cached_property
    def proof_layout(self) -> validity.Layout | None:
        """The shape of the range proof (None without ``range_proof``)."""
        if not self.range_proof:
            return None
        return validity.layout(self.dim, self.quantizer.quantization_range, wrap=self.mode == "sketch")

    @property
    def max_message_bytes(self) -> int:
        """Upper bound on any client- or server-to-client message (a vector, a range proof, fixed fields)."""
        proof = self.proof_layout.upload_bytes if self.proof_layout is not None else 0
        return 4 * self.max_words + proof + 1024

    def committed_values(self, codes: np.ndarray, challenge: bytes | None) -> np.ndarray:
        """What is committed for a code vector: the codes themselves, or their projections."""
        if self.mode == "exact":
            return np.asarray(codes, dtype=np.int64)
        assert challenge is not None
        return project(codes, challenge, self.sketch_k)


def project(values: np.ndarray, challenge: bytes, k: int) -> np.ndarray:
    """``A @ values`` for the ``k x l`` Rademacher (+-1) matrix expanded from ``challenge`` (int64)."""
    v = np.asarray(values, dtype=np.int64)
    key = crypto.derive(challenge, b"sketch")
    total = int(v.sum())
    out = np.empty(k, dtype=np.int64)
    for t in range(k):
        bits = np.unpackbits(np.frombuffer(crypto.keystream(key, (v.size + 7) // 8, stream=t), np.uint8),
                             count=v.size).astype(bool)
        out[t] = 2 * int(v[bits].sum()) - total
    return out


def project_shares(values: np.ndarray, challenge: bytes, k: int) -> list[int]:
    """:func:`project` of a vector of shares mod the group order (the shares of ``A x`` for shares of ``x``)."""
    key = crypto.derive(challenge, b"sketch")
    total = int(values.sum())
    out = []
    for t in range(k):
        bits = np.unpackbits(np.frombuffer(crypto.keystream(key, (values.size + 7) // 8, stream=t), np.uint8),
                             count=values.size).astype(bool)
        out.append((2 * int(values[bits].sum()) - total) % crypto.GROUP_ORDER)
    return out


def next_model(model: np.ndarray, sum_codes: np.ndarray, n: int, config: JanusConfig) -> np.ndarray:
    """The update rule every party applies: ``w + learning_rate * mean`` of a verified aggregate.

    ``mean`` is the dequantised sum of ``n`` codes divided by ``n`` (:attr:`RoundResult.mean`); the
    float64 arithmetic is elementwise, so every party computes the same bytes and the same digest.
    """
    mean = config.quantizer.dequantize_sum(sum_codes, n) / n
    return np.asarray(model, dtype=np.float64) + config.learning_rate * mean


def _initial_model(config: JanusConfig, model: np.ndarray | None) -> np.ndarray | None:
    """The weights of the first round: ``model`` (checked against the configured digest) or zeros."""
    validate({"model": model}, {"model": [None, np.ndarray]}, owner="janus_sa")
    if model is None:
        return np.zeros(config.dim) if config.initial_model is None else None
    model = np.ascontiguousarray(model, dtype=np.float64)
    if model.shape != (config.dim,):
        raise ConfigError(f"model must be a float vector of shape ({config.dim},) (the update rule adds the mean "
                          f"update to it); got shape {model.shape}")
    if crypto.model_digest(model) != config.initial_digest:
        raise ModelInconsistencyError("model is not the initial model the configuration names (digests differ)")
    return model


def _check_setup(config: JanusConfig, session: bytes, *, owner: str) -> JanusConfig:
    """The validated ``config`` of a party, after checking its type and the 16-byte ``session`` id."""
    validate({"config": config, "session": session}, {"config": [JanusConfig], "session": [bytes]}, owner=owner)
    if len(session) != SESSION_BYTES:
        raise ConfigError(f"{owner}: session must be {SESSION_BYTES} bytes; got {len(session)} bytes")
    return config.validate()


def _atomic_write(path: Path, data: bytes, mode: int = 0o644) -> None:
    """Write ``data`` to ``path`` through a temporary file created with ``mode``, then rename (fsync'd)."""
    tmp = path.with_name(path.name + f".tmp{os.getpid()}")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, mode)
    try:
        os.write(fd, data)
        os.fsync(fd)
    finally:
        os.close(fd)
    os.replace(tmp, path)


def participants_digest(ids) -> bytes:
    """SHA-256 over the sorted, length-prefixed client ids of a participant set."""
    return sha256(b"janus/participants", *sorted(ids))


def _seed_context(session: bytes, rnd: int, client: bytes, role: int) -> bytes:
    return b"janus/seed" + session + rnd.to_bytes(8, "little") + client + bytes([role])


def _challenge(session: bytes, rnd: int, pdigest: bytes, d0: bytes, d1: bytes, nonce0: bytes,
               nonce1: bytes) -> bytes:
    return sha256(b"janus/challenge", session, rnd.to_bytes(8, "little"), pdigest, d0, d1, nonce0, nonce1)


def seal_commitment(value_digest: bytes, nonce: bytes) -> bytes:
    """``H(value_digest, nonce)``: what a server commits to before either server reveals its seal."""
    return sha256(b"janus/seal", value_digest, nonce)


def _check_round(msg: Message, current: int | None) -> None:
    if current is None:
        raise ProtocolError("no round is open")
    if msg.round < current:
        raise ReplayError(f"{msg.type.name} is from round {msg.round}; the current round is {current}")
    if msg.round > current:
        raise WrongRoundError(f"{msg.type.name} names round {msg.round}; the current round is {current}")


@dataclass(frozen=True)
class Upload:
    """The two messages a client sends in one step: ``to_s0`` for S0 and ``to_s1`` for S1."""

    to_s0: bytes
    to_s1: bytes


ROSTER_MAX_BYTES = 64 * 2**20


@dataclass(frozen=True)
class Roster:
    """The enrolled clients: a versioned, sorted list of Ed25519 keys signed by both servers.

    Build one with :func:`enroll` (in process) or from the two servers' signed ROSTER messages with
    :meth:`from_signed`; a key is revoked by signing a later version without it.

    Parameters
    ----------
    version : int
        Roster version (>= 1); servers and clients only move to a higher version.
    members : tuple of bytes
        Sorted, unique 32-byte client keys.
    signed0, signed1 : bytes
        The ROSTER messages signed by S0 and S1.
    batches : tuple of int
        The participation batch of each member (same order as ``members``).
    """

    version: int
    members: tuple[bytes, ...]
    signed0: bytes
    signed1: bytes
    batches: tuple[int, ...] = ()
    member_set: frozenset = field(init=False, repr=False, compare=False)
    batch_of: dict = field(init=False, repr=False, compare=False)
    batch_members: dict = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        batches = self.batches or tuple(range(len(self.members)))
        object.__setattr__(self, "batches", tuple(int(b) for b in batches))
        object.__setattr__(self, "member_set", frozenset(self.members))
        object.__setattr__(self, "batch_of", dict(zip(self.members, self.batches, strict=True)))
        groups: dict[int, set[bytes]] = {}
        for m, b in self.batch_of.items():
            groups.setdefault(b, set()).add(m)
        object.__setattr__(self, "batch_members", {b: frozenset(v) for b, v in groups.items()})

    def incomplete_batches(self, ids) -> set[bytes]:
        """The members of ``ids`` whose batch is not wholly inside ``ids`` (they break the batch policy)."""
        inside = set(ids)
        return {c for c in inside if c in self.batch_of and not self.batch_members[self.batch_of[c]] <= inside}

    @property
    def digest(self) -> bytes:
        """SHA-256 over the version, the members and their batches (carried by every ANNOUNCE)."""
        return roster_digest(self.version, self.members, self.batches)

    def __contains__(self, key: object) -> bool:
        return key in self.member_set

    @classmethod
    def from_signed(cls, signed0: bytes, signed1: bytes, *, s0: bytes, s1: bytes, session: bytes) -> Roster:
        """Check both servers' signatures (``s0``, ``s1``: their Ed25519 keys) and that they sign the same list."""
        msgs = []
        for data, key, name in ((signed0, s0, "S0"), (signed1, s1, "S1")):
            m = decode(data, max_bytes=ROSTER_MAX_BYTES, max_dim=2**21, session=session, expect=(MsgType.ROSTER,))
            try:
                m.verify(expected_sender=key)
            except SignatureError as err:
                raise SignatureError(f"roster is not signed by {name}") from err
            msgs.append(m)
        b0, b1 = msgs[0].body, msgs[1].body
        if (b0["version"], b0["ids"], b0["batches"].tolist()) != (b1["version"], b1["ids"], b1["batches"].tolist()):
            raise SignatureError("S0 and S1 signed different rosters (version, members or batches differ)")
        if len(b0["batches"]) != len(b0["ids"]):
            raise MalformedMessageError("a roster needs one batch number per member")
        weak = [m for m in b0["ids"] if crypto.is_weak_ed25519_key(m)]
        if weak:
            raise SignatureError(f"the roster holds {len(weak)} identity, small-order or invalid Ed25519 keys "
                                 "(anyone could forge their signatures)")
        return cls(version=b0["version"], members=tuple(b0["ids"]), signed0=bytes(signed0), signed1=bytes(signed1),
                   batches=tuple(int(b) for b in b0["batches"]))

    def to_bytes(self) -> bytes:
        """The two signed messages, msgpack-encoded (what a roster file holds)."""
        return msgpack.packb([self.signed0, self.signed1], use_bin_type=True)

    @classmethod
    def from_bytes(cls, raw: bytes, *, s0: bytes, s1: bytes, session: bytes) -> Roster:
        """Inverse of :meth:`to_bytes`, with the checks of :meth:`from_signed`."""
        try:
            signed0, signed1 = msgpack.unpackb(raw, raw=False)
        except Exception as err:  # noqa: BLE001 - any decoding failure is a malformed file
            raise MalformedMessageError(f"roster file is not two msgpack byte strings: {err}") from err
        return cls.from_signed(signed0, signed1, s0=s0, s1=s1, session=session)


def roster_digest(version: int, members, batches=None) -> bytes:
    """SHA-256 over a roster version, its sorted members and (when given) their batches."""
    parts = [version.to_bytes(8, "little"), *sorted(members)]
    if batches is not None:
        parts.append(np.asarray(batches, dtype="<u4").tobytes())
    return sha256(b"janus/roster", *parts)


def _past_batches(previous: Roster | None, history: Mapping[bytes, int] | None) -> dict[bytes, int]:
    """Every key's batch in ``history`` (all keys ever enrolled) and in ``previous``."""
    return {**(history or {}), **(previous.batch_of if previous is not None else {})}


def plan_batches(members, *, batch_size: int, previous: Roster | None = None,
                 history: Mapping[bytes, int] | None = None) -> list[int]:
    """Batch numbers for ``members`` (sorted order): known keys keep theirs, new ones form new batches.

    A key of ``previous`` or of ``history`` (every key ever enrolled, with its batch) keeps its batch
    number; new members, sorted by key, are cut into batches of ``batch_size``; a remainder smaller than
    ``batch_size`` joins the last new batch. Raises :class:`ConfigError` when fewer than ``batch_size``
    new members arrive.
    """
    members = sorted(members)
    old = _past_batches(previous, history)
    fresh = [m for m in members if m not in old]
    if fresh and len(fresh) < batch_size:
        raise ConfigError(f"{len(fresh)} new clients cannot form a batch of batch_size={batch_size}: enrol new "
                          "clients in groups of at least batch_size")
    start = max(old.values(), default=-1) + 1
    new = {m: start + min(j // batch_size, max(len(fresh) // batch_size - 1, 0)) for j, m in enumerate(fresh)}
    return [old.get(m, new.get(m, 0)) for m in members]


def check_batches(members, batches, *, batch_size: int, previous: Roster | None = None,
                  history: Mapping[bytes, int] | None = None) -> None:
    """Refuse a roster whose batches are smaller than ``batch_size`` or split a batch of ``previous`` or ``history``.

    A batch is kept whole or revoked whole, and a revoked key returns only with its whole batch, under
    its old number (``history`` maps every key ever enrolled to its batch): a roster that drops part of
    a batch, moves a member to another batch or re-enrols a revoked key beside others would let
    aggregates over the old and new batches be combined to isolate a client.
    """
    members = list(members)
    if len(batches) != len(members):
        raise ConfigError(f"batches must give one batch number per member ({len(members)}), got {len(batches)}")
    groups: dict[int, set[bytes]] = {}
    for m, b in zip(members, batches, strict=True):
        groups.setdefault(int(b), set()).add(m)
    past = _past_batches(previous, history)
    if past:
        past_groups: dict[int, set[bytes]] = {}
        for m, b in past.items():
            past_groups.setdefault(b, set()).add(m)
        for b, now in groups.items():
            if b in past_groups and now != past_groups[b]:
                raise ConfigError(f"batch {b} changes members between roster versions: keep a batch whole or revoke "
                                  "it whole, and re-enrol a revoked client only with its whole batch (a partial "
                                  "change lets aggregates of several rounds isolate a client)")
        moved = [m for m, b in zip(members, batches, strict=True) if m in past and past[m] != int(b)]
        if moved:
            raise ConfigError(f"{len(moved)} clients change batch between roster versions (a key keeps the batch "
                              "it was first enrolled in: keep a batch whole)")
    small = sorted(b for b, g in groups.items() if len(g) < batch_size)
    if small:
        raise ConfigError(f"batches {small} have fewer than batch_size={batch_size} members")


def enroll(members, *, version: int, s0: _Server, s1: _Server) -> Roster:
    """Enrol client keys in process: both servers sign the roster and install it.

    Parameters
    ----------
    members : iterable of bytes
        The 32-byte Ed25519 public keys of every enrolled client (the whole roster, not a delta).
    version : int
        Roster version, higher than the servers' current one.
    s0, s1 : AggregationServer, MaskServer
        The two servers.

    Returns
    -------
    Roster
        The roster both servers now enforce.
    """
    members = sorted(members)
    batches = plan_batches(members, batch_size=s0.config.batch_size, previous=s0.roster_,
                           history=s0.batch_history_)
    roster = Roster.from_signed(s0.sign_roster(members, version=version, batches=batches),
                                s1.sign_roster(members, version=version, batches=batches),
                                s0=s0.keys.sign.public, s1=s1.keys.sign.public, session=s0.session)
    s0.install_roster(roster)
    s1.install_roster(roster)
    return roster


def check_exclusion(aggregate0: bytes, aggregate1: bytes, *, client: bytes, s0: bytes, s1: bytes,
                    session: bytes) -> tuple[int, tuple[bytes, ...]]:
    """Check the evidence of an :class:`~janus_sa.errors.ExcludedError` without trusting its holder.

    Parameters
    ----------
    aggregate0, aggregate1 : bytes
        The AGGREGATE0 and AGGREGATE1 messages carried by the error.
    client : bytes
        The 32-byte key of the client that claims it was left out.
    s0, s1 : bytes or ServerPublicKeys
        The two servers' Ed25519 public keys (or their public bundles).
    session : bytes
        The deployment's 16-byte session id.

    Returns
    -------
    tuple
        ``(round, ids)``: the round and the final participant list both servers signed.

    Raises
    ------
    JanusError
        ``SignatureError``, ``WrongSessionError`` or a ``WireFormatError`` if a message is not the named
        server's signed aggregate of this deployment, ``ParticipantSetMismatchError`` if the two differ in round, model,
        list or excluded clients and reasons, or the list does not match its digest, ``VerificationError`` if
        ``client`` is in it.
    """
    keys = [getattr(k, "sign", k) for k in (s0, s1)]
    msgs = []
    for data, key, mtype, name in ((aggregate0, keys[0], MsgType.AGGREGATE0, "S0"),
                                   (aggregate1, keys[1], MsgType.AGGREGATE1, "S1")):
        m = decode(data, max_bytes=max(len(data), 1), session=session, expect=(mtype,))
        try:
            m.verify(expected_sender=key)
        except SignatureError as err:
            raise SignatureError(f"the evidence's aggregate is not signed by {name}") from err
        msgs.append(m)
    a0, a1 = msgs
    ids = a0.body["ids"]
    if (a0.round, a0.body["model_digest"], a0.body["participants_digest"], a0.body["n"], ids) != \
            (a1.round, a1.body["model_digest"], a1.body["participants_digest"], a1.body["n"], a1.body["ids"]):
        raise ParticipantSetMismatchError("the two aggregates are not of the same round, model and participant list")
    _excluded(a0, a1)  # and the same excluded clients and reasons
    if participants_digest(ids) != a0.body["participants_digest"] or len(ids) != a0.body["n"]:
        raise ParticipantSetMismatchError("the aggregates' participant list does not match their digest and n")
    if client in ids:
        raise VerificationError("the client is in the final participant list: this is no evidence of exclusion")
    if client not in a0.body["excluded"]:
        raise VerificationError("neither server names the client as excluded: the servers list every enrolled "
                                "client whose upload reached either of them, so it never uploaded in this round")
    return a0.round, tuple(ids)

#: reason codes of the ``excluded`` list in both aggregates
EXCLUSION_REASONS = {1: "inconsistent upload", 2: "reached one server only", 3: "batch incomplete",
                     4: "invalid range proof"}


def _excluded(a0: Message, a1: Message) -> dict[bytes, str]:
    """The excluded clients and reasons, which both aggregates must name identically."""
    ex, why = a0.body["excluded"], a0.body["reasons"]
    if (ex, why) != (a1.body["excluded"], a1.body["reasons"]):
        raise ParticipantSetMismatchError("S0 and S1 name different excluded clients or reasons")
    if len(why) != len(ex) or any(b not in EXCLUSION_REASONS for b in why):
        raise MalformedMessageError("the excluded list needs one known reason code per client")
    if set(ex) & set(a0.body["ids"]):
        raise ParticipantSetMismatchError("a client is named both as a participant and as excluded")
    if a0.body["checks"] != a1.body["checks"]:
        raise ParticipantSetMismatchError("S0 and S1 list different consistency pairs for the excluded clients")
    if len(a0.body["checks"]) != CHECK_PAIRS_BYTES * why.count(1):
        raise MalformedMessageError("the aggregates need both servers' consistency pairs (128 bytes) for each "
                                    "client excluded as inconsistent")
    return {c: EXCLUSION_REASONS[b] for c, b in zip(ex, why, strict=True)}


#: bytes of the two consistency pairs (S0's, then S1's) an aggregate lists per client excluded as inconsistent
CHECK_PAIRS_BYTES = 4 * crypto.POINT_BYTES


def _listed_pairs(a0: Message, client: bytes) -> tuple[bytes, bytes] | None:
    """The (S0 pair, S1 pair) both aggregates list for ``client``, or None if it was not excluded as inconsistent."""
    inconsistent = [c for c, b in zip(a0.body["excluded"], a0.body["reasons"], strict=True) if b == 1]
    if client not in inconsistent:
        return None
    j = inconsistent.index(client)
    blob = a0.body["checks"][CHECK_PAIRS_BYTES * j:CHECK_PAIRS_BYTES * (j + 1)]
    return blob[:CHECK_PAIRS_BYTES // 2], blob[CHECK_PAIRS_BYTES // 2:]


@dataclass(frozen=True)
class RoundResult:
    """A verified aggregate.

    ``sum_codes`` (l,) int64 is the exact integer sum of the participants' codes; ``sum`` and ``mean``
    (l,) float64 are its dequantisation (error per coordinate at most ``error_bound``);
    ``min_participants`` is the threshold ``t`` the round was checked against (``n_participants >= t``);
    ``included`` says whether this client's upload is in the final participant list both servers signed;
    ``excluded`` maps each client both servers left out to the reason they signed (``"inconsistent upload"``:
    its upload failed the servers' consistency check; ``"reached one server only"``; ``"batch incomplete"``;
    ``"invalid range proof"``).
    ``error_bound`` holds with ``range_proof`` (every participant proved its codes lie in
    ``[0, quantization_range)``; a failed proof is excluded as ``"invalid range proof"``); without it, only
    when every participant is honest, and every verifier checks that each coordinate of ``sum_codes`` lies
    in ``[0, n (Q - 1)]``, so ``mean`` lies in ``[-c, c]`` up to ``error_bound / n``.
    ``model_digest`` is the round's model and ``next_model_digest`` its successor under the update rule
    (the only model the next round may announce).
    """

    round: int
    n_participants: int
    participants_digest: bytes
    sum_codes: np.ndarray
    sum: np.ndarray
    mean: np.ndarray
    error_bound: float
    min_participants: int
    included: bool
    excluded: dict = field(default_factory=dict)
    model_digest: bytes = b""
    next_model_digest: bytes = b""


def read_seals(m0: Message, m1: Message, *, session: bytes, rnd: int) -> bytes:
    """Check a round's two SEAL messages against each other and return the sketch challenge."""
    for m in (m0, m1):
        _check_round(m, rnd)
    if (m0.body["participants_digest"], m0.body["n"]) != (m1.body["participants_digest"], m1.body["n"]):
        raise ParticipantSetMismatchError("S0 and S1 sealed different participant sets")
    # each server signed the commitment it received before revealing: the other's reveal must open it
    if seal_commitment(m1.body["value_digest"], m1.body["nonce"]) != m0.body["peer_commitment"]:
        raise SealMismatchError("S1's seal does not open the commitment S0 received before revealing")
    if seal_commitment(m0.body["value_digest"], m0.body["nonce"]) != m1.body["peer_commitment"]:
        raise SealMismatchError("S0's seal does not open the commitment S1 received before revealing")
    return _challenge(session, rnd, m0.body["participants_digest"], m0.body["value_digest"],
                      m1.body["value_digest"], m0.body["nonce"], m1.body["nonce"])


def open_aggregate(config: JanusConfig, a0: Message, a1: Message, *, session: bytes, roster: Roster,
                   model_digest: bytes, seals: tuple[Message, Message] | None = None) -> tuple[np.ndarray, int]:
    """Check two servers' aggregates of one round and unmask them: ``(sum_codes, n)``.

    The checks every verifier runs (a client for its round, a server before it follows the model to
    the successor): same round, model, participant list and excluded list in both, the list a union of
    whole batches of ``roster`` of at least the round's threshold, the seals (sketch mode), and both
    commitment equations ``C = X.G + R H`` and ``C' = X.G + S H``, and every coordinate of the sum at most
    ``n (Q - 1)`` (:class:`~janus_sa.errors.AggregateRangeError`). Raises a :class:`VerificationError`.
    """
    cfg = config
    if a0.round != a1.round:
        raise ParticipantSetMismatchError("the two aggregates are of different rounds")
    for a in (a0, a1):
        if a.body["model_digest"] != model_digest:
            raise ModelInconsistencyError(
                f"{'S0' if a is a0 else 'S1'} aggregated for a model other than the one announced")
        if a.body["value"].shape != (cfg.masked_words,):
            raise MalformedMessageError(f"aggregate has {a.body['value'].size} words, expected {cfg.masked_words}")
    pd, n, ids = a0.body["participants_digest"], a0.body["n"], a0.body["ids"]
    if (pd, n, ids) != (a1.body["participants_digest"], a1.body["n"], a1.body["ids"]):
        raise ParticipantSetMismatchError("S0 and S1 aggregated over different client sets")
    if participants_digest(ids) != pd or len(ids) != n:
        raise ParticipantSetMismatchError("the aggregates' participant list does not match their digest and n")
    if not roster.member_set.issuperset(ids):
        raise ParticipantSetMismatchError("the participant list names a key outside the roster")
    excluded = _excluded(a0, a1)
    if not roster.member_set.issuperset(excluded):
        raise ParticipantSetMismatchError("the excluded list names a key outside the roster")
    split = roster.incomplete_batches(ids)
    if split:
        raise ParticipationPolicyError(f"the participant list holds {len(split)} clients without their whole batch: "
                                       "aggregates over split batches could be subtracted to isolate a client")
    threshold = cfg.threshold_for(len(roster.members))
    if n < threshold:
        raise TooFewParticipantsError(f"the servers aggregated {n} clients; this deployment accepts no fewer "
                                      f"than min_participants={threshold}")
    cfg.quantizer.check_capacity(n)
    y, k = a0.body["value"], a1.body["value"]
    challenge = None
    if cfg.mode == "sketch":
        if seals is None:
            raise ProtocolError("sketch mode needs the round's two SEAL messages to verify")
        s0m, s1m = seals
        challenge = read_seals(s0m, s1m, session=session, rnd=a0.round)
        if s0m.body["participants_digest"] != pd or s0m.body["n"] != n:
            raise ParticipantSetMismatchError("the aggregates name a participant set other than the sealed one")
        if sha256(y.astype("<u4").tobytes()) != s0m.body["value_digest"]:
            raise SealMismatchError("S0's aggregate differs from the value it sealed")
        if sha256(k.astype("<u4").tobytes()) != s1m.body["value_digest"]:
            raise SealMismatchError("S1's mask sum differs from the value it sealed")
    if cfg.mode == "exact":  # packed scalars: X = Y - K in the group order, then read the slots
        try:
            ys, ks = crypto.words_to_scalars(y), crypto.words_to_scalars(k)
        except JanusError as err:
            raise MalformedMessageError(f"an aggregate is not a vector of canonical scalars: {err}") from err
        xp = [(a - b) % crypto.GROUP_ORDER for a, b in zip(ys, ks, strict=True)]
        xg = crypto.msm(xp)
        x = crypto.unpack(xp, cfg.value_bits, cfg.dim)
    else:
        modulus = cfg.quantizer.modulus_range
        x = (y.astype(np.int64) - k.astype(np.int64)) % modulus
        xg = crypto.commit_message(cfg.committed_values(x, challenge), cfg.value_bits)
    if a0.body["commitment"] != point_add(xg, point_mul(a1.body["randomness"], H)):
        raise AggregateMismatchError("the unmasked aggregate does not open S0's aggregated commitment")
    if a1.body["commitment"] != point_add(xg, point_mul(a0.body["randomness"], H)):
        raise AggregateMismatchError("the unmasked aggregate does not open S1's aggregated commitment")
    # the cheapest sound bound without a range proof: n codes in [0, Q) sum to at most n (Q - 1) per
    # coordinate, so the dequantised mean lies in [-c, c]; a participant whose codes leave [0, Q) far
    # enough to push any coordinate past it aborts the round here
    bound = n * (cfg.quantizer.quantization_range - 1)
    if x.size and int(x.max()) > bound:
        raise AggregateRangeError(f"the verified sum reaches {int(x.max())} on coordinate {int(x.argmax())}, above "
                                  f"n (Q - 1) = {bound}: a participant contributed codes outside [0, Q)")
    return x, n


class JanusClient:
    """One federated-learning client: quantises, masks, commits, and verifies the aggregate.

    The client follows the deployment's chain of model versions: it starts at the configured initial
    model and, after each aggregate it verifies, moves to the successor ``w + learning_rate * mean``
    (:attr:`model_`). It takes part only in a round announced for that model and uploads at most once per
    model version (a retry after a failed round needs both servers to certify in their announcements that
    they released no aggregate for the earlier round, and the client must hold no aggregate of it from
    either server, see :meth:`note_aggregate`).

    Parameters
    ----------
    config : JanusConfig
        The deployment's :class:`JanusConfig`.
    s0, s1 : ServerPublicKeys
        Public keys of the aggregation server S0 and the mask server S1.
    session : bytes
        16-byte deployment id bound into every signature.
    signing_key : SigningKey, optional
        The client's Ed25519 identity (generated when omitted); its public key is the client id.
    roster : Roster, optional
        The roster both servers signed (see :func:`enroll`); required before :meth:`begin_round`.
    model : ndarray of shape (dim,), optional
        The weights of the model version the client starts at: the initial model (default zeros, when
        the configuration names no initial model), or, for a client enrolled later, the current version
        it is provisioned with (as it is given the roster). The servers' own chain decides which rounds
        exist, so a stale version only keeps the client out.
    """

    def __init__(self, *, config: JanusConfig, s0: ServerPublicKeys, s1: ServerPublicKeys, session: bytes,
                 signing_key: SigningKey | None = None, roster: Roster | None = None,
                 model: np.ndarray | None = None) -> None:
        self.config = _check_setup(config, session, owner="JanusClient")
        self.s0, self.s1, self.session = s0, s1, session
        self.key = signing_key or SigningKey()
        self.round_: int | None = None
        #: whether the aggregate of :attr:`round_` was verified (False while a begun round is open, e.g.
        #: after a timeout fetching its aggregate; :meth:`follow` can still finish it)
        self.round_finished_ = True
        self.model_digest_: bytes | None = None
        self.roster_: Roster | None = None
        self._batch_history: dict[bytes, int] = {}  # every key of the rosters this client adopted -> batch
        #: the weights of the current model version (None until known) and its digest
        self.model_: np.ndarray | None = None
        self.head_: bytes = self.config.initial_digest
        if model is not None:
            self.model_ = np.ascontiguousarray(model, dtype=np.float64)
            if self.model_.shape != (self.config.dim,):
                raise ConfigError(f"model must have shape ({self.config.dim},), got {self.model_.shape}")
            self.head_ = crypto.model_digest(self.model_)
        elif self.config.initial_model is None:
            self.model_ = np.zeros(self.config.dim)
        #: model digest -> the round in which this client uploaded for it
        self.spent_: dict[bytes, int] = {}
        #: model versions for which this client holds a server's signed aggregate of its upload round: no
        #: retry certificate is believed for them (a server restarted from a rolled-back state_dir forgets
        #: that it released one and certifies the round abandoned)
        self.released_: set[bytes] = set()
        self._secrets: dict | None = None
        self._seals: tuple[Message, Message] | None = None
        self._sketched = False
        self._may_upload = False
        self._round_roster: Roster | None = None
        if roster is not None:
            self.set_roster(roster)

    @property
    def id(self) -> bytes:
        """The client's id: its 32-byte Ed25519 public key."""
        return self.key.public

    def set_roster(self, roster: Roster) -> None:
        """Adopt a roster after checking both servers' signatures on it (versions only move forward)."""
        checked = Roster.from_signed(roster.signed0, roster.signed1, s0=self.s0.sign, s1=self.s1.sign,
                                     session=self.session)
        if self.roster_ is not None and checked.version < self.roster_.version:
            raise ReplayError(f"roster version {checked.version} is older than the current {self.roster_.version}")
        if self.roster_ is not None and checked.version == self.roster_.version and checked.digest != self.roster_.digest:
            raise ReplayError(f"a different roster with the current version {checked.version}")
        try:
            check_batches(checked.members, checked.batches, batch_size=self.config.batch_size, previous=self.roster_,
                          history=self._batch_history)
        except ConfigError as err:
            raise ParticipationPolicyError(f"the servers signed a roster that breaks the batch policy: {err}") from err
        self.roster_ = checked
        self._batch_history.update(checked.batch_of)

    def _blame(self, a0: Message) -> tuple[str, ...]:
        """The servers whose listed consistency pair for this client differs from the one its secrets give."""
        listed = _listed_pairs(a0, self.id)
        sec = self._secrets
        if listed is None or sec is None or "y" not in sec:
            return ()
        y, k = crypto.msm(sec["y"]), crypto.msm(sec["pad"])
        true0 = point_sub(sec["c0"], y) + point_add(y, point_mul(sec["s"], H))  # what an honest S0 computes
        true1 = point_sub(point_mul(sec["r"], H), k) + point_add(sec["c1"], k)  # what an honest S1 computes
        return tuple(name for name, got, want in (("S0", listed[0], true0), ("S1", listed[1], true1)) if got != want)

    def _decode(self, data: bytes, mtype: MsgType, server: bytes) -> Message:
        # participant and excluded ids (35 B each) and two consistency pairs per excluded id
        extra = (35 + CHECK_PAIRS_BYTES) * len(self.roster_.members) + 96 if self.roster_ is not None else 0
        msg = decode(data, max_bytes=self.config.max_message_bytes + extra, max_dim=self.config.max_words,
                     session=self.session, expect=(mtype,))
        msg.verify(expected_sender=server)
        return msg

    def begin_round(self, announce0: bytes, announce1: bytes, *, model: bytes | np.ndarray | None = None) -> int:
        """Accept the round announced by both servers; returns the round number.

        The announced model must be this client's current model version (the initial model, or the
        successor of the last aggregate it verified): :class:`~janus_sa.errors.ModelReplayError` otherwise.
        ``model`` is the global model this client received and will train on (bytes or float array);
        when given, its :func:`~janus_sa.model_digest` must equal the announced digest
        (:class:`ModelInconsistencyError` otherwise), which binds the digest to the actual weights.
        A round on a model version this client already uploaded for is begun for verification only
        (:meth:`upload` refuses) unless both announcements certify the earlier round as abandoned.
        """
        a0 = self._decode(announce0, MsgType.ANNOUNCE, self.s0.sign)
        a1 = self._decode(announce1, MsgType.ANNOUNCE, self.s1.sign)
        if self.round_ is not None and min(a0.round, a1.round) <= self.round_:
            raise ReplayError(f"announcement for round {min(a0.round, a1.round)} after round {self.round_}")
        if a0.round != a1.round:
            raise WrongRoundError(f"S0 announces round {a0.round} but S1 announces round {a1.round}")
        if a0.body["model_digest"] != a1.body["model_digest"]:
            raise ModelInconsistencyError("S0 and S1 announce different model digests for the current round")
        for a in (a0, a1):
            if a.body["config_digest"] != self.config.digest:
                raise ProtocolError("a server announces a configuration different from this client's")
        if model is not None and crypto.model_digest(model) != a0.body["model_digest"]:
            raise ModelInconsistencyError("the model weights this client received do not match the digest both "
                                          "servers announced")
        digest = a0.body["model_digest"]
        if self.model_ is None and isinstance(model, np.ndarray) and digest == self.head_:
            self.model_ = np.ascontiguousarray(model, dtype=np.float64)  # the weights of the current version
        if digest != self.head_:
            raise ModelReplayError("the announced model is not this client's current model version (the initial model "
                                   "or the successor of the last aggregate it verified); a re-announced or nudged "
                                   "model would let two rounds' aggregates be subtracted")
        if self.roster_ is None:
            raise ProtocolError("this client has no roster (call set_roster with the roster both servers signed)")
        if a0.body["roster_digest"] != a1.body["roster_digest"]:
            raise ProtocolError("S0 and S1 announce different rosters")
        if a0.body["roster_digest"] != self.roster_.digest:
            raise ProtocolError(f"the servers announce a roster other than this client's version "
                                f"{self.roster_.version} (fetch the current roster)")
        spent = self.spent_.get(digest)
        self._may_upload = spent is None or (a0.body["retry"] == a1.body["retry"] == spent
                                             and digest not in self.released_)
        self.round_, self.model_digest_ = a0.round, digest
        self._nonces = a0.body["nonce"] + a1.body["nonce"]
        self._round_roster = self.roster_  # the round is checked against the roster it was announced with
        self._secrets, self._seals, self._sketched = None, None, False
        self.round_finished_ = False
        return self.round_

    def upload(self, update: np.ndarray) -> Upload:
        """Quantise, mask and commit a float update of shape ``(dim,)``."""
        if self.round_ is None or self.model_digest_ is None or self.roster_ is None:
            raise ProtocolError("call begin_round before upload")
        if self._secrets is not None:
            raise ProtocolError(f"this client already uploaded in round {self.round_}")
        if not self._may_upload:
            raise ModelReplayError(f"this client already uploaded for this model version in round "
                                   f"{self.spent_.get(self.model_digest_)} and the servers do not both certify that "
                                   "round as abandoned (or this client holds a server's aggregate of that round, so "
                                   "a server's state went back): a second upload would let the rounds be "
                                   "subtracted")
        if self.id not in self.roster_:
            raise NotEnrolledError("this client's key is not in the roster; ask both servers to enrol it")
        cfg = self.config
        update = np.asarray(update, dtype=np.float64)
        if update.shape != (cfg.dim,):
            raise ConfigError(f"update must have shape ({cfg.dim},), got {update.shape}")
        codes = cfg.quantizer.quantize(update)
        seed0, seed1 = crypto.new_seed(), crypto.new_seed()
        r, s = crypto.expand_scalar(seed1, b"r"), crypto.expand_scalar(seed0, b"s")
        c0 = c1 = b""
        if cfg.mode == "exact":  # one-time pad on the packed scalars, in the commitment's own group
            packed = crypto.pack(codes, cfg.value_bits)
            pad = crypto.expand_scalars(seed1, b"mask-scalars", len(packed))
            ys = [(a + b) % crypto.GROUP_ORDER for a, b in zip(packed, pad, strict=True)]
            masked = crypto.scalars_to_words(ys)
            m = crypto.msm(packed)
            c0, c1 = point_add(m, point_mul(r, H)), point_add(m, point_mul(s, H))
            check_parts = {"y": ys, "pad": pad, "c0": c0, "c1": c1}
        else:
            modulus = cfg.quantizer.modulus_range
            mask = crypto.expand_mask(seed1, cfg.dim, modulus)
            masked = ((codes.astype(np.uint64) + mask) & np.uint64(modulus - 1)).astype(np.uint32)
        proof0 = proof1 = b""
        if cfg.proof_layout is not None:  # bits of every code, shared between the servers, with their proof
            wraps = None
            if cfg.mode == "sketch":
                wraps = (codes.astype(np.uint64) + mask >= np.uint64(cfg.quantizer.modulus_range)).astype(np.int64)
            proof0, proof1 = validity.prove(codes, lay=cfg.proof_layout, seed0=seed0, seed1=seed1, wraps=wraps,
                                            blind=crypto.new_seed())
        self._secrets = {"codes": codes, "r": r, "s": s}
        if cfg.mode == "exact":
            self._secrets.update(check_parts)
        rnd, sess = self.round_, self.session
        self.spent_[self.model_digest_] = rnd
        ct0 = crypto.seal_seed(self.s0.kem, seed0, _seed_context(sess, rnd, self.id, 0))
        ct1 = crypto.seal_seed(self.s1.kem, seed1, _seed_context(sess, rnd, self.id, 1))
        to0 = encode(MsgType.UPLOAD0, sess, rnd, {"model_digest": self.model_digest_, "masked": masked,
                                                  "seed_ct": ct0, "commitment": c0, "nonces": self._nonces,
                                                  "proof": proof0}, self.key)
        to1 = encode(MsgType.UPLOAD1, sess, rnd, {"model_digest": self.model_digest_, "seed_ct": ct1,
                                                  "commitment": c1, "nonces": self._nonces, "proof": proof1},
                     self.key)
        return Upload(to0, to1)

    def _read_seals(self, seal0: bytes, seal1: bytes) -> tuple[Message, Message, bytes]:
        m0 = self._decode(seal0, MsgType.SEAL, self.s0.sign)
        m1 = self._decode(seal1, MsgType.SEAL, self.s1.sign)
        if self.round_ is None:
            raise ProtocolError("call begin_round first")
        return m0, m1, read_seals(m0, m1, session=self.session, rnd=self.round_)

    def sketch_commit(self, seal0: bytes, seal1: bytes) -> Upload:
        """Sketch mode: commit to the projection chosen by both servers' seals."""
        if self.config.mode != "sketch":
            raise ProtocolError("sketch_commit is only used in sketch mode")
        if self._secrets is None:
            raise ProtocolError("call upload before sketch_commit")
        if self._sketched:
            raise ProtocolError("sketch_commit was already called in the current round; a second commitment "
                                "with the same randomness would reveal the difference of two projections")
        m0, m1, ch = self._read_seals(seal0, seal1)
        self._sketched = True  # only a checked challenge uses up the round's one commitment
        sec = self._secrets
        m = crypto.commit_message(project(sec["codes"], ch, self.config.sketch_k), self.config.value_bits)
        rnd, sess = m0.round, self.session
        to0 = encode(MsgType.SKETCH_COMMIT, sess, rnd, {"commitment": point_add(m, point_mul(sec["r"], H))},
                     self.key)
        to1 = encode(MsgType.SKETCH_COMMIT, sess, rnd, {"commitment": point_add(m, point_mul(sec["s"], H))},
                     self.key)
        return Upload(to0, to1)

    def note_aggregate(self, aggregate: bytes) -> bool:
        """Remember that a server released an aggregate of this client's upload round (before verifying it).

        ``aggregate`` is either server's signed AGGREGATE of the current round. A model version this client
        uploaded for and then saw an aggregate of is never uploaded for again, whatever retry both
        announcements certify: a server whose state_dir was rolled back to before its release would
        certify the round abandoned and a second aggregate on the version could be subtracted from the
        first. Returns True when the aggregate was recorded (a signed aggregate of the upload round).
        """
        if self.round_ is None or self.model_digest_ is None or self.spent_.get(self.model_digest_) != self.round_:
            return False
        for mtype, key in ((MsgType.AGGREGATE0, self.s0.sign), (MsgType.AGGREGATE1, self.s1.sign)):
            try:
                msg = self._decode(aggregate, mtype, key)
            except JanusError:
                continue
            if msg.round == self.round_ and msg.body["model_digest"] == self.model_digest_:
                self.released_.add(self.model_digest_)
                return True
        return False

    def finish_round(self, aggregate0: bytes, aggregate1: bytes, *, seal0: bytes | None = None,
                     seal1: bytes | None = None) -> RoundResult:
        """Unmask and verify the aggregate; raises a :class:`VerificationError` subclass on any mismatch.

        In sketch mode the two SEAL messages of the round are required. A verified aggregate moves the
        client to the next model version (:attr:`model_`, :attr:`head_`), also when the client itself was
        left out (its :class:`ExcludedError` carries the verified result in ``result``).
        """
        if self.round_ is None or self.model_digest_ is None:
            raise ProtocolError("call begin_round before finish_round")
        cfg = self.config
        a0 = self._decode(aggregate0, MsgType.AGGREGATE0, self.s0.sign)
        a1 = self._decode(aggregate1, MsgType.AGGREGATE1, self.s1.sign)
        for a in (a0, a1):
            _check_round(a, self.round_)
        if self.spent_.get(self.model_digest_) == self.round_:
            self.released_.add(self.model_digest_)
        seals = None
        if cfg.mode == "sketch":
            if seal0 is None or seal1 is None:
                raise ProtocolError("sketch mode needs the round's two SEAL messages to verify")
            seals = (self._decode(seal0, MsgType.SEAL, self.s0.sign), self._decode(seal1, MsgType.SEAL, self.s1.sign))
        assert self._round_roster is not None
        x, n = open_aggregate(cfg, a0, a1, session=self.session, roster=self._round_roster,
                              model_digest=self.model_digest_, seals=seals)
        if self.round_finished_:  # a second pass would apply the aggregate to the successor model
            raise ProtocolError(f"round {self.round_} is already finished (this client moved to its successor model)")
        ids = a0.body["ids"]
        excluded = _excluded(a0, a1)
        total = cfg.quantizer.dequantize_sum(x, n)
        included = self.id in ids
        next_digest = b""
        if self.model_ is not None and crypto.model_digest(self.model_) == self.model_digest_:
            self.model_ = next_model(self.model_, x, n, cfg)
            next_digest = crypto.model_digest(self.model_)
        else:
            self.model_ = None  # the weights of this version are unknown: the successor cannot be computed
        self.head_ = next_digest
        self.round_finished_ = True
        result = RoundResult(round=self.round_, n_participants=n, participants_digest=a0.body["participants_digest"],
                             sum_codes=x, sum=total, mean=total / n, error_bound=cfg.quantizer.error_bound(n),
                             min_participants=cfg.threshold_for(len(self._round_roster.members)), included=included,
                             excluded=excluded, model_digest=self.model_digest_, next_model_digest=next_digest)
        if self._secrets is not None and not included:
            why = excluded.get(self.id, "not named by the servers")
            blamed = self._blame(a0)
            liar = f"; the consistency pair of {' and '.join(blamed)} is false" if blamed else ""
            err = ExcludedError(f"this client uploaded but both servers' final participant list leaves it out "
                                f"(reason both servers signed: {why}{liar})", aggregate0=bytes(aggregate0),
                                aggregate1=bytes(aggregate1), reason=why, blamed=blamed)
            err.result = result
            raise err
        return result

    def follow(self, aggregate0: bytes, aggregate1: bytes, *, seal0: bytes | None = None,
               seal1: bytes | None = None) -> RoundResult:
        """Verify a round this client missed and move to its successor model (catching up with the chain).

        The aggregates must be of a round after the last one this client saw, for this client's current
        model version, over the current roster; nothing is uploaded. The round this client began but did
        not finish (:attr:`round_finished_` is False, e.g. its aggregate was not fetched in time) is
        accepted too and finished with the secrets the client kept, as :meth:`finish_round` would
        (an :class:`ExcludedError` then also moves the client on).
        """
        if self.roster_ is None:
            raise ProtocolError("this client has no roster (call set_roster with the roster both servers signed)")
        rnd = self._decode(aggregate0, MsgType.AGGREGATE0, self.s0.sign).round
        if rnd == self.round_ and not self.round_finished_:
            if self.model_digest_ is None:  # restored from saved state: the open round is on the saved version
                self.model_digest_ = self.head_
            if self._round_roster is None:
                self._round_roster = self.roster_
            return self.finish_round(aggregate0, aggregate1, seal0=seal0, seal1=seal1)
        if self.round_ is not None and rnd <= self.round_:
            raise ReplayError(f"round {rnd} is not after the last round this client saw ({self.round_})")
        before = (self.round_, self.model_digest_, self._round_roster, self.round_finished_)
        self.round_, self.model_digest_, self._round_roster = rnd, self.head_, self.roster_
        self._secrets, self._seals, self._sketched, self._may_upload = None, None, False, False
        self.round_finished_ = False
        try:
            return self.finish_round(aggregate0, aggregate1, seal0=seal0, seal1=seal1)
        except JanusError:  # nothing verified: stay where the client was (a later round may still be followed)
            self.round_, self.model_digest_, self._round_roster, self.round_finished_ = before
            raise


class _Server(ABC):
    """Shared state machine of S0 and S1: round, replay protection, participant agreement, persistence."""

    role: int = -1
    upload_type: MsgType
    aggregate_type: MsgType

    def __init__(self, *, config: JanusConfig, keys: ServerKeys, session: bytes, peer: bytes | ServerPublicKeys,
                 state_dir: str | os.PathLike | None = None, roster: Roster | None = None,
                 model: np.ndarray | None = None) -> None:
        owner = type(self).__name__
        self.config = _check_setup(config, session, owner=owner)
        validate({"peer": peer}, {"peer": [bytes, ServerPublicKeys]}, owner=owner)
        peer_kem = peer.kem if isinstance(peer, ServerPublicKeys) else None
        if peer_kem is not None and (not isinstance(peer_kem, bytes) or len(peer_kem) != 32):
            raise ConfigError(f"{owner}: peer.kem must be the other server's 32-byte X25519 key; got {peer_kem!r:.40}")
        self.keys, self.session = keys, session
        self.peer: bytes = peer.sign if isinstance(peer, ServerPublicKeys) else peer
        if len(self.peer) != 32:
            raise ConfigError(f"{owner}: peer must be the other server's 32-byte Ed25519 key or its ServerPublicKeys; "
                              f"got {len(self.peer)} bytes")
        #: the servers' range-proof verification key (X25519 of their seed keys): clients cannot predict queries
        self._query_key = validity.query_key(keys.kem.shared_secret(peer_kem), session) if peer_kem else None
        if config.range_proof and self._query_key is None:
            raise ConfigError(f"{owner}: range_proof needs the peer's public keys (peer=ServerPublicKeys), not only "
                              "its signing key: the servers derive the proof's secret query from them")
        self.state_dir = Path(state_dir) if state_dir is not None else None
        self.roster_: Roster | None = None
        #: every key ever enrolled -> its batch: a revoked key may return only with its whole batch
        self.batch_history_: dict[bytes, int] = {}
        #: drawn at every start: bound into this server's announcements and every upload of their rounds,
        #: so uploads captured before a restart cannot be replayed into a round of the new process
        self.start_nonce = os.urandom(NONCE_BYTES)
        # the chain of model versions: the current version's weights and digest, the last round announced
        # on it, and whether this server released an aggregate for it (then no second round on it)
        self.head_model_: np.ndarray | None = _initial_model(self.config, model)
        self.head_ = self.config.initial_digest
        self.head_round_ = 0
        self.head_released_ = False
        #: sketch mode with the range proof: clients both servers found sending a sketch commitment that
        #: contradicts their upload; their uploads are refused on every later round (kept in the chain state)
        self.banned_: set[bytes] = set()
        self._reset(None, b"")
        self._replaying = False
        if self.state_dir is not None:
            self.state_dir.mkdir(parents=True, exist_ok=True)
            self._load_chain()
            if (self.state_dir / "roster.bin").exists():  # the installed roster survives restarts ...
                self.roster_ = Roster.from_bytes((self.state_dir / "roster.bin").read_bytes(), s0=self._s0_key,
                                                 s1=self._s1_key, session=session)
                self.batch_history_.update(self.roster_.batch_of)
            if (self.state_dir / "batches.bin").exists():
                self.batch_history_.update(msgpack.unpackb((self.state_dir / "batches.bin").read_bytes(), raw=False))
        if roster is not None:
            self.install_roster(roster)  # ... and a stale roster argument cannot roll it back (ReplayError)
        if self.state_dir is not None:
            self._restore()

    @property
    def _s0_key(self) -> bytes:
        return self.keys.sign.public if self.role == 0 else self.peer

    @property
    def _s1_key(self) -> bytes:
        return self.keys.sign.public if self.role == 1 else self.peer

    # --- model chain --------------------------------------------------------------------------------
    def _chain_path(self) -> Path:
        assert self.state_dir is not None
        return self.state_dir / "chain.bin"

    def _save_chain(self) -> None:
        if self.state_dir is None or self._replaying:
            return
        weights = b"" if self.head_model_ is None else self.head_model_.astype("<f8").tobytes()
        _atomic_write(self._chain_path(), msgpack.packb([self.head_, weights, self.head_round_, self.head_released_,
                                                         sorted(self.banned_)], use_bin_type=True))

    def _load_chain(self) -> None:
        if not self._chain_path().exists():
            return
        head, weights, rnd, released, *rest = msgpack.unpackb(self._chain_path().read_bytes(), raw=False)
        self.head_, self.head_round_, self.head_released_ = head, rnd, released
        self.banned_ = {bytes(c) for c in rest[0]} if rest else set()
        self.head_model_ = np.frombuffer(weights, dtype="<f8").astype(np.float64) if weights else None

    def advance(self, peer_aggregate: bytes, *, peer_seal: bytes | None = None) -> bool:
        """Follow a verified aggregate of the current round to the next model version.

        ``peer_aggregate`` (and, in sketch mode, ``peer_seal``) is the other server's signed message of
        the round; this server checks it against its own as a client would (:func:`open_aggregate`) and
        moves its model version to the successor. Returns False (and keeps the version) when there is
        nothing to follow: the round is not agreed, or its model is not this server's current version.
        Raises a :class:`VerificationError` when the peer's aggregate does not verify.
        """
        if (self.participants_ is None or self.model_digest_ != self.head_ or self.head_model_ is None
                or self._round_roster is None):
            return False
        own = decode(self.aggregate(), max_bytes=2**31, max_dim=2**26, session=self.session)
        peer_type = MsgType.AGGREGATE1 if self.role == 0 else MsgType.AGGREGATE0
        peer = decode(peer_aggregate, max_bytes=2**31, max_dim=2**26, session=self.session, expect=(peer_type,))
        peer.verify(expected_sender=self.peer)
        _check_round(peer, self.round_)
        seals = None
        if self.config.mode == "sketch":
            if peer_seal is None or self.peer_seal_commit_msg_ is None:
                raise ProtocolError("sketch mode: following a round needs both seals")
            own_seal = decode(self.seal(self.peer_seal_commit_msg_), max_bytes=4096, session=self.session)
            other = decode(peer_seal, max_bytes=4096, session=self.session, expect=(MsgType.SEAL,))
            other.verify(expected_sender=self.peer)
            seals = (own_seal, other) if self.role == 0 else (other, own_seal)
        a0, a1 = (own, peer) if self.role == 0 else (peer, own)
        x, n = open_aggregate(self.config, a0, a1, session=self.session, roster=self._round_roster,
                              model_digest=self.head_, seals=seals)
        self.head_model_ = next_model(self.head_model_, x, n, self.config)
        self.head_ = crypto.model_digest(self.head_model_)
        self.head_round_, self.head_released_ = 0, False
        self._save_chain()
        log.info("round %d verified: next model version %s", self.round_, self.head_.hex()[:16])
        return True

    # --- enrolment ------------------------------------------------------------------------------
    def sign_roster(self, members, *, version: int, batches=None) -> bytes:
        """Sign the ROSTER message for ``members`` (the whole list of enrolled client keys) with this server's key.

        ``batches`` gives each member's participation batch (default: :func:`plan_batches`). Raises
        :class:`ConfigError` on a duplicate key, a key that is not 32 bytes, an identity, small-order or
        invalid Ed25519 key, a server's own key, a version not above the installed roster's, or batches
        that break the batch policy (:func:`check_batches`).
        """
        members = list(members)
        bad = [m for m in members if not isinstance(m, bytes) or len(m) != 32]
        if bad:
            raise ConfigError(f"{len(bad)} roster entries are not 32-byte Ed25519 public keys")
        weak = [m for m in members if crypto.is_weak_ed25519_key(m)]
        if weak:
            raise ConfigError(f"{len(weak)} roster entries are identity, small-order or invalid Ed25519 keys, whose "
                              "signatures anyone can forge")
        seen: set[bytes] = set()
        for m in members:
            if m in seen:
                raise ConfigError(f"duplicate key {m.hex()} in the roster: each client enrols one key once")
            seen.add(m)
        if seen & {self._s0_key, self._s1_key}:
            raise ConfigError("a server's signing key cannot be enrolled as a client")
        if not isinstance(version, int) or version < 1:
            raise ConfigError(f"roster version must be an int >= 1, got {version!r}")
        if self.roster_ is not None and version <= self.roster_.version:
            raise ConfigError(f"roster version {version} is not above the installed version {self.roster_.version}")
        order = sorted(range(len(members)), key=members.__getitem__)
        if batches is None:
            batches = plan_batches(members, batch_size=self.config.batch_size, previous=self.roster_,
                                   history=self.batch_history_)
        else:
            batches = [int(batches[j]) for j in order]
        members = [members[j] for j in order]
        check_batches(members, batches, batch_size=self.config.batch_size, previous=self.roster_,
                      history=self.batch_history_)
        return encode(MsgType.ROSTER, self.session, 0,
                      {"version": version, "ids": members, "batches": np.asarray(batches, dtype=np.uint32)},
                      self.keys.sign)

    def install_roster(self, roster: Roster) -> None:
        """Enforce ``roster`` from the next announced round on (both signatures checked; versions only increase)."""
        checked = Roster.from_signed(roster.signed0, roster.signed1, s0=self._s0_key, s1=self._s1_key,
                                     session=self.session)
        if self.roster_ is not None and checked.version < self.roster_.version:
            raise ReplayError(f"roster version {checked.version} is older than the installed {self.roster_.version}")
        if self.roster_ is not None and checked.version == self.roster_.version:
            if checked.digest != self.roster_.digest:
                raise ReplayError(f"a different roster with the installed version {checked.version}: "
                                  "sign a new roster with a higher version")
            return
        check_batches(checked.members, checked.batches, batch_size=self.config.batch_size, previous=self.roster_,
                      history=self.batch_history_)
        self.roster_ = checked
        self.batch_history_.update(checked.batch_of)
        if self.state_dir is not None and not self._replaying:
            _atomic_write(self.state_dir / "batches.bin", msgpack.packb(self.batch_history_, use_bin_type=True))
            _atomic_write(self.state_dir / "roster.bin", checked.to_bytes())

    # --- state -------------------------------------------------------------------------------
    def _reset(self, rnd: int | None, model_digest: bytes, roster: Roster | None = None) -> None:
        roster = roster if roster is not None else self.roster_
        self.round_ = rnd
        self.model_digest_ = model_digest
        self.announcement_: bytes | None = None
        self.uploads_: dict[bytes, dict] = {}
        self.closed_ = False
        self.members_: frozenset = roster.member_set if roster is not None else frozenset()
        self._round_roster: Roster | None = roster
        self.roster_digest_ = roster.digest if roster is not None else bytes(32)
        self.nonce_ = bytes(NONCE_BYTES)
        self.participants_: tuple[bytes, ...] | None = None
        self.sketch_commits_: dict[bytes, bytes] = {}
        self._peer_seal_commit: bytes | None = None
        self.peer_seal_commit_msg_: bytes | None = None
        self._check_cache: dict[bytes, bytes] = {}
        self._validity_cache: dict[bytes, bytes] = {}
        self._code_shares: dict[bytes, np.ndarray] = {}
        self._sketch_pairs: dict[bytes, bytes] | None = None
        self.sketch_checked_ = False
        self.cheaters_: tuple[bytes, ...] = ()
        self.inconsistent_: tuple[bytes, ...] = ()
        self.invalid_: tuple[bytes, ...] = ()
        self._peer_checks: dict[bytes, bytes] = {}
        self.excluded_: tuple[tuple[bytes, int], ...] = ()
        self._value: np.ndarray | None = None
        self._randomness = 0
        self._commitment = crypto.IDENTITY

    @property
    def _current_round(self) -> int:
        if self.round_ is None:
            raise ProtocolError("no round is open")
        return self.round_

    @property
    def phase(self) -> str:
        """``"idle"``, ``"open"`` (accepting uploads), ``"closed"`` (list fixed, not agreed) or ``"agreed"``."""
        if self.round_ is None:
            return "idle"
        if self.participants_ is not None:
            return "agreed"
        return "closed" if self.closed_ else "open"

    def _log_path(self) -> Path:
        assert self.state_dir is not None
        return self.state_dir / "rounds.log"

    def _persist(self, record: list) -> None:
        if self.state_dir is None or self._replaying:
            return
        blob = msgpack.packb(record, use_bin_type=True)
        mode = "wb" if record[0] == "announce" else "ab"  # a new round starts a fresh log
        with open(self._log_path(), mode) as fh:
            fh.write(len(blob).to_bytes(8, "little") + blob)
            fh.flush()
            os.fsync(fh.fileno())

    def _restore(self) -> None:
        path = self._log_path()
        if not path.exists():
            return
        data = path.read_bytes()
        self._replaying = True
        try:
            pos = 0
            while pos + 8 <= len(data):
                size = int.from_bytes(data[pos:pos + 8], "little")
                if pos + 8 + size > len(data):
                    break  # torn final write: that message was never acknowledged
                kind, *args = msgpack.unpackb(data[pos + 8:pos + 8 + size], raw=False)
                pos += 8 + size
                if kind == "announce":  # the round keeps the roster and nonce it was announced with
                    rr = Roster.from_bytes(args[2], s0=self._s0_key, s1=self._s1_key,
                                           session=self.session) if len(args) > 2 and args[2] else None
                    self._announce(args[0], args[1], rr, nonce=args[3], retry=args[4])
                elif kind == "msg":
                    self.receive(args[0])
                elif kind == "agree":
                    self.agree(args[0])
                elif kind == "close":
                    self.close()
                elif kind == "seal":
                    self.seal(args[0])
                elif kind == "sketchcheck":
                    self.check_sketch(args[0], args[1])
        finally:
            self._replaying = False
        log.info("restored round %s with %d uploads from %s", self.round_, len(self.uploads_), path)

    # --- round lifecycle --------------------------------------------------------------------------
    def announce(self, rnd: int, model_digest: bytes) -> bytes:
        """Open round ``rnd`` for the model with this 32-byte digest; returns the signed ANNOUNCE.

        The model must be this server's current model version (the initial model, or the successor of
        the last aggregate it verified, see :meth:`advance`) and the server must not have released an
        aggregate for it: otherwise :class:`~janus_sa.errors.ModelReplayError`. A second round on the same
        version (after a round that failed before this server released anything) carries ``retry``, the
        earlier round's number, which lets clients that uploaded in it upload again.
        """
        if not isinstance(rnd, int) or rnd < 0:
            raise ConfigError(f"round must be a non-negative int, got {rnd!r}")
        if self.round_ is not None and rnd <= self.round_:
            raise ReplayError(f"round {rnd} is not after the current round {self.round_}")
        if not isinstance(model_digest, bytes) or len(model_digest) != 32:
            raise ConfigError("model_digest must be 32 bytes (see janus_sa.model_digest)")
        if self.roster_ is None:
            raise ProtocolError("no roster installed: enrol the clients first (janus_sa.enroll or the enroll command)")
        if model_digest != self.head_:
            raise ModelReplayError("the model is not this server's current model version (the initial model or the "
                                   "successor of the last aggregate it verified): refused, since two rounds on the "
                                   "same or a nudged model could be subtracted")
        if self.head_released_:
            raise ModelReplayError(f"this server already released an aggregate for this model version (round "
                                   f"{self.head_round_}); a second round on it could be subtracted from the first")
        retry = self.head_round_
        self.head_round_ = rnd
        self._save_chain()
        return self._announce(rnd, model_digest, self.roster_, nonce=self.start_nonce, retry=retry)

    def _announce(self, rnd: int, model_digest: bytes, roster: Roster | None, *, nonce: bytes, retry: int) -> bytes:
        self._reset(rnd, model_digest, roster)
        self.nonce_ = nonce
        self._persist(["announce", rnd, model_digest, roster.to_bytes() if roster is not None else b"", nonce, retry])
        self.announcement_ = encode(MsgType.ANNOUNCE, self.session, rnd,
                                    {"model_digest": model_digest, "config_digest": self.config.digest,
                                     "roster_digest": self.roster_digest_, "nonce": nonce, "retry": retry},
                                    self.keys.sign)
        return self.announcement_

    def receive(self, data: bytes) -> None:
        """Accept a client message (an upload, or a sketch commitment); raises on anything invalid."""
        msg = decode(data, max_bytes=self.config.max_message_bytes, max_dim=self.config.max_words,
                     session=self.session, expect=(self.upload_type, MsgType.SKETCH_COMMIT))
        _check_round(msg, self.round_)
        msg.verify()
        cid = msg.sender
        if cid not in self.members_:
            raise NotEnrolledError("the sender's key is not in the roster of the current round")
        if msg.type == MsgType.SKETCH_COMMIT:
            if self.config.mode != "sketch":
                raise ProtocolError("sketch commitments are not used in exact mode")
            if self.participants_ is None:
                raise ProtocolError("sketch commitment before the participant set is agreed")
            if cid not in self.participants_:
                raise NotAParticipantError("sketch commitment from a client outside the agreed participant set")
            if cid in self.sketch_commits_:
                raise ReplayError("second sketch commitment from the same client in the current round")
            self.sketch_commits_[cid] = msg.body["commitment"]
        else:
            if cid in self.uploads_:
                raise ReplayError("second upload from the same client in the current round")
            if cid in self.banned_ and not self._replaying:  # (a replayed upload was accepted before the ban)
                raise SketchCheatError("this client's sketch commitment contradicted its upload in an earlier round: "
                                       "its uploads are refused for the rest of the deployment",
                                       cheaters=(cid,))
            if self.closed_:
                raise RoundClosedError("uploads are closed for the current round (the participant list is fixed)")
            if msg.body["model_digest"] != self.model_digest_:
                raise ModelInconsistencyError("upload is for a model other than the one announced")
            own_nonce = msg.body["nonces"][NONCE_BYTES * self.role:NONCE_BYTES * (self.role + 1)]
            if own_nonce != self.nonce_:
                raise ReplayError("upload names another announcement of this round (captured before a restart?)")
            has_c = bool(msg.body["commitment"])
            if has_c != (self.config.mode == "exact"):
                raise MalformedMessageError(f"{self.config.mode} mode {'needs' if not has_c else 'takes no'} "
                                            "commitment in the upload")
            if bool(msg.body["proof"]) != self.config.range_proof:
                raise MalformedMessageError(f"this deployment {'needs' if self.config.range_proof else 'takes no'} "
                                            "range proof in the upload")
            self.uploads_[cid] = self._accept_upload(msg)
            if self.config.mode == "exact":  # the consistency point now, so closing the round stays O(n) cheap
                self._check_cache[cid] = self._check_value(cid)
            if self.config.range_proof:  # the verifier message now; the shares themselves are not kept
                share = self.uploads_[cid].pop("proof")
                self._validity_cache[cid] = self._validity_value(cid, share)
                if self.config.mode == "sketch":  # its share of each code, for the per-client sketch check
                    assert self.config.proof_layout is not None
                    self._code_shares[cid] = validity.code_shares(share.bits, self.config.proof_layout)
        self._persist(["msg", bytes(data)])

    def close(self) -> None:
        """Stop accepting uploads for the current round (later ones get :class:`RoundClosedError`)."""
        if self.round_ is None:
            raise ProtocolError("no round is open")
        if not self.closed_:
            self.closed_ = True
            self._persist(["close"])

    def participants(self) -> bytes:
        """Close the round and return the signed PARTICIPANTS message of every upload this server accepted.

        In exact mode it also carries two consistency points per client (in id order). With ``Y_i`` and
        ``K_i`` the message parts (``sum_k v_k G_k``) of the client's masked vector and pad, S0 sends
        ``(C_i - Y_i, Y_i + s_i H)`` and S1 sends ``(r_i H - K_i, C'_i + K_i)``. The pairs are equal exactly
        when both commitments open to ``y_i - k_i``, the vector the masked upload carries; for an honest
        client the peer computes each point itself from what it holds, so they reveal nothing about ``x_i``.
        """
        self.close()
        ids = sorted(self.uploads_)
        checks, proofs = self._checks(), self._validity_cache
        return encode(MsgType.PARTICIPANTS, self.session, self._current_round,
                      {"ids": ids, "checks": b"".join(checks[c] + proofs.get(c, b"") for c in ids)}, self.keys.sign)

    def _checks(self) -> dict[bytes, bytes]:
        if self.config.mode != "exact":
            return dict.fromkeys(self.uploads_, b"")
        for c in self.uploads_.keys() - self._check_cache.keys():  # normally computed as each upload arrives
            self._check_cache[c] = self._check_value(c)
        return self._check_cache

    @property
    def participants_max_bytes(self) -> int:
        """Size limit of the peer's PARTICIPANTS: 64 MiB, or more when range-proof verifier messages need it."""
        lay = self.config.proof_layout
        per_id = 35 + 2 * crypto.POINT_BYTES + (lay.verifier_bytes if lay is not None else 0)
        return max(64 * 2**20, per_id * len(self.members_) + 4096)

    def agree(self, peer_participants: bytes) -> tuple[bytes, ...]:
        """Fix the participant set to (own accepted set) intersected with the peer's signed set."""
        msg = decode(peer_participants, max_bytes=self.participants_max_bytes, max_dim=2**21, session=self.session,
                     expect=(MsgType.PARTICIPANTS,))
        _check_round(msg, self.round_)
        try:
            msg.verify(expected_sender=self.peer)
        except SignatureError as err:
            raise SignatureError("participant set is not signed by the peer server") from err
        if self.participants_ is not None:
            raise ProtocolError("the participant set of the current round is already fixed")
        self.close()
        peer_ids, blob = msg.body["ids"], msg.body["checks"]
        pair_width = 2 * crypto.POINT_BYTES if self.config.mode == "exact" else 0
        lay = self.config.proof_layout
        width = pair_width + (lay.verifier_bytes if lay is not None else 0)
        if len(blob) != width * len(peer_ids):
            raise MalformedMessageError(f"PARTICIPANTS carries {len(blob)} bytes of checks for {len(peer_ids)} ids; "
                                        f"expected {width} per id")
        both = set(self.uploads_) & set(peer_ids)
        rows = {c: blob[width * j:width * (j + 1)] for j, c in enumerate(peer_ids)}
        if pair_width:
            own = self._checks()
            self.inconsistent_ = tuple(sorted(c for c in both if own[c] != rows[c][:pair_width]))
            self._peer_checks = {c: rows[c][:pair_width] for c in self.inconsistent_}
            if self.inconsistent_:
                log.warning("round %d: %d uploads failed the consistency check (commitments disagree with each "
                            "other or with the masked vector); excluded", self.round_, len(self.inconsistent_))
            both -= set(self.inconsistent_)
        if lay is not None:  # both servers sum the same two verifier messages, so they reach the same verdict
            self.invalid_ = tuple(sorted(c for c in both if not validity.decide(
                self._validity_cache[c], rows[c][pair_width:], lay=lay)))
            if self.invalid_:
                log.warning("round %d: %d uploads failed the range proof (codes outside [0, Q)); excluded",
                            self.round_, len(self.invalid_))
            both -= set(self.invalid_)
        # batch policy: a client is aggregated only with its whole batch
        split = self._round_roster.incomplete_batches(both) if self._round_roster is not None else set()
        if split:
            log.warning("round %d: %d clients left out because a member of their batch is missing", self.round_,
                        len(split))
        agreed = tuple(sorted(both - split))
        # only roster members are named: a peer listing keys nobody enrolled gets no signed claim about them
        one_side = ((set(self.uploads_) | set(peer_ids)) & self.members_) - both - set(self.inconsistent_) \
            - set(self.invalid_)
        self.excluded_ = tuple(sorted([(c, 1) for c in self.inconsistent_] + [(c, 2) for c in one_side]
                                      + [(c, 3) for c in split] + [(c, 4) for c in self.invalid_]))
        threshold = self.config.threshold_for(len(self.members_))
        if len(agreed) < threshold:
            raise TooFewParticipantsError(
                f"{len(agreed)} clients reached both servers (own {len(self.uploads_)}, peer lists "
                f"{len(msg.body['ids'])}); at least min_participants={threshold} are required")
        self.config.quantizer.check_capacity(len(agreed))
        self.participants_ = agreed
        self._aggregate_uploads(agreed)
        self._persist(["agree", bytes(peer_participants)])
        log.info("round %d: %d of %d uploads in the agreed set", self.round_, len(agreed), len(self.uploads_))
        return agreed

    def _require_agreed(self) -> tuple[bytes, ...]:
        if self.participants_ is None:
            raise ProtocolError("participant set not agreed yet (call agree with the peer's PARTICIPANTS)")
        return self.participants_

    def _seal_parts(self) -> tuple[tuple[bytes, ...], bytes, bytes]:
        if self.config.mode != "sketch":
            raise ProtocolError("seals are only used in sketch mode")
        agreed = self._require_agreed()
        assert self._value is not None  # set with the agreed participant set
        value_digest = sha256(self._value.astype("<u4").tobytes())
        # secret and deterministic (a restarted server re-derives it): only this server can compute it
        nonce = sha256(b"janus/seal-nonce", self.keys.sign.to_bytes(), self.session,
                       self._current_round.to_bytes(8, "little"), value_digest)
        return agreed, value_digest, nonce

    def seal_commit(self) -> bytes:
        """Sketch mode, step 1: signed ``H(value digest, nonce)``, sent to the peer before either reveals."""
        agreed, value_digest, nonce = self._seal_parts()
        return encode(MsgType.SEAL_COMMIT, self.session, self._current_round,
                      {"participants_digest": participants_digest(agreed), "n": len(agreed),
                       "commitment": seal_commitment(value_digest, nonce)}, self.keys.sign)

    def seal(self, peer_commit: bytes) -> bytes:
        """Sketch mode, step 2: reveal (value digest, nonce) once the peer's SEAL_COMMIT is held.

        The returned SEAL also carries the peer's commitment, so a client can check that the peer's
        reveal opens what this server received before it revealed: neither server can choose its
        value after seeing the other's, and the challenge (hash of both reveals) cannot be ground.
        """
        agreed, value_digest, nonce = self._seal_parts()
        msg = decode(peer_commit, max_bytes=4096, session=self.session, expect=(MsgType.SEAL_COMMIT,))
        _check_round(msg, self.round_)
        msg.verify(expected_sender=self.peer)
        if (msg.body["participants_digest"], msg.body["n"]) != (participants_digest(agreed), len(agreed)):
            raise ParticipantSetMismatchError("the peer committed to a seal for another participant set")
        if self._peer_seal_commit is not None and self._peer_seal_commit != msg.body["commitment"]:
            raise ProtocolError("the peer already committed to a different seal in the current round")
        if self._peer_seal_commit is None:
            self._peer_seal_commit, self.peer_seal_commit_msg_ = msg.body["commitment"], bytes(peer_commit)
            self._persist(["seal", bytes(peer_commit)])
        return encode(MsgType.SEAL, self.session, self._current_round,
                      {"participants_digest": participants_digest(agreed), "n": len(agreed),
                       "value_digest": value_digest, "nonce": nonce, "peer_commitment": self._peer_seal_commit},
                      self.keys.sign)

    # --- sketch mode with the range proof: per-client check of the sketch commitments ----------------
    def _sketch_challenge(self, peer_seal: bytes) -> bytes:
        if self.config.mode != "sketch" or self.config.proof_layout is None:
            raise ProtocolError("the per-client sketch check needs sketch mode with range_proof")
        if self.peer_seal_commit_msg_ is None:
            raise ProtocolError("the seals of the current round are not exchanged yet")
        own = decode(self.seal(self.peer_seal_commit_msg_), max_bytes=4096, session=self.session)
        other = decode(peer_seal, max_bytes=4096, session=self.session, expect=(MsgType.SEAL,))
        other.verify(expected_sender=self.peer)
        m0, m1 = (own, other) if self.role == 0 else (other, own)
        return read_seals(m0, m1, session=self.session, rnd=self._current_round)

    def _own_sketch_pairs(self, peer_seal: bytes) -> dict[bytes, bytes]:
        """Per participant: S0 ``(C_i - M(U0), M(U0) + s_i H)``, S1 ``(r_i H + M(U1), C'_i - M(U1))``.

        ``U0 + U1 = A x_i`` (shares of the projected codes, from the range proof's bit shares), so the pairs
        are equal iff both sketch commitments open to ``A x_i`` with the randomness each server knows; for
        an honest client each point is one the peer computes itself.
        """
        if self._sketch_pairs is not None:
            return self._sketch_pairs
        challenge = self._sketch_challenge(peer_seal)
        agreed = self._require_agreed()
        missing = [c for c in agreed if c not in self.sketch_commits_]
        if missing:
            raise IncompleteRoundError(f"{len(missing)} participants have not sent their sketch commitment")
        pairs = {}
        for cid in agreed:
            u = project_shares(self._code_shares[cid], challenge, self.config.sketch_k)
            m = crypto.commit_message(np.array(u, dtype=object), self.config.value_bits)
            commit = self.sketch_commits_[cid]
            if self.role == 0:
                pairs[cid] = point_sub(commit, m) + point_add(m, point_mul(self.uploads_[cid]["s"], H))
            else:
                r = crypto.expand_scalar(self.uploads_[cid]["seed"], b"r")
                pairs[cid] = point_add(point_mul(r, H), m) + point_sub(commit, m)
        self._sketch_pairs = pairs
        return pairs

    def sketch_pairs(self, peer_seal: bytes) -> bytes:
        """Sketch mode with the range proof: the signed SKETCH_CHECK of every participant's pair.

        Needs the peer's SEAL of the round and every participant's sketch commitment
        (:class:`IncompleteRoundError` otherwise).
        """
        pairs = self._own_sketch_pairs(peer_seal)
        agreed = self._require_agreed()
        return encode(MsgType.SKETCH_CHECK, self.session, self._current_round,
                      {"ids": agreed, "checks": b"".join(pairs[c] for c in agreed)}, self.keys.sign)

    def check_sketch(self, peer_seal: bytes, peer_pairs: bytes) -> tuple[bytes, ...]:
        """Compare the peer's SKETCH_CHECK with this server's pairs; returns the clients whose differ.

        Both servers compare the same pairs, so they name the same clients. With none, :meth:`aggregate`
        may release the round's aggregate; otherwise it refuses (:class:`SketchCheatError`), no aggregate
        of the round exists, and the named clients' uploads are refused in every later round (kept in the
        ``state_dir`` chain state; a retry on the version completes without them).
        """
        own = self._own_sketch_pairs(peer_seal)
        msg = decode(peer_pairs, max_bytes=self.participants_max_bytes, max_dim=2**21, session=self.session,
                     expect=(MsgType.SKETCH_CHECK,))
        _check_round(msg, self.round_)
        msg.verify(expected_sender=self.peer)
        agreed = self._require_agreed()
        width = 2 * crypto.POINT_BYTES
        if msg.body["ids"] != agreed or len(msg.body["checks"]) != width * len(agreed):
            raise ParticipantSetMismatchError("the peer's sketch check names another participant set")
        blob = msg.body["checks"]
        self.cheaters_ = tuple(c for j, c in enumerate(agreed) if blob[width * j:width * (j + 1)] != own[c])
        self.sketch_checked_ = True
        self._persist(["sketchcheck", bytes(peer_seal), bytes(peer_pairs)])  # a restart keeps the verdict
        if self.cheaters_:
            self.banned_ |= set(self.cheaters_)
            self._save_chain()
            log.warning("round %d: %d participants sent a sketch commitment that contradicts their upload (%s); no "
                        "aggregate is released and their uploads are refused from now on", self.round_,
                        len(self.cheaters_), ", ".join(c.hex()[:16] for c in self.cheaters_))
        return self.cheaters_

    def aggregate(self) -> bytes:
        """Signed aggregate message of this server for the agreed participant set."""
        agreed = self._require_agreed()
        commitment = self._commitment
        if self.config.mode == "sketch" and self.config.proof_layout is not None:
            if self.cheaters_:
                raise SketchCheatError(f"{len(self.cheaters_)} participants sent a sketch commitment that contradicts "
                                       "their upload: no aggregate for this round", cheaters=self.cheaters_)
            if not self.sketch_checked_:
                raise IncompleteRoundError("the per-client sketch check with the peer has not run yet")
        if self.config.mode == "sketch":
            missing = [c for c in agreed if c not in self.sketch_commits_]
            if missing:
                raise IncompleteRoundError(f"{len(missing)} participants have not sent their sketch commitment")
            commitment = crypto.point_sum(self.sketch_commits_[c] for c in agreed)
        # the two pairs compared for each client excluded as inconsistent (S0's, then S1's): the client
        # recomputes both from its secrets and sees which server's pair is false
        pairs = [(self._checks()[c], self._peer_checks[c]) for c, b in self.excluded_ if b == 1]
        checks = b"".join(own + peer if self.role == 0 else peer + own for own, peer in pairs)
        if self.model_digest_ == self.head_ and not self.head_released_:
            self.head_released_ = True  # no second round on this model version (see announce)
            self._save_chain()
        return encode(self.aggregate_type, self.session, self._current_round,
                      {"participants_digest": participants_digest(agreed), "n": len(agreed),
                       "model_digest": self.model_digest_, "value": self._value, "commitment": commitment,
                       "randomness": crypto.scalar_bytes(self._randomness), "ids": agreed,
                       "excluded": [c for c, _ in self.excluded_], "reasons": bytes(b for _, b in self.excluded_),
                       "checks": checks},
                      self.keys.sign)

    def _open_seed(self, msg: Message) -> bytes:
        return self.keys.kem.open_seed(msg.body["seed_ct"],
                                       _seed_context(self.session, msg.round, msg.sender, self.role))

    @abstractmethod
    def _accept_upload(self, msg: Message) -> dict:
        """Check and store the role-specific content of one upload."""

    @abstractmethod
    def _check_value(self, cid: bytes) -> bytes:
        """Exact mode: this server's consistency value for client ``cid`` (see :meth:`participants`)."""

    def _proof_context(self, cid: bytes) -> bytes:
        return b"janus/validity" + self.session + self._current_round.to_bytes(8, "little") + cid

    def _verifier_message(self, cid: bytes, share: validity.Share, term) -> bytes:
        """The range-proof verifier message of this server for ``cid`` (``term``: its share of the linked value)."""
        cfg, lay = self.config, self.config.proof_layout
        assert lay is not None and self._query_key is not None
        if cfg.mode == "exact":
            width, slots = crypto.slot_layout(cfg.value_bits)
            link = validity.link_vector(share.bits, lay, term=term, slot_width=width, slots=slots)
        else:
            link = validity.link_vector(share.bits, lay, term=term, modulus=cfg.quantizer.modulus_range)
        return validity.verifier_share(share, role=self.role, lay=lay, key=self._query_key,
                                       context=self._proof_context(cid), link=link)

    @abstractmethod
    def _validity_value(self, cid: bytes, proof: validity.Share) -> bytes:
        """Range proof: this server's verifier message for client ``cid`` from the upload's ``proof`` field."""

    @abstractmethod
    def _aggregate_uploads(self, agreed: tuple[bytes, ...]) -> None:
        """Set ``_value``, ``_randomness`` and ``_commitment`` for the agreed set."""


class AggregationServer(_Server):
    """S0: sums the masked updates and the commitments ``C_i``, and the randomness ``s_i`` of ``C'_i``.

    Parameters: ``config``, ``keys`` (this server's :class:`ServerKeys`), ``session``, ``peer`` (S1's
    Ed25519 public key), ``state_dir`` (directory for the crash-safe round log, or None).
    """

    role = 0
    upload_type = MsgType.UPLOAD0
    aggregate_type = MsgType.AGGREGATE0

    def _accept_upload(self, msg: Message) -> dict:
        words = self.config.masked_words
        if msg.body["masked"].shape != (words,):
            raise MalformedMessageError(f"masked update has {msg.body['masked'].size} words, "
                                        f"the round expects {words}")
        up = {"masked": msg.body["masked"], "commitment": msg.body["commitment"]}
        if self.config.mode == "exact":
            try:
                up["scalars"] = crypto.words_to_scalars(msg.body["masked"])
            except JanusError as err:
                raise MalformedMessageError(f"masked update: {err}") from err
        seed = self._open_seed(msg)
        up["s"] = crypto.expand_scalar(seed, b"s")
        if self.config.proof_layout is not None:
            up["proof"] = validity.leader_share(msg.body["proof"], lay=self.config.proof_layout, seed0=seed)
        return up

    def _validity_value(self, cid: bytes, proof: validity.Share) -> bytes:
        up = self.uploads_[cid]
        term = up["scalars"] if self.config.mode == "exact" else up["masked"].astype(np.int64)
        return self._verifier_message(cid, proof, np.asarray(term, dtype=object))

    def _check_value(self, cid: bytes) -> bytes:
        up = self.uploads_[cid]
        y = crypto.msm(up["scalars"])
        return point_sub(up["commitment"], y) + point_add(y, point_mul(up["s"], H))

    def _aggregate_uploads(self, agreed: tuple[bytes, ...]) -> None:
        if self.config.mode == "exact":
            self._value = crypto.scalars_to_words(
                sum(v) % crypto.GROUP_ORDER for v in zip(*(self.uploads_[c]["scalars"] for c in agreed), strict=True))
        else:
            modulus = self.config.quantizer.modulus_range
            acc = np.zeros(self.config.dim, dtype=np.uint64)
            for c in agreed:
                acc += self.uploads_[c]["masked"]
                acc &= np.uint64(modulus - 1)
            self._value = acc.astype(np.uint32)
        self._randomness = sum(self.uploads_[c]["s"] for c in agreed) % crypto.GROUP_ORDER
        if self.config.mode == "exact":
            self._commitment = crypto.point_sum(self.uploads_[c]["commitment"] for c in agreed)


class MaskServer(_Server):
    """S1: decrypts the seeds, sums the masks ``k_i``, the randomness ``r_i`` and the commitments ``C'_i``.

    Parameters as for :class:`AggregationServer` (``peer`` is S0's Ed25519 public key).
    """

    role = 1
    upload_type = MsgType.UPLOAD1
    aggregate_type = MsgType.AGGREGATE1

    def _accept_upload(self, msg: Message) -> dict:
        up = {"seed": self._open_seed(msg), "commitment": msg.body["commitment"]}
        if self.config.proof_layout is not None:
            up["proof"] = validity.helper_share(msg.body["proof"], lay=self.config.proof_layout, seed1=up["seed"])
        return up

    def _validity_value(self, cid: bytes, proof: validity.Share) -> bytes:
        seed = self.uploads_[cid]["seed"]
        if self.config.mode == "exact":
            term = np.array([-k for k in self._pad(cid)], dtype=object)
        else:
            term = -crypto.expand_mask(seed, self.config.dim, self.config.quantizer.modulus_range).astype(np.int64)
        return self._verifier_message(cid, proof, np.asarray(term, dtype=object))

    def _pad(self, cid: bytes) -> list[int]:
        return crypto.expand_scalars(self.uploads_[cid]["seed"], b"mask-scalars", self.config.mask_scalars)

    def _check_value(self, cid: bytes) -> bytes:
        up = self.uploads_[cid]
        k = crypto.msm(self._pad(cid))
        return point_sub(point_mul(crypto.expand_scalar(up["seed"], b"r"), H), k) + point_add(up["commitment"], k)

    def _aggregate_uploads(self, agreed: tuple[bytes, ...]) -> None:
        if self.config.mode == "exact":
            self._value = crypto.scalars_to_words(
                sum(v) % crypto.GROUP_ORDER for v in zip(*(self._pad(c) for c in agreed), strict=True))
        else:
            modulus = self.config.quantizer.modulus_range
            acc = np.zeros(self.config.dim, dtype=np.uint64)
            for c in agreed:
                acc += crypto.expand_mask(self.uploads_[c]["seed"], self.config.dim, modulus)
                acc &= np.uint64(modulus - 1)
            self._value = acc.astype(np.uint32)
        self._randomness = sum(crypto.expand_scalar(self.uploads_[c]["seed"], b"r") for c in agreed) \
            % crypto.GROUP_ORDER
        if self.config.mode == "exact":
            self._commitment = crypto.point_sum(self.uploads_[c]["commitment"] for c in agreed)
