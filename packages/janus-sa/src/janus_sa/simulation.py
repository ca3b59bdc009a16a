"""In-process deployment: two servers and many clients exchanging real wire messages in one process.

Used by the tests, the demo, the benchmarks and the federated-learning example. Every byte a client
sends or receives is counted, and each client's CPU time is measured separately.
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

import numpy as np

from janus_sa.crypto import ServerKeys, model_digest
from janus_sa.errors import JanusError
from janus_sa.protocol import AggregationServer, JanusClient, JanusConfig, MaskServer, RoundResult


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
    exception raised while verifying (a rejected aggregate); ``stats`` holds per-client costs.
    """

    round: int
    results: dict[bytes, RoundResult] = field(default_factory=dict)
    errors: dict[bytes, JanusError] = field(default_factory=dict)
    stats: dict[bytes, ClientStats] = field(default_factory=dict)
    server_seconds: float = 0.0


class InProcessDeployment:
    """S0, S1 and a population of :class:`JanusClient` objects that can join and leave between rounds.

    Parameters
    ----------
    config:
        The :class:`JanusConfig` all parties share.
    state_dir:
        Optional directory; S0 and S1 persist their round logs under ``state_dir/s0`` and ``/s1``.
    """

    def __init__(self, *, config: JanusConfig, state_dir: str | os.PathLike | None = None) -> None:
        self.config = config.validate()
        self.session = os.urandom(16)
        self.keys0, self.keys1 = ServerKeys(), ServerKeys()
        sd = (lambda r: None) if state_dir is None else (lambda r: os.path.join(state_dir, r))
        self.s0 = AggregationServer(config=config, keys=self.keys0, session=self.session,
                                    peer=self.keys1.sign.public, state_dir=sd("s0"))
        self.s1 = MaskServer(config=config, keys=self.keys1, session=self.session,
                             peer=self.keys0.sign.public, state_dir=sd("s1"))
        self.clients: dict[bytes, JanusClient] = {}
        self.round = 0

    def add_clients(self, n: int) -> list[bytes]:
        """Create ``n`` new clients; they know only the servers' public keys. Returns their ids."""
        new = [JanusClient(config=self.config, s0=self.keys0.public, s1=self.keys1.public,
                           session=self.session) for _ in range(n)]
        self.clients.update((c.id, c) for c in new)
        return [c.id for c in new]

    def remove_clients(self, ids: Iterable[bytes]) -> None:
        for cid in ids:
            self.clients.pop(cid)

    def run_round(self, updates: Mapping[bytes, np.ndarray], *, model: bytes | np.ndarray = b"",
                  drop_before_s1: Iterable[bytes] = (), drop_before_sketch: Iterable[bytes] = ()) -> RoundReport:
        """One full round. ``updates`` maps each uploading client id to its ``(dim,)`` float update.

        Clients listed in ``drop_before_s1`` crash after their S0 upload (so they are outside the agreed
        set); all current clients, uploaders or not, verify the aggregate.
        """
        self.round += 1
        rnd, digest = self.round, model_digest(model)
        report = RoundReport(round=rnd)
        stats = report.stats
        t = time.process_time()
        ann0, ann1 = self.s0.announce(rnd, digest), self.s1.announce(rnd, digest)
        report.server_seconds += time.process_time() - t
        drop1 = set(drop_before_s1)
        for cid, client in self.clients.items():
            st = stats.setdefault(cid, ClientStats())
            t = time.process_time()
            client.begin_round(ann0, ann1)
            st.download_bytes += len(ann0) + len(ann1)
            if cid in updates:
                up = client.upload(updates[cid])
                st.seconds += time.process_time() - t
                st.upload_bytes += len(up.to_s0)
                self.s0.receive(up.to_s0)
                if cid not in drop1:
                    st.upload_bytes += len(up.to_s1)
                    self.s1.receive(up.to_s1)
            else:
                st.seconds += time.process_time() - t
        t = time.process_time()
        p0, p1 = self.s0.participants(), self.s1.participants()
        agreed = self.s0.agree(p1)
        self.s1.agree(p0)
        report.server_seconds += time.process_time() - t
        seals: dict = {}
        if self.config.mode == "sketch":
            seals = {"seal0": self.s0.seal(), "seal1": self.s1.seal()}
            drop2 = set(drop_before_sketch)
            for cid in agreed:
                if cid in drop2:
                    continue
                t = time.process_time()
                up = self.clients[cid].sketch_commit(seals["seal0"], seals["seal1"])
                stats[cid].seconds += time.process_time() - t
                stats[cid].download_bytes += len(seals["seal0"]) + len(seals["seal1"])
                stats[cid].upload_bytes += len(up.to_s0) + len(up.to_s1)
                self.s0.receive(up.to_s0)
                self.s1.receive(up.to_s1)
        t = time.process_time()
        agg0, agg1 = self.s0.aggregate(), self.s1.aggregate()
        report.server_seconds += time.process_time() - t
        for cid, client in self.clients.items():
            t = time.process_time()
            try:
                report.results[cid] = client.finish_round(agg0, agg1, **seals)
            except JanusError as err:
                report.errors[cid] = err
            stats[cid].seconds += time.process_time() - t
            stats[cid].download_bytes += len(agg0) + len(agg1)
        return report


def random_updates(dim: int, ids: Iterable[bytes], *, seed: int = 0, scale: float = 1.0) -> dict[bytes, np.ndarray]:
    """Gaussian float updates ``(dim,)`` for each id (reproducible from ``seed``)."""
    rng = np.random.default_rng(seed)
    return {cid: scale * rng.standard_normal(dim) for cid in ids}
