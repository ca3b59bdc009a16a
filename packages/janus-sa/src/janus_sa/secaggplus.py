"""SecAgg+ baseline (Bell et al., CCS 2020), the protocol behind Flower's ``SecAggPlusWorkflow``.

A faithful, compact implementation used by the benchmark and ``reproduce`` to compare per-client cost
with Janus. Each client talks to ``k = min(n - 1, ceil(c * log2 n))`` neighbours on a random regular
graph: it agrees pairwise mask seeds (X25519), Shamir-shares its self-mask seed and its mask secret key
(``t = k // 2 + 1`` of ``k``) to its neighbours under AES-GCM, uploads ``x + PRG(b_u) + sum_v +-PRG(s_uv)``,
and in the unmasking step reveals one share per neighbour. All messages are msgpack with an Ed25519
signature (as in the malicious-security variant), so byte counts are comparable with Janus's.
"""

from __future__ import annotations

import math
import os
import time
from collections.abc import Set as AbstractSet
from dataclasses import dataclass

import msgpack
import numpy as np
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric.x25519 import X25519PrivateKey, X25519PublicKey
from cryptography.hazmat.primitives.ciphers.aead import AESGCM
from cryptography.hazmat.primitives.kdf.hkdf import HKDF
from icml25_shared.random import RandomStateLike, check_random_state
from icml25_shared.validation import Interval

from janus_sa._validation import validate
from janus_sa.crypto import SigningKey, expand_mask

PRIME = 2**521 - 1  # Mersenne prime field for Shamir shares of 32-byte secrets
_RAW, _PUB, _PRIV = serialization.Encoding.Raw, serialization.PublicFormat.Raw, serialization.PrivateFormat.Raw


def neighbours_for(n: int, c: float = 3.0) -> int:
    """Degree ``k`` of the SecAgg+ communication graph for ``n`` clients."""
    return min(n - 1, max(2, math.ceil(c * math.log2(max(n, 2)))))


def shamir_share(secret: int, t: int, k: int) -> list[int]:
    """Shares ``f(1..k)`` of a random degree ``t-1`` polynomial with ``f(0) = secret`` over GF(PRIME)."""
    coeffs = [secret] + [int.from_bytes(os.urandom(66), "little") % PRIME for _ in range(t - 1)]
    out = []
    for x in range(1, k + 1):
        acc = 0
        for a in reversed(coeffs):
            acc = (acc * x + a) % PRIME
        out.append(acc)
    return out


def shamir_reconstruct(points: list[tuple[int, int]]) -> int:
    """Lagrange interpolation at 0 from ``(x, f(x))`` pairs."""
    total = 0
    for i, (xi, yi) in enumerate(points):
        num, den = 1, 1
        for j, (xj, _) in enumerate(points):
            if j != i:
                num = num * (-xj) % PRIME
                den = den * (xi - xj) % PRIME
        total = (total + yi * num * pow(den, -1, PRIME)) % PRIME
    return total


def _pub(key: X25519PrivateKey) -> bytes:
    return key.public_key().public_bytes(_RAW, _PUB)


def _kdf(shared: bytes, label: bytes) -> bytes:
    return HKDF(algorithm=hashes.SHA256(), length=32, salt=None, info=b"secagg+/" + label).derive(shared)


def _signed(signer: SigningKey, obj) -> bytes:
    body = msgpack.packb(obj, use_bin_type=True)
    return msgpack.packb([body, signer.sign(body)], use_bin_type=True)


