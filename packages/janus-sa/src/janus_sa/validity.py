"""Two-server validity proof: every code of a client's update lies in ``[0, Q)`` (an L-inf clip bound).

A fully linear proof in the style of Prio3SumVec (``draft-irtf-cfrg-vdaf``; Boneh, Boyle, Corrigan-Gibbs,
Gilboa and Ishai, CRYPTO 2019), over ``Z_ℓ``, the ristretto255 group order, so that the bits link
linearly to Janus's own shares of the update (``pack(x) = y - k`` in exact mode).

The client writes each code in ``b = log2 Q`` bits (sketch mode adds one wrap bit per coordinate,
``x = y - m + M w``), secret-shares the ``N`` bits and a proof between S0 (explicit shares) and S1 (shares
expanded from S1's one-time seed), and the two servers check three linear relations of their shares:

* **bits**: with joint randomness ``α, β`` (a hash of both shares, Fiat-Shamir), the circuit
  ``Σ_k β_k Σ_t α_t b_kt (b_kt - 1)`` is 0; the bits sit on ``L`` calls of a gadget of ``c`` inputs, and
  the proof is the gadget polynomial ``P = Σ_t α_t W_t (W_t - 1)`` (degree ``2L``) with one blinding
  value per wire polynomial ``W_t``; each server evaluates its shares of every ``W_t`` and of ``P`` at
  a point ``r`` that only the servers know (derived from their X25519 shared secret);
* **link**: a random combination (weights ``γ``, also from the servers' secret) of
  ``y - k - pack(Σ_k 2^k b_k)`` (exact mode) or ``y - m + M w - Σ_k 2^k b_k`` (sketch mode) is 0;
* the joint randomness both servers derived is the same.

Each server sends the other ``c + 3`` scalars per client; summed, they decide. A server learns nothing
new: its share is uniform, the peer's ``W_t(r)`` are uniform (blinded), ``P(r)`` is a function of them
and the other two sums are 0 for an honest client. Soundness error per proof at most
``(2L + 3) / (ℓ - 2L - 1)`` (below ``2^-243`` for ``L <= 128``), plus ``2 / ℓ`` per hash a cheating
client spends grinding the joint randomness. Robustness needs both servers to run the check honestly
(as in Prio): a server colluding with a client can let it through, and any server can make an honest
client fail (the same power as claiming it never received the upload).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from janus_sa import crypto
from janus_sa.crypto import GROUP_ORDER as ORDER
from janus_sa.crypto import SCALAR_BYTES, sha256
from janus_sa.errors import MalformedMessageError

#: the largest number of gadget calls (trades client CPU, about N L scalar operations, for the
#: verifier message of N / L + 3 scalars per client between the servers)
MAX_CALLS = 128


@dataclass(frozen=True)
class Layout:
    """Shape of one proof: ``bits`` per coordinate, ``n_bits = N``, ``calls = L`` gadget calls of ``chunk = c``."""

    dim: int
    bits: int
    wrap: bool
    calls: int
    chunk: int

    @property
    def n_bits(self) -> int:
        """``N``: the secret-shared bits of one update (``dim * (bits + wrap)``)."""
        return self.dim * (self.bits + int(self.wrap))

    @property
    def proof_len(self) -> int:
        """Scalars in the proof: one blinding value per wire polynomial and ``P`` at ``2L + 1`` nodes."""
        return self.chunk + 2 * self.calls + 1

    @property
    def upload_bytes(self) -> int:
        """Bytes S0 receives: its shares of the bits and of the proof, and S1's joint-randomness part."""
        return SCALAR_BYTES * (self.n_bits + self.proof_len) + 32

    @property
    def verifier_bytes(self) -> int:
        """Bytes of one server's verifier message for one client (joint-randomness digest + c + 3 scalars)."""
        return 32 + SCALAR_BYTES * (self.chunk + 3)

    @property
    def soundness_error(self) -> float:
        """Probability that a proof of an out-of-range update passes: ``(2L + 3) / (ℓ - 2L - 1)``."""
        return (2 * self.calls + 3) / (ORDER - 2 * self.calls - 1)


