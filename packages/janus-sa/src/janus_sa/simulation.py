"""In-process deployment: two servers and many clients exchanging real wire messages in one process.

Used by the tests, the demo, the benchmarks and the federated-learning example. Every byte a client
sends or receives is counted, and each client's CPU time is measured separately.
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterable, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field

import numpy as np
from icml25_shared.random import RandomStateLike, check_random_state
from icml25_shared.validation import Interval

from janus_sa._validation import validate
from janus_sa.crypto import ServerKeys, model_digest
from janus_sa.errors import ConfigError, ConfigTypeError, JanusError, SketchCheatError
from janus_sa.protocol import AggregationServer, JanusClient, JanusConfig, MaskServer, Roster, RoundResult, enroll


@dataclass
class ClientStats:
    """Per-client cost of one round: bytes up/down and CPU seconds spent in client code."""

    upload_bytes: int = 0
    download_bytes: int = 0
    seconds: float = 0.0


@dataclass
class RoundReport:
    """Outcome of :meth:`InProcessDeployment.run_round`.

    ``results`` maps client id to its verified :class:`RoundResult`; ``errors`` maps client id to the
    exception raised while verifying (a rejected aggregate); ``stats`` holds per-client costs;
    ``server_errors`` maps ``"S0"``/``"S1"`` to the error a server raised when it checked the other's
    aggregate (it then stays at the round's model version and refuses to announce another round on it).
    """

    round: int
    results: dict[bytes, RoundResult] = field(default_factory=dict)
    errors: dict[bytes, JanusError] = field(default_factory=dict)
    stats: dict[bytes, ClientStats] = field(default_factory=dict)
    server_seconds: float = 0.0
    server_errors: dict[str, JanusError] = field(default_factory=dict)


class InProcessDeployment:
    """S0, S1 and a population of :class:`JanusClient` objects that can join and leave between rounds.

    The whole protocol, with real cryptography, in one process: every message is encoded, signed,
    sent as bytes and decoded and verified by its receiver, as over the network.

    Parameters
    ----------
    config : JanusConfig
        The configuration all parties share.
    state_dir : str or os.PathLike, optional
        S0 and S1 persist their round logs under ``state_dir/s0`` and ``state_dir/s1``.
    model : ndarray of shape (dim,), optional
        The initial model (default zeros); each round's model is the successor of the previous verified
        aggregate, ``w + learning_rate * mean`` (:attr:`model`).

    Attributes
    ----------
    s0 : AggregationServer
        The aggregation server.
    s1 : MaskServer
        The mask server.
    clients : dict of bytes to JanusClient
        The current clients by id.
    roster : Roster or None
        The roster both servers signed for the current clients (a new version on every join or leave).
    round : int
        The number of the most recent round.
    model : ndarray of shape (dim,)
        The current model version (S0's copy), the model the next round announces.

    Examples
    --------
    >>> import numpy as np
    >>> from janus_sa import InProcessDeployment, JanusConfig
    >>> dep = InProcessDeployment(config=JanusConfig(dim=8))
    >>> ids = dep.add_clients(4)
    >>> updates = {cid: np.full(8, 0.25 * (i + 1)) for i, cid in enumerate(ids)}
    >>> report = dep.run_round(updates, drop_before_s1=ids[:1])  # one client crashes mid-upload
    >>> res = report.results[ids[1]]  # the three others verified the same aggregate
    >>> res.n_participants, len(report.results), type(report.errors[ids[0]]).__name__
    (3, 3, 'ExcludedError')
    >>> bool(np.abs(res.sum - (0.5 + 0.75 + 1.0)).max() <= res.error_bound)
    True
    """

    def __init__(self, *, config: JanusConfig, state_dir: str | os.PathLike | None = None,
                 model: np.ndarray | None = None) -> None:
        validate({"config": config}, {"config": [JanusConfig]}, owner="InProcessDeployment")
        self.config = config.validate()
        self.session = os.urandom(16)
        self.keys0, self.keys1 = ServerKeys(), ServerKeys()
        sd = (lambda r: None) if state_dir is None else (lambda r: os.path.join(state_dir, r))
        self.s0 = AggregationServer(config=config, keys=self.keys0, session=self.session,
                                    peer=self.keys1.public, state_dir=sd("s0"), model=model)
        self.s1 = MaskServer(config=config, keys=self.keys1, session=self.session,
                             peer=self.keys0.public, state_dir=sd("s1"), model=model)
        self.clients: dict[bytes, JanusClient] = {}
        self.roster: Roster | None = self.s0.roster_
        self.round = 0

    def _enroll(self, clients: dict[bytes, JanusClient]) -> None:
        version = 1 if self.roster is None else self.roster.version + 1
        self.roster = enroll(clients, version=version, s0=self.s0, s1=self.s1)  # raises before any change
        self.clients = clients
        if self.clients:
            next(iter(self.clients.values())).set_roster(self.roster)  # checks both signatures
        for c in self.clients.values():
            c.roster_ = self.roster  # the same checked bytes for every in-process client (O(n), not O(n^2))

    @property
    def model(self) -> np.ndarray:
        """The current model version: the weights the next round announces."""
        assert self.s0.head_model_ is not None
        return self.s0.head_model_

    def add_clients(self, n: int) -> list[bytes]:
        """Create and enrol ``n`` (an int >= 1) new clients (a new roster version) at the current model.

        Returns their ids.
        """
        validate({"n": n}, {"n": [Interval(int, 1, None)]}, owner="InProcessDeployment.add_clients")
        new = [JanusClient(config=self.config, s0=self.keys0.public, s1=self.keys1.public,
                           session=self.session, model=self.s0.head_model_) for _ in range(n)]
        self._enroll({**self.clients, **{c.id: c for c in new}})
        return [c.id for c in new]

    def remove_clients(self, ids: Iterable[bytes]) -> None:
        """Forget and revoke the clients ``ids`` (a new roster version without them)."""
        gone = set(ids)
        missing = gone - set(self.clients)
        if missing:
            raise ConfigError(f"remove_clients: {len(missing)} ids are not current clients")
        self._enroll({c: v for c, v in self.clients.items() if c not in gone})

    def _check_ids(self, ids: Iterable, *, name: str, owner: str) -> None:
        """Refuse ids that are not bytes (TypeError) or not current clients (ValueError)."""
        ids = list(ids)
        wrong = next((c for c in ids if not isinstance(c, bytes)), None)
        if wrong is not None:
            raise ConfigTypeError(f"{owner}: {name} must hold client ids (bytes); got {type(wrong).__name__} "
                                  f"{wrong!r:.40}")
        unknown = [c for c in ids if c not in self.clients]
        if unknown:
            raise ConfigError(f"{owner}: {name} must name current clients (ids from add_clients); got "
                              f"{len(unknown)} unknown ids, e.g. {unknown[0].hex()[:16]}")

    def run_round(self, updates: Mapping[bytes, np.ndarray], *, model: bytes | np.ndarray | None = None,
                  drop_before_s1: Iterable[bytes] = (), drop_before_sketch: Iterable[bytes] = (),
                  workers: int = 1, received_models: Mapping[bytes, bytes | np.ndarray] | None = None) -> RoundReport:
        """Run one full round: announce, upload, agree, aggregate, and verify at every client.

        Parameters
        ----------
        updates : mapping of bytes to ndarray of shape (dim,)
            Each uploading client's id and its float update.
        model : bytes or ndarray, optional
            The model the round announces (default: the current version, :attr:`model`). Both servers and
            every client refuse any other (:class:`~janus_sa.errors.ModelReplayError`).
        drop_before_s1 : iterable of bytes, optional
            Clients that crash after their S0 upload (so they are outside the agreed set).
        drop_before_sketch : iterable of bytes, optional
            Clients that crash before their sketch commitment (sketch mode). The round then has no
            aggregate: :meth:`run_round` raises :class:`~janus_sa.errors.IncompleteRoundError` and the
            next call (a retry on the same model version) completes without them.
        workers : int, default 1
            Threads for the clients' work (libsodium and OpenSSL release the GIL); client CPU time
            is measured per thread either way.
        received_models : mapping of bytes to bytes or ndarray, optional
            The weights a client actually received (default: ``model`` for everyone). Each client
            checks them against the announced digest and, on a mismatch, takes no part (its
            :class:`~janus_sa.errors.ModelInconsistencyError` is in ``errors``).

        Returns
        -------
        RoundReport
            Per-client results (all current clients, uploaders or not, verify the aggregate),
            per-client errors, and per-client bytes and CPU seconds. A client whose upload a server
            refuses (malformed, banned) has its error in ``errors`` and is left out of the round; a
            client with an error still verifies the aggregate and moves to the next model version.

        Raises
        ------
        IncompleteRoundError
            A client in ``drop_before_sketch`` was in the agreed set: no aggregate for this round.
        """
        owner = "InProcessDeployment.run_round"
        validate({"workers": workers, "updates": updates, "received_models": received_models},
                 {"workers": [Interval(int, 1, None)], "updates": [Mapping], "received_models": [None, Mapping]},
                 owner=owner)
        drop_before_s1, drop_before_sketch = list(drop_before_s1), list(drop_before_sketch)
        for name, keys in (("updates", updates), ("drop_before_s1", drop_before_s1),
                           ("drop_before_sketch", drop_before_sketch), ("received_models", received_models or {})):
            self._check_ids(keys, name=name, owner=owner)
        self.round += 1
        model = self.model if model is None else model
        rnd, digest = self.round, model_digest(model)
        report = RoundReport(round=rnd)
        stats = report.stats
        for cid in self.clients:
            stats[cid] = ClientStats()
        t = time.process_time()
        ann0, ann1 = self.s0.announce(rnd, digest), self.s1.announce(rnd, digest)
        report.server_seconds += time.process_time() - t

        def timed(cid, fn):
            t0 = time.thread_time()
            try:
                return fn()
            finally:
                stats[cid].seconds += time.thread_time() - t0

        received = dict(received_models or {})

        def prepare(cid):
            client = self.clients[cid]
            stats[cid].download_bytes += len(ann0) + len(ann1)
            try:
                client.begin_round(ann0, ann1, model=received.get(cid, model))
                return client.upload(updates[cid]) if cid in updates else None
            except JanusError as err:
                report.errors[cid] = err
                return None

        drop1 = set(drop_before_s1)
        ids = list(self.clients)
        with ThreadPoolExecutor(max_workers=workers) as pool:
            uploads = list(pool.map(lambda cid: timed(cid, lambda: prepare(cid)), ids))
            for cid, up in zip(ids, uploads, strict=True):
                if up is None:
                    continue
                try:
                    stats[cid].upload_bytes += len(up.to_s0)
                    self.s0.receive(up.to_s0)
                    if cid not in drop1:
                        stats[cid].upload_bytes += len(up.to_s1)
                        self.s1.receive(up.to_s1)
                except JanusError as err:  # refused upload (malformed, banned after a failed sketch check): the
                    report.errors[cid] = err  # client is left out as the gRPC Submit leaves it out
            t = time.process_time()
            p0, p1 = self.s0.participants(), self.s1.participants()
            agreed = self.s0.agree(p1)
            self.s1.agree(p0)
            report.server_seconds += time.process_time() - t
            seals: dict = {}
            if self.config.mode == "sketch":
                c0, c1 = self.s0.seal_commit(), self.s1.seal_commit()  # both commit before either reveals
                seals = {"seal0": self.s0.seal(c1), "seal1": self.s1.seal(c0)}
                drop2 = set(drop_before_sketch)
                live = [cid for cid in agreed if cid not in drop2]
                commits = list(pool.map(lambda cid: timed(cid, lambda: self.clients[cid].sketch_commit(**seals)), live))
                for cid, up in zip(live, commits, strict=True):
                    stats[cid].download_bytes += len(seals["seal0"]) + len(seals["seal1"])
                    stats[cid].upload_bytes += len(up.to_s0) + len(up.to_s1)
                    self.s0.receive(up.to_s0)
                    self.s1.receive(up.to_s1)
                if self.config.range_proof:  # per-client check of the sketch commitments, before any release
                    pairs0 = self.s0.sketch_pairs(seals["seal1"])
                    pairs1 = self.s1.sketch_pairs(seals["seal0"])
                    self.s0.check_sketch(seals["seal1"], pairs1)
                    cheaters = self.s1.check_sketch(seals["seal0"], pairs0)
                    if cheaters:  # the round ends without an aggregate; a retry on the version goes without them
                        failed = SketchCheatError(f"{len(cheaters)} participants' sketch commitments contradict "
                                                  "their uploads: no aggregate", cheaters=cheaters)
                        report.server_errors.update(S0=failed, S1=failed)
                        for cid in ids:
                            report.errors.setdefault(cid, failed)
                        return report
            t = time.process_time()
            agg0, agg1 = self.s0.aggregate(), self.s1.aggregate()
            # each server checks the other's aggregate and moves to the successor model version
            for name, server, peer_agg, peer_seal in (("S0", self.s0, agg1, seals.get("seal1")),
                                                      ("S1", self.s1, agg0, seals.get("seal0"))):
                try:
                    server.advance(peer_agg, peer_seal=peer_seal)
                except JanusError as err:
                    report.server_errors[name] = err
            report.server_seconds += time.process_time() - t

            def verify(cid):
                stats[cid].download_bytes += len(agg0) + len(agg1)
                try:
                    return cid, timed(cid, lambda: self.clients[cid].finish_round(agg0, agg1, **seals))
                except JanusError as err:
                    return cid, err

            def follow(cid):  # a client that took no part still verifies the aggregate and moves on
                stats[cid].download_bytes += len(agg0) + len(agg1)
                try:
                    timed(cid, lambda: self.clients[cid].follow(agg0, agg1, **seals))
                except JanusError:  # the error that kept it out stays in ``errors``; a later round can catch up
                    pass

            outside = [cid for cid in ids if cid in report.errors]
            for cid, out in pool.map(verify, [cid for cid in ids if cid not in report.errors]):
                if isinstance(out, JanusError):
                    report.errors[cid] = out
                else:
                    report.results[cid] = out
            list(pool.map(follow, outside))
        return report


def random_updates(dim: int, ids: Iterable[bytes], *, random_state: RandomStateLike = 0, scale: float = 1.0) -> dict[bytes, np.ndarray]:
    """Draw Gaussian float updates for test and benchmark rounds.

    Parameters
    ----------
    dim : int
        Length of each update.
    ids : iterable of bytes
        Client ids, in the order their updates are drawn.
    random_state : None, int or numpy Generator, default 0
        The stream the updates are drawn from.
    scale : float, default 1.0
        Standard deviation of the coordinates.

    Returns
    -------
    dict of bytes to ndarray of shape (dim,)
        One update per id.
    """
    validate({"dim": dim, "scale": scale, "random_state": random_state},
             {"dim": [Interval(int, 1, None)], "scale": [Interval(float, 0, None)], "random_state": ["random_state"]},
             owner="random_updates")
    rng = check_random_state(random_state)
    return {cid: scale * rng.standard_normal(dim) for cid in ids}