@dataclass
class SecAggPlusClient:
    """One SecAgg+ client. ``index`` is its 1-based position; ``modulus`` as in Janus."""

    index: int
    dim: int
    modulus: int = 1 << 32

    def __post_init__(self) -> None:
        self.sign = SigningKey()
        self.c_sk, self.s_sk = X25519PrivateKey.generate(), X25519PrivateKey.generate()
        self.bytes_up = self.bytes_down = 0
        self.seconds = 0.0  # CPU time spent in this client's protocol steps (set by run_secaggplus_round)

    def advertise_keys(self) -> bytes:
        """Round 0: the signed message with this client's two X25519 public keys."""
        msg = _signed(self.sign, [self.index, _pub(self.c_sk), _pub(self.s_sk)])
        self.bytes_up += len(msg)
        return msg

    def share_keys(self, neighbour_keys: dict[int, tuple[bytes, bytes]], t: int) -> dict[int, bytes]:
        """Receive neighbours' (c_pk, s_pk); return one AES-GCM ciphertext of shares per neighbour."""
        self.bytes_down += sum(len(_signed(self.sign, [i, c, s])) for i, (c, s) in neighbour_keys.items())
        self.neigh = dict(neighbour_keys)
        self.t = t
        self.b_seed = os.urandom(32)
        k = len(neighbour_keys)
        s_raw = self.s_sk.private_bytes(_RAW, _PRIV, serialization.NoEncryption())
        b_sh = shamir_share(int.from_bytes(self.b_seed, "little"), t, k)
        s_sh = shamir_share(int.from_bytes(s_raw, "little"), t, k)
        out = {}
        for pos, (j, (c_pk, _)) in enumerate(sorted(neighbour_keys.items())):
            key = _kdf(self.c_sk.exchange(X25519PublicKey.from_public_bytes(c_pk)), b"enc")
            nonce = os.urandom(12)
            pt = msgpack.packb([self.index, j, pos + 1, b_sh[pos].to_bytes(66, "little"),
                                s_sh[pos].to_bytes(66, "little")], use_bin_type=True)
            out[j] = nonce + AESGCM(key).encrypt(nonce, pt, None)
        msg = _signed(self.sign, list(out.items()))
        self.bytes_up += len(msg)
        return out

    def masked_input(self, codes: np.ndarray, ciphertexts_for_me: dict[int, bytes]) -> np.ndarray:
        """``x + PRG(b_u) + sum_v sign(u, v) PRG(s_uv) mod M``; also stores the received share ciphertexts."""
        self.inbox = dict(ciphertexts_for_me)
        self.bytes_down += len(_signed(self.sign, list(self.inbox.items())))
        acc = codes.astype(np.uint64) + expand_mask(self.b_seed, self.dim, self.modulus)
        for j, (_, s_pk) in self.neigh.items():
            pair = expand_mask(_kdf(self.s_sk.exchange(X25519PublicKey.from_public_bytes(s_pk)), b"mask"),
                               self.dim, self.modulus).astype(np.uint64)
            acc += pair if self.index < j else (np.uint64(self.modulus) - pair)
        y = (acc % np.uint64(self.modulus)).astype(np.uint32)
        self.bytes_up += len(_signed(self.sign, [self.index, y.tobytes()]))
        return y

    def unmask(self, survivors: set[int]) -> dict[int, tuple[str, int, int]]:
        """Reveal, per neighbour, the share of ``b_v`` (survivor) or of ``s_sk_v`` (dropped)."""
        self.bytes_down += len(_signed(self.sign, sorted(survivors)))
        out = {}
        for j, ct in self.inbox.items():
            key = _kdf(self.c_sk.exchange(X25519PublicKey.from_public_bytes(self.neigh[j][0])), b"enc")
            src, dst, x, b_sh, s_sh = msgpack.unpackb(AESGCM(key).decrypt(ct[:12], ct[12:], None))
            assert (src, dst) == (j, self.index)
            out[j] = ("b", x, int.from_bytes(b_sh, "little")) if j in survivors else \
                ("s", x, int.from_bytes(s_sh, "little"))
        self.bytes_up += len(_signed(self.sign, [[j, kind, x, v.to_bytes(66, "little")]
                                                 for j, (kind, x, v) in out.items()]))
        return out