def layout(dim: int, quantization_range: int, *, wrap: bool) -> Layout:
    """The proof layout for updates of length ``dim`` with codes in ``[0, quantization_range)`` (a power of two)."""
    bits = quantization_range.bit_length() - 1
    n = dim * (bits + int(wrap))
    calls = max(1, min(MAX_CALLS, math.isqrt(n)))
    return Layout(dim=dim, bits=bits, wrap=wrap, calls=calls, chunk=-(-n // calls))


# --- Lagrange arithmetic over Z_ℓ on the nodes 0, 1, ..., m ---------------------------------------------
def _lagrange_at(m: int, r: int) -> list[int]:
    """``λ_x(r)`` for the Lagrange basis on nodes ``0..m`` (``r`` not a node)."""
    prefix, suffix = [1] * (m + 2), [1] * (m + 2)
    for j in range(m + 1):
        prefix[j + 1] = prefix[j] * (r - j) % ORDER
    for j in range(m, -1, -1):
        suffix[j] = suffix[j + 1] * (r - j) % ORDER
    fact = [1] * (m + 1)
    for j in range(1, m + 1):
        fact[j] = fact[j - 1] * j % ORDER
    out = []
    for x in range(m + 1):
        denom = fact[x] * fact[m - x] % ORDER
        if (m - x) % 2:
            denom = -denom % ORDER
        out.append(prefix[x] * suffix[x + 1] % ORDER * pow(denom, -1, ORDER) % ORDER)
    return out


@lru_cache(maxsize=8)
def _extension(calls: int) -> np.ndarray:
    """``E`` (L x (L + 1), object): values of a degree-L polynomial at ``L+1..2L`` from its values at ``0..L``."""
    return np.array([_lagrange_at(calls, calls + 1 + i) for i in range(calls)], dtype=object)


# --- shares -------------------------------------------------------------------------------------------
def _scalars_to_bytes(values) -> bytes:
    return b"".join(int(v).to_bytes(SCALAR_BYTES, "little") for v in values)


def _bytes_to_scalars(raw: bytes, count: int, what: str) -> np.ndarray:
    if len(raw) != SCALAR_BYTES * count:
        raise MalformedMessageError(f"{what}: expected {count} scalars ({SCALAR_BYTES * count} bytes), got "
                                    f"{len(raw)} bytes")
    out = np.empty(count, dtype=object)
    for j in range(count):
        v = int.from_bytes(raw[SCALAR_BYTES * j:SCALAR_BYTES * (j + 1)], "little")
        if v >= ORDER:
            raise MalformedMessageError(f"{what}: a scalar at or above the group order")
        out[j] = v
    return out


def _helper_shares(seed1: bytes, lay: Layout) -> tuple[np.ndarray, np.ndarray]:
    """S1's shares of the bits and of the proof, expanded from the client's seed for S1."""
    bits = np.array(crypto.expand_scalars(seed1, b"validity-bits", lay.n_bits), dtype=object)
    proof = np.array(crypto.expand_scalars(seed1, b"validity-proof", lay.proof_len), dtype=object)
    return bits, proof


def part0(seed0: bytes, bits0: bytes) -> bytes:
    """S0's joint-randomness part: a hash of its bit shares, blinded by the client's seed for S0."""
    return sha256(b"janus/validity/part0", seed0, bits0)


def part1(seed1: bytes) -> bytes:
    """S1's joint-randomness part (its shares are a function of the seed)."""
    return sha256(b"janus/validity/part1", seed1)


def _joint(p0: bytes, p1: bytes, lay: Layout) -> tuple[bytes, np.ndarray, np.ndarray]:
    jr = sha256(b"janus/validity/joint", p0, p1)
    alpha = np.array(crypto.expand_scalars(jr, b"validity-alpha", lay.chunk), dtype=object)
    beta = np.array(crypto.expand_scalars(jr, b"validity-beta", lay.calls), dtype=object)
    return jr, alpha, beta


def _grid(values: np.ndarray, lay: Layout) -> np.ndarray:
    """The N bit values (or shares) as the (L, c) matrix of gadget inputs, zero-padded."""
    out = np.zeros(lay.calls * lay.chunk, dtype=object)
    out[:lay.n_bits] = values
    return out.reshape(lay.calls, lay.chunk)


def encode_bits(codes: np.ndarray, lay: Layout, wraps: np.ndarray | None = None) -> np.ndarray:
    """The N bits (0/1, int64) of the codes, coordinate by coordinate, low bit first (then the wrap bit)."""
    codes = np.asarray(codes, dtype=np.int64)
    bits = (codes[:, None] >> np.arange(lay.bits)) & 1
    if lay.wrap:
        assert wraps is not None
        bits = np.concatenate([bits, np.asarray(wraps, dtype=np.int64)[:, None]], axis=1)
    return bits.ravel()


def prove(codes: np.ndarray, *, lay: Layout, seed0: bytes, seed1: bytes, wraps: np.ndarray | None = None,
          blind: bytes) -> tuple[bytes, bytes]:
    """Client side: ``(blob for S0, blob for S1)``.

    S0's blob is its bit shares, its proof shares and S1's joint-randomness part; S1's is S0's part.
    ``blind`` is 32 fresh random bytes for the wire polynomials' blinding values.
    """
    bits = encode_bits(codes, lay, wraps)
    share1, proof1 = _helper_shares(seed1, lay)
    bits0 = _scalars_to_bytes((bits.astype(object) - share1) % ORDER)
    p0, p1 = part0(seed0, bits0), part1(seed1)
    _, alpha, beta = _joint(p0, p1, lay)
    calls = lay.calls
    sigma = np.array(crypto.expand_scalars(blind, b"validity-blind", lay.chunk), dtype=object)
    wires = np.empty((2 * calls + 1, lay.chunk), dtype=object)
    wires[0] = sigma
    wires[1:calls + 1] = _grid(bits.astype(object), lay)
    wires[calls + 1:] = _extension(calls).dot(wires[:calls + 1]) % ORDER
    gadget = (wires * (wires - 1) % ORDER).dot(alpha) % ORDER  # P at the nodes 0..2L
    proof = np.concatenate([sigma, gadget])
    proof0 = _scalars_to_bytes((proof - proof1) % ORDER)
    return bits0 + proof0 + p1, p0


@dataclass(frozen=True)
class Share:
    """One server's view of a client's proof (parsed from its upload)."""

    bits: np.ndarray
    proof: np.ndarray
    own_part: bytes
    peer_part: bytes


def leader_share(blob: bytes, *, lay: Layout, seed0: bytes) -> Share:
    """S0's share from its UPLOAD0 blob (``MalformedMessageError`` on a wrong length or unreduced scalar)."""
    if len(blob) != lay.upload_bytes:
        raise MalformedMessageError(f"range proof: expected {lay.upload_bytes} bytes, got {len(blob)}")
    nb = SCALAR_BYTES * lay.n_bits
    bits = _bytes_to_scalars(blob[:nb], lay.n_bits, "range proof bits")
    proof = _bytes_to_scalars(blob[nb:-32], lay.proof_len, "range proof")
    return Share(bits, proof, part0(seed0, blob[:nb]), blob[-32:])


def helper_share(blob: bytes, *, lay: Layout, seed1: bytes) -> Share:
    """S1's share: expanded from its seed; ``blob`` is S0's joint-randomness part (32 bytes)."""
    if len(blob) != 32:
        raise MalformedMessageError(f"range proof: S1's part is 32 bytes, got {len(blob)}")
    bits, proof = _helper_shares(seed1, lay)
    return Share(bits, proof, part1(seed1), bytes(blob))


def query_key(shared_secret: bytes, session: bytes) -> bytes:
    """The servers' verification key: only S0 and S1 know it, so a client cannot predict ``r`` or ``γ``."""
    return crypto.derive(shared_secret + session, b"validity-query")


def _query(key: bytes, context: bytes, jr: bytes, lay: Layout, n_link: int) -> tuple[int, np.ndarray]:
    seed = sha256(b"janus/validity/query", key, context, jr)
    counter = 0
    while True:  # r must not be a node (0..2L), or the revealed wire values would not be blinded
        r = crypto.expand_scalar(seed, b"r" + counter.to_bytes(4, "little"))
        if r > 2 * lay.calls:
            break
        counter += 1
    gamma = np.array(crypto.expand_scalars(seed, b"gamma", n_link), dtype=object)
    return r, gamma


def verifier_share(share: Share, *, role: int, lay: Layout, key: bytes, context: bytes, link: np.ndarray) -> bytes:
    """One server's verifier message for one client: joint-randomness digest, then ``c + 3`` scalars.

    ``link`` is this server's share of the link vector (:func:`link_vector`), whose two shares sum to
    zero for an honest client; ``context`` binds session, round and client into ``r`` and ``γ``.
    """
    p0, p1 = (share.own_part, share.peer_part) if role == 0 else (share.peer_part, share.own_part)
    jr, _, beta = _joint(p0, p1, lay)
    r, gamma = _query(key, context, jr, lay, len(link))
    calls = lay.calls
    lam = np.array(_lagrange_at(calls, r), dtype=object)
    mu = np.array(_lagrange_at(2 * calls, r), dtype=object)
    sigma, gadget = share.proof[:lay.chunk], share.proof[lay.chunk:]
    wires = lam[0] * sigma + lam[1:].dot(_grid(share.bits, lay))
    values = [gamma.dot(link), beta.dot(gadget[1:calls + 1]), *wires, mu.dot(gadget)]
    return jr + _scalars_to_bytes(int(v) % ORDER for v in values)


def code_shares(bit_shares: np.ndarray, lay: Layout) -> np.ndarray:
    """Per coordinate, this server's share of the code ``Σ_k 2^k b_k`` (object array mod ℓ)."""
    grid = bit_shares.reshape(lay.dim, lay.bits + int(lay.wrap))
    powers = np.array([1 << k for k in range(lay.bits)], dtype=object)
    return grid[:, :lay.bits].dot(powers) % ORDER


def link_vector(bit_shares: np.ndarray, lay: Layout, *, term, slot_width: int = 0, slots: int = 0,
                modulus: int = 0) -> np.ndarray:
    """The share held by one server of the vector that is zero iff the bits encode the update it holds a share of.

    Exact mode (``slot_width``, ``slots`` of the packing): ``term - pack(Σ_k 2^k b_k)`` per packed scalar,
    with ``term`` = ``y`` at S0 and ``-k`` at S1. Sketch mode (``modulus`` = M):
    ``term + M w - Σ_k 2^k b_k`` per coordinate, with ``term`` = ``y`` at S0 and ``-m`` at S1.
    """
    per = lay.bits + int(lay.wrap)
    grid = bit_shares.reshape(lay.dim, per)
    powers = np.array([1 << k for k in range(lay.bits)], dtype=object)
    codes = grid[:, :lay.bits].dot(powers)
    term = np.asarray(term, dtype=object)
    if lay.wrap:
        return (term + modulus * grid[:, lay.bits] - codes) % ORDER
    padded = np.zeros(-(-lay.dim // slots) * slots, dtype=object)
    padded[:lay.dim] = codes
    slot_powers = np.array([1 << (slot_width * t) for t in range(slots)], dtype=object)
    return (term - padded.reshape(-1, slots).dot(slot_powers)) % ORDER


def decide(v0: bytes, v1: bytes, *, lay: Layout) -> bool:
    """Both verifier messages of one client summed: True iff the proof and the link hold."""
    if len(v0) != lay.verifier_bytes or len(v1) != lay.verifier_bytes or v0[:32] != v1[:32]:
        return False
    try:
        a = _bytes_to_scalars(v0[32:], lay.chunk + 3, "verifier")
        b = _bytes_to_scalars(v1[32:], lay.chunk + 3, "verifier")
    except MalformedMessageError:
        return False
    total = (a + b) % ORDER
    alpha = np.array(crypto.expand_scalars(v0[:32], b"validity-alpha", lay.chunk), dtype=object)
    link_value, out, wires, gadget_r = total[0], total[1], total[2:-1], total[-1]
    expected = (wires * (wires - 1) % ORDER).dot(alpha) % ORDER
    return link_value == 0 and out == 0 and expected == gadget_r
