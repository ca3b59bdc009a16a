"""Cryptographic building blocks, all from audited libraries (``cryptography`` and ``rbcl``).

* Ed25519 signatures, X25519 + HKDF-SHA256 + AES-256-GCM seed encryption (``cryptography``);
* ChaCha20 keystream as the mask PRG (``cryptography``);
* vector Pedersen commitments over ristretto255 (``rbcl``/libsodium), with generators obtained by
  hash-to-group so nobody knows a discrete log between any two of them.
"""

from __future__ import annotations

import hashlib
import os
from dataclasses import dataclass
from functools import lru_cache

import numpy as np
import rbcl
from cryptography.exceptions import InvalidSignature, InvalidTag
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey
from cryptography.hazmat.primitives.asymmetric.x25519 import X25519PrivateKey, X25519PublicKey
from cryptography.hazmat.primitives.ciphers import Cipher, algorithms
from cryptography.hazmat.primitives.ciphers.aead import AESGCM
from cryptography.hazmat.primitives.kdf.hkdf import HKDF

from janus_sa.errors import DecryptionError, InvalidGroupElementError, SignatureError

#: Order of the ristretto255 group.
GROUP_ORDER = 2**252 + 27742317777372353535851937790883648493
POINT_BYTES = 32
SCALAR_BYTES = 32
SEED_BYTES = 32
#: ephemeral X25519 public key (32) + AES-GCM nonce (12) + seed (32) + tag (16)
SEED_CIPHERTEXT_BYTES = 32 + 12 + SEED_BYTES + 16
IDENTITY = bytes(POINT_BYTES)
_RAW = serialization.Encoding.Raw
_RAWPUB = serialization.PublicFormat.Raw
_RAWPRIV = serialization.PrivateFormat.Raw


def sha256(*parts: bytes) -> bytes:
    """SHA-256 of the length-prefixed concatenation of ``parts`` (unambiguous framing)."""
    h = hashlib.sha256()
    for p in parts:
        h.update(len(p).to_bytes(8, "little"))
        h.update(p)
    return h.digest()


def model_digest(model: bytes | np.ndarray) -> bytes:
    """32-byte digest of a model's parameters (a float array is hashed as little-endian float64)."""
    if isinstance(model, np.ndarray):
        model = np.ascontiguousarray(model, dtype="<f8").tobytes()
    return sha256(b"janus/model", bytes(model))


# --- keys -------------------------------------------------------------------------------------
class SigningKey:
    """An Ed25519 identity. ``public`` (32 bytes) is the party's id on the wire."""

    def __init__(self, private: Ed25519PrivateKey | None = None) -> None:
        self._key = private or Ed25519PrivateKey.generate()
        self.public = self._key.public_key().public_bytes(_RAW, _RAWPUB)

    @classmethod
    def from_bytes(cls, raw: bytes) -> SigningKey:
        """Load a key from its 32 raw private bytes."""
        return cls(Ed25519PrivateKey.from_private_bytes(raw))

    def to_bytes(self) -> bytes:
        """The raw private key bytes (keep them secret)."""
        return self._key.private_bytes(_RAW, _RAWPRIV, serialization.NoEncryption())

    def sign(self, data: bytes) -> bytes:
        """Ed25519 signature (64 bytes) on ``data``."""
        return self._key.sign(data)


def verify_signature(public: bytes, signature: bytes, data: bytes) -> None:
    """Raise :class:`SignatureError` unless ``signature`` is ``public``'s signature on ``data``."""
    try:
        Ed25519PublicKey.from_public_bytes(public).verify(signature, data)
    except (InvalidSignature, ValueError) as err:
        raise SignatureError("signature does not verify under the sender's Ed25519 key") from err