def run_secaggplus_round(codes: dict[int, np.ndarray], *, dim: int, k: int | None = None,
                         drop_after_shares: AbstractSet[int] = frozenset(), modulus: int = 1 << 32,
                         random_state: RandomStateLike = 0) -> tuple[np.ndarray, list[SecAggPlusClient]]:
    """Run a full SecAgg+ round (server side included).

    Parameters
    ----------
    codes : dict of int to ndarray of shape (dim,)
        Each client's index and its integer codes.
    dim : int
        Vector length.
    k : int, optional
        Neighbours per client (default :func:`neighbours_for`); each client ends with
        ``2 * ceil(k / 2)`` neighbours, capped at ``n - 1``.
    drop_after_shares : set of int, optional
        Clients that drop out after sharing their keys (their masks are recovered from shares).
    modulus : int, default 2**32
        Modulus of the masked arithmetic.
    random_state : None, int or numpy Generator, default 0
        Draws the random neighbour graph (the masks come from the OS random source).

    Returns
    -------
    total : ndarray of shape (dim,)
        Sum of the survivors' codes.
    clients : list of SecAggPlusClient
        The clients, with their byte and CPU counters.
    """
    validate({"dim": dim, "k": k, "modulus": modulus, "random_state": random_state},
             {"dim": [Interval(int, 1, None)], "k": [None, Interval(int, 1, None)],
              "modulus": [Interval(int, 2, 2**32)], "random_state": ["random_state"]}, owner="run_secaggplus_round")
    ids = sorted(codes)
    n = len(ids)
    k = k or neighbours_for(n)
    rng = check_random_state(random_state)
    # circulant graph on a random permutation: each client is linked to the k/2 clients on either side
    perm = [ids[int(j)] for j in rng.permutation(n)]
    half = min(k, n - 1) // 2 + (min(k, n - 1) % 2)
    neigh: dict[int, set[int]] = {i: set() for i in ids}
    for p, u in enumerate(perm):
        for d in range(1, half + 1):
            v = perm[(p + d) % n]
            if v != u:
                neigh[u].add(v)
                neigh[v].add(u)
    clients = {i: SecAggPlusClient(i, dim, modulus) for i in ids}

    def timed(i, method, *args):
        t0 = time.process_time()
        out = getattr(clients[i], method)(*args)
        clients[i].seconds += time.process_time() - t0
        return out

    keys = {i: msgpack.unpackb(msgpack.unpackb(timed(i, "advertise_keys"))[0])[1:] for i in ids}
    t = {i: len(neigh[i]) // 2 + 1 for i in ids}
    outbox = {i: timed(i, "share_keys", {j: tuple(keys[j]) for j in neigh[i]}, t[i]) for i in ids}
    survivors = [i for i in ids if i not in drop_after_shares]
    masked = {i: timed(i, "masked_input", codes[i], {j: outbox[j][i] for j in neigh[i]}) for i in survivors}
    total = np.zeros(dim, dtype=np.uint64)
    for y in masked.values():
        total += y
    reveals = [timed(i, "unmask", set(survivors)) for i in survivors]
    for v in ids:  # reconstruct from the survivors' shares
        pts = [(r[v][1], r[v][2]) for r in reveals if v in r]
        if len(pts) < t[v]:
            raise ValueError(f"client {v}: {len(pts)} surviving neighbours hold shares, threshold is {t[v]}")
        secret = shamir_reconstruct(pts[: t[v]])
        if v in survivors:  # remove the self mask
            total += np.uint64(modulus) - expand_mask(secret.to_bytes(32, "little"), dim, modulus)
        else:  # remove the dropped client's pairwise masks with surviving neighbours
            s_sk = X25519PrivateKey.from_private_bytes(secret.to_bytes(32, "little"))
            for j in neigh[v] & set(survivors):
                pair = expand_mask(_kdf(s_sk.exchange(X25519PublicKey.from_public_bytes(keys[j][1])), b"mask"),
                                   dim, modulus).astype(np.uint64)
                total += (np.uint64(modulus) - pair) if j < v else pair
    return (total % np.uint64(modulus)).astype(np.int64), list(clients.values())