_P = 2**255 - 19
_D = -121665 * pow(121666, _P - 2, _P) % _P
_SQRT_M1 = pow(2, (_P - 1) // 4, _P)


def _ed_double(x: int, y: int, z: int) -> tuple[int, int, int]:
    """Projective doubling on -x^2 + y^2 = 1 + d x^2 y^2 (RFC 8032, 5.1.4 "dbl-2008-hwcd"), no inversion."""
    b, c, d = (x + y) ** 2 % _P, x * x % _P, y * y % _P
    e = (-c) % _P
    f = (e + d) % _P
    j = (f - 2 * z * z) % _P
    return (b - c - d) * j % _P, f * (e - d) % _P, f * j % _P


def _has_small_order(y: int) -> bool:
    """Whether the point with coordinate ``y`` (either x) satisfies ``8 P = O`` (three projective doublings)."""
    u, v = (y * y - 1) % _P, (_D * y * y + 1) % _P
    x = u * pow(v, 3, _P) * pow(u * pow(v, 7, _P), (_P - 5) // 8, _P) % _P
    if v * x * x % _P == (-u) % _P:
        x = x * _SQRT_M1 % _P
    if v * x * x % _P != u % _P:
        return False  # not on the curve
    px, py, pz = x, y, 1
    for _ in range(3):
        px, py, pz = _ed_double(px, py, pz)
    return px == 0 and py == pz  # the identity (0 : 1 : 1)


#: ``y`` of the eight points of order dividing 8: the identity (1), order 2 (-1), order 4 (0), order 8 (+-y8)
_Y8 = int.from_bytes(bytes.fromhex("26e8958fc2b227b045c3f489f2ef98f0d5dfac05d3c63339b13802886d53fc05"), "little")
SMALL_ORDER_Y = frozenset({0, 1, _P - 1, _Y8, _P - _Y8})


def is_weak_ed25519_key(public: bytes) -> bool:
    """True for an Ed25519 public key no one should enrol: a non-canonical encoding or a point of small order.

    The identity and the other seven points of order dividing 8 accept signatures anyone can forge. As
    libsodium does, the check compares ``y`` (RFC 8032, 5.1.3: the low 255 bits) with the ``y`` of those
    points (:data:`SMALL_ORDER_Y`, each checked by :func:`_has_small_order` in the tests) and refuses
    ``y >= p``. An encoding that is no curve point fails every signature check anyway.
    """
    if len(public) != 32:
        return True
    y = int.from_bytes(public, "little") & ((1 << 255) - 1)
    return y >= _P or y in SMALL_ORDER_Y


class KemKey:
    """An X25519 key pair used to receive encrypted seeds."""

    def __init__(self, private: X25519PrivateKey | None = None) -> None:
        self._key = private or X25519PrivateKey.generate()
        self.public = self._key.public_key().public_bytes(_RAW, _RAWPUB)

    @classmethod
    def from_bytes(cls, raw: bytes) -> KemKey:
        """Load a key from its 32 raw private bytes."""
        return cls(X25519PrivateKey.from_private_bytes(raw))

    def to_bytes(self) -> bytes:
        """The raw private key bytes (keep them secret)."""
        return self._key.private_bytes(_RAW, _RAWPRIV, serialization.NoEncryption())

    def shared_secret(self, peer_public: bytes) -> bytes:
        """X25519 with another party's public key (S0 and S1 derive the same secret from each other's keys)."""
        try:
            return self._key.exchange(X25519PublicKey.from_public_bytes(peer_public))
        except ValueError as err:
            raise DecryptionError("the peer's X25519 key is invalid or of small order") from err

    def open_seed(self, ciphertext: bytes, context: bytes) -> bytes:
        """Decrypt a :func:`seal_seed` ciphertext; ``context`` must equal the sender's."""
        if len(ciphertext) != SEED_CIPHERTEXT_BYTES:
            raise DecryptionError(f"seed ciphertext must be {SEED_CIPHERTEXT_BYTES} bytes")
        eph, nonce, body = ciphertext[:32], ciphertext[32:44], ciphertext[44:]
        try:
            shared = self._key.exchange(X25519PublicKey.from_public_bytes(eph))
            key = _ecies_key(shared, eph, self.public)
            return AESGCM(key).decrypt(nonce, body, context)
        except (InvalidTag, ValueError) as err:
            raise DecryptionError("encrypted seed failed authentication") from err


def _ecies_key(shared: bytes, eph_public: bytes, recipient_public: bytes) -> bytes:
    return HKDF(algorithm=hashes.SHA256(), length=32, salt=None,
                info=b"janus/ecies/v1" + eph_public + recipient_public).derive(shared)


def seal_seed(recipient_public: bytes, seed: bytes, context: bytes) -> bytes:
    """Ephemeral-static X25519 + HKDF-SHA256 + AES-256-GCM; ``context`` is bound as associated data."""
    eph = X25519PrivateKey.generate()
    eph_public = eph.public_key().public_bytes(_RAW, _RAWPUB)
    key = _ecies_key(eph.exchange(X25519PublicKey.from_public_bytes(recipient_public)), eph_public,
                     recipient_public)
    nonce = os.urandom(12)
    return eph_public + nonce + AESGCM(key).encrypt(nonce, seed, context)


def new_seed() -> bytes:
    """A fresh one-time seed from the OS random source (``SEED_BYTES`` bytes)."""
    return os.urandom(SEED_BYTES)


# --- PRG -------------------------------------------------------------------------------------
def derive(seed: bytes, label: bytes, length: int = 32) -> bytes:
    """HKDF-SHA256 expansion of a one-time seed into an independent key for ``label``."""
    return HKDF(algorithm=hashes.SHA256(), length=length, salt=None, info=b"janus/" + label).derive(seed)


def keystream(key: bytes, n_bytes: int, stream: int = 0) -> bytes:
    """``n_bytes`` of ChaCha20 keystream under a 32-byte key; ``stream`` selects the nonce."""
    nonce = stream.to_bytes(16, "little")
    return Cipher(algorithms.ChaCha20(key, nonce), mode=None).encryptor().update(bytes(n_bytes))


def expand_mask(seed: bytes, length: int, modulus: int) -> np.ndarray:
    """Mask vector in ``Z_modulus^length`` (uint32) expanded from ``seed`` with ChaCha20."""
    words = np.frombuffer(keystream(derive(seed, b"mask"), 4 * length), dtype="<u4")
    return (words & np.uint32(modulus - 1)).astype(np.uint32)


def expand_scalars(seed: bytes, label: bytes, count: int) -> list[int]:
    """``count`` uniform scalars mod the group order from ChaCha20 under ``HKDF(seed, label)`` (64 bytes each)."""
    raw = keystream(derive(seed, label), 64 * count)
    return [int.from_bytes(raw[64 * j:64 * j + 64], "little") % GROUP_ORDER for j in range(count)]


def expand_scalar(seed: bytes, label: bytes) -> int:
    """Uniform scalar mod the group order (64 bytes reduced: bias below 2**-250)."""
    return int.from_bytes(derive(seed, label, 64), "little") % GROUP_ORDER


# --- ristretto255 group ------------------------------------------------------------------------
def scalar_bytes(s: int) -> bytes:
    """Canonical 32-byte little-endian encoding of ``s`` mod the group order."""
    return (s % GROUP_ORDER).to_bytes(SCALAR_BYTES, "little")


def scalar_from_bytes(raw: bytes) -> int:
    """Decode a canonical scalar; raise :class:`InvalidGroupElementError` otherwise."""
    s = int.from_bytes(raw, "little")
    if len(raw) != SCALAR_BYTES or s >= GROUP_ORDER:
        raise InvalidGroupElementError("scalar must be a canonical 32-byte encoding below the group order")
    return s


def check_point(raw: bytes) -> bytes:
    """Return ``raw`` if it is a canonical ristretto255 point; raise :class:`InvalidGroupElementError` otherwise."""
    if len(raw) != POINT_BYTES or not rbcl.crypto_core_ristretto255_is_valid_point(raw):
        raise InvalidGroupElementError("not a canonical ristretto255 point encoding")
    return raw


def point_add(a: bytes, b: bytes) -> bytes:
    """Sum of two ristretto255 points (32-byte encodings)."""
    return rbcl.crypto_core_ristretto255_add(a, b)


def point_mul(s: int, p: bytes) -> bytes:
    """Scalar multiple ``s * p`` of a ristretto255 point (the identity for ``s = 0``)."""
    s %= GROUP_ORDER
    return IDENTITY if s == 0 else rbcl.crypto_scalarmult_ristretto255(s.to_bytes(32, "little"), p)


def point_sub(a: bytes, b: bytes) -> bytes:
    """Difference ``a - b`` of two ristretto255 points."""
    return rbcl.crypto_core_ristretto255_sub(a, b)


def scalars_to_words(scalars) -> np.ndarray:
    """Scalars mod the group order as little-endian uint32 words (8 per scalar, canonical encodings)."""
    raw = b"".join((s % GROUP_ORDER).to_bytes(SCALAR_BYTES, "little") for s in scalars)
    return np.frombuffer(raw, dtype="<u4").astype(np.uint32)


def words_to_scalars(words: np.ndarray) -> list[int]:
    """Inverse of :func:`scalars_to_words`; raise :class:`InvalidGroupElementError` on a non-canonical scalar."""
    raw = np.ascontiguousarray(words, dtype="<u4").tobytes()
    if len(raw) % SCALAR_BYTES:
        raise InvalidGroupElementError("a scalar vector must be whole 8-word (32-byte) scalars")
    out = [int.from_bytes(raw[j:j + SCALAR_BYTES], "little") for j in range(0, len(raw), SCALAR_BYTES)]
    if any(s >= GROUP_ORDER for s in out):
        raise InvalidGroupElementError("scalar vector holds a value at or above the group order")
    return out


def point_sum(points) -> bytes:
    """Sum of an iterable of ristretto255 points (the identity when empty)."""
    acc = IDENTITY
    for p in points:
        acc = point_add(acc, p)
    return acc


def hash_to_group(label: bytes) -> bytes:
    """Ristretto255 point ``from_hash(SHA-512("janus/gen/" + label))``, with no known discrete log."""
    return rbcl.crypto_core_ristretto255_from_hash(hashlib.sha512(b"janus/gen/" + label).digest())


@lru_cache(maxsize=8)
def generators(count: int) -> tuple[bytes, ...]:
    """``G_0 .. G_{count-1}`` for the message slots (``H`` is :data:`H` below)."""
    return tuple(hash_to_group(b"G" + j.to_bytes(8, "little")) for j in range(count))


H = hash_to_group(b"H")


def slot_layout(value_bits: int) -> tuple[int, int]:
    """(slot width, slots per scalar) so that packing values below ``2**value_bits`` is injective.

    Differences of two honest or cheating values are below ``2**value_bits`` in absolute value, so a
    slot of ``value_bits + 1`` bits keeps them apart, and ``slots * width <= 251`` keeps the packed
    integer below the group order: the packing map is injective, hence binding carries over.
    """
    width = value_bits + 1
    slots = 251 // width
    if slots < 1:
        raise ValueError(f"values of {value_bits} bits do not fit one scalar")
    return width, slots


def pack(values: np.ndarray, value_bits: int) -> list[int]:
    """Pack integer values (|v| < 2**value_bits) into scalars, ``slots`` values per scalar."""
    width, slots = slot_layout(value_bits)
    vals = [int(v) for v in np.asarray(values).ravel()]
    out = []
    for start in range(0, len(vals), slots):
        acc = 0
        for k, v in enumerate(vals[start:start + slots]):
            acc += v << (width * k)
        out.append(acc % GROUP_ORDER)
    return out


def unpack(scalars, value_bits: int, count: int) -> np.ndarray:
    """Inverse of :func:`pack` for non-negative slot values: the first ``count`` slots as int64.

    Each slot is read as its ``value_bits + 1`` bits; bits above the last slot are ignored.
    """
    width, slots = slot_layout(value_bits)
    mask = (1 << width) - 1
    out = [(s >> (width * k)) & mask for s in scalars for k in range(slots)]
    return np.asarray(out[:count], dtype=np.int64)


def msm(scalars) -> bytes:
    """``sum_k scalars_k * G_k`` (a multi-scalar multiplication over the message generators)."""
    scalars = list(scalars)
    gens = generators(len(scalars))
    return point_sum(point_mul(s, g) for s, g in zip(scalars, gens, strict=True) if s % GROUP_ORDER)


def commit_message(values: np.ndarray, value_bits: int) -> bytes:
    """The message part ``sum_k pack(values)_k * G_k`` of a vector Pedersen commitment."""
    return msm(pack(values, value_bits))


def commit(values: np.ndarray, value_bits: int, randomness: int) -> bytes:
    """Vector Pedersen commitment ``pack(values) . G + randomness * H`` (one 32-byte point)."""
    return point_add(commit_message(values, value_bits), point_mul(randomness, H))


@dataclass(frozen=True)
class ServerPublicKeys:
    """What a client needs to know about one server: its signing and seed-encryption keys."""

    sign: bytes
    kem: bytes


class ServerKeys:
    """A server's long-term secret keys (Ed25519 for signing, X25519 for receiving seeds)."""

    def __init__(self, sign: SigningKey | None = None, kem: KemKey | None = None) -> None:
        self.sign = sign or SigningKey()
        self.kem = kem or KemKey()

    @property
    def public(self) -> ServerPublicKeys:
        """The public halves (signing and seed-encryption keys) to give to clients."""
        return ServerPublicKeys(sign=self.sign.public, kem=self.kem.public)

    def to_bytes(self) -> bytes:
        """The 64 private bytes (Ed25519 then X25519) of the server key file (keep them secret)."""
        return self.sign.to_bytes() + self.kem.to_bytes()

    @classmethod
    def from_bytes(cls, raw: bytes) -> ServerKeys:
        """Load the server keys from the 64 bytes of :meth:`to_bytes`."""
        if len(raw) != 64:
            raise ValueError("server key file must hold 64 bytes (Ed25519 + X25519 private keys)")
        return cls(SigningKey.from_bytes(raw[:32]), KemKey.from_bytes(raw[32:]))
