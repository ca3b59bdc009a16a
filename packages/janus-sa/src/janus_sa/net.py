"""Networked deployment: S0 and S1 as gRPC services (grpcio, optional TLS) and a polling client.

Each server exposes one gRPC service ``janus.v1.Janus`` whose unary methods carry raw wire messages
(the bytes of :mod:`janus_sa.wire`, already signed and length-checked), so no protobuf code generation
is needed. S0 coordinates rounds: it opens a round on S1 by forwarding its signed ANNOUNCE, waits
for uploads, exchanges participant sets with S1 (``Agree``), and marks the round failed if S1 cannot
be reached. Protocol errors travel as ``"<ErrorClass>: message"`` in the gRPC status details and are
re-raised on the caller's side as the same :mod:`janus_sa.errors` class.
"""

from __future__ import annotations

import logging
import threading
import time
from collections import OrderedDict
from concurrent import futures
from dataclasses import dataclass

import grpc
import msgpack
import numpy as np

from janus_sa import errors
from janus_sa.crypto import ServerPublicKeys, SigningKey
from janus_sa.errors import (
    JanusError,
    NetworkError,
    NotReadyError,
    ProtocolError,
    RoundFailedError,
    ServerUnavailableError,
)
from janus_sa.protocol import AggregationServer, JanusClient, MaskServer, RoundResult, _Server
from janus_sa.wire import MsgType, decode, encode

log = logging.getLogger(__name__)
SERVICE = "janus.v1.Janus"
METHODS = ("Announcement", "Submit", "Seal", "Aggregate", "Open", "Agree", "Count", "SealCommit", "SketchCheck")
#: read RPCs that answer only enrolled clients or the peer server (the request is a signed REQUEST)
READ_METHODS = {"Aggregate": 1, "Seal": 2, "Count": 3}
#: seconds S0 waits for S1's answer to Agree or SealCommit (it works through every upload of the round)
PEER_WORK_TIMEOUT = 300.0
_CODES = {NotReadyError: grpc.StatusCode.FAILED_PRECONDITION, RoundFailedError: grpc.StatusCode.ABORTED}


@dataclass(frozen=True)
class TLSConfig:
    """PEM bytes for TLS: servers need ``cert`` + ``key``; clients need ``ca`` (the server cert or its CA)."""

    cert: bytes | None = None
    key: bytes | None = None
    ca: bytes | None = None


#: gRPC's own message cap on every channel and server. The messages that grow with the number of clients
#: (PARTICIPANTS: 99 B per client in exact mode, aggregates: 35 B per participant) stay far below it up to
#: the 650,000 ids the decoder admits; each message's real bound is checked by :func:`janus_sa.wire.decode`.
GRPC_MAX_BYTES = 256 * 2**20


def _options(max_bytes: int) -> list[tuple[str, int]]:
    limit = max(max_bytes, GRPC_MAX_BYTES)
    return [("grpc.max_receive_message_length", limit), ("grpc.max_send_message_length", limit)]


def read_request(method: str, session: bytes, rnd: int, key: SigningKey) -> bytes:
    """The signed REQUEST for read RPC ``method`` of round ``rnd`` (by a client or the peer server)."""
    return encode(MsgType.REQUEST, session, rnd, {"method": READ_METHODS[method]}, key)


class Remote:
    """Stub for one server's ``janus.v1.Janus`` service; every method takes and returns bytes."""

    def __init__(self, address: str, *, max_bytes: int, tls: TLSConfig | None = None, timeout: float = 10.0) -> None:
        self.address, self.timeout = address, timeout
        opts = _options(max_bytes)
        if tls is not None and tls.ca is not None:
            self.channel = grpc.secure_channel(address, grpc.ssl_channel_credentials(root_certificates=tls.ca), opts)
        else:
            self.channel = grpc.insecure_channel(address, opts)
        self._calls = {m: self.channel.unary_unary(f"/{SERVICE}/{m}") for m in METHODS}

    def call(self, method: str, payload: bytes = b"") -> bytes:
        """Send ``payload`` to the remote RPC ``method`` and return its reply (raises :class:`ServerUnavailableError`).

        ``Agree`` and ``SealCommit`` make the peer compare and sum every upload of the round: they get
        :data:`PEER_WORK_TIMEOUT` seconds (or ``timeout`` if longer) instead of ``timeout``.
        """
        slow = ("Agree", "SealCommit", "SketchCheck")
        timeout = max(self.timeout, PEER_WORK_TIMEOUT) if method in slow else self.timeout
        try:
            return self._calls[method](payload, timeout=timeout)
        except grpc.RpcError as err:
            code, details = err.code(), err.details() or ""
            name, _, text = details.partition(": ")
            cls = getattr(errors, name, None)
            if isinstance(cls, type) and issubclass(cls, JanusError):
                raise cls(text) from None
            if code in (grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.DEADLINE_EXCEEDED):
                raise ServerUnavailableError(f"{self.address}: {code.name}") from None
            raise NetworkError(f"{self.address}: {code.name} {details}") from None

    def close(self) -> None:
        """Close the gRPC channel."""
        self.channel.close()


class ServerNode:
    """Wraps an :class:`AggregationServer` or :class:`MaskServer` as a thread-safe gRPC service.

    For S0, :meth:`coordinate` drives the rounds (open on S1, collect, agree, publish).
    """

    def __init__(self, server: _Server, *, peer: Remote | None = None) -> None:
        self.server, self.peer = server, peer
        self.lock = threading.RLock()
        self.finished: OrderedDict[int, dict[str, bytes]] = OrderedDict()  # round -> {"aggregate", "seal"}
        self.failed: set[int] = set()
        self._recover()

    def _recover(self) -> None:
        """After a restart from ``state_dir``: re-serve an agreed round; S0 marks an unagreed one failed.

        An agreed round's aggregate (and seal) is rebuilt from the replayed log, byte for byte (Ed25519
        is deterministic). S0 restarted before agreement cannot know which uploads S1 holds for clients
        that may have retried elsewhere, so it lists that round as failed and coordinates the next one.
        A sketch round S0 agreed but had not sealed is left to :meth:`resume` (``coordinate`` calls it).
        """
        s = self.server
        if s.round_ is None:
            return
        if s.participants_ is not None:
            if s.config.mode == "sketch" and s.peer_seal_commit_msg_ is not None:
                self.finished.setdefault(s.round_, {})["seal"] = s.seal(s.peer_seal_commit_msg_)
            if s.cheaters_:  # the per-client sketch check named a cheater before the restart: no aggregate
                self.failed.add(s.round_)
            self._maybe_finish()
        elif isinstance(s, AggregationServer):
            self.failed.add(s.round_)
            log.warning("round %d was open when S0 stopped; it is marked failed", s.round_)

    def resume(self, *, timeout: float = 30.0, stop: threading.Event | None = None) -> bool:
        """S0 after a restart: finish a sketch round that was agreed but not sealed, or list it failed.

        S0 repeats the seal exchange with S1 (its seal commitment is derived from its key and its agreed
        value, so it is the same one S1 may already hold, and S1 accepts it again), publishes its seal
        and waits up to ``timeout`` seconds for the participants' sketch commitments. If S1 cannot be
        reached, refuses, or answers with a commitment S0 refuses, or the commitments do not arrive, the
        round goes to :attr:`failed` (clients get :class:`RoundFailedError`).

        Returns
        -------
        bool
            True when a round was resumed and produced its aggregate, False otherwise (nothing to
            resume, or the round is now listed failed).
        """
        s, peer = self.server, self.peer
        with self.lock:
            rnd = s.round_
            pending = (isinstance(s, AggregationServer) and s.config.mode == "sketch" and peer is not None
                       and rnd is not None and s.participants_ is not None
                       and "seal" not in self.finished.get(rnd, {}) and rnd not in self.failed)
        if not pending or rnd is None or peer is None:
            return False
        stop = stop or threading.Event()
        try:
            with self.lock:
                own_commit = s.seal_commit()
            peer_commit = peer.call("SealCommit", own_commit)
            with self.lock:
                self.finished.setdefault(rnd, {})["seal"] = s.seal(peer_commit)
                self._maybe_finish()
            deadline = time.monotonic() + timeout
            while not stop.is_set():
                with self.lock:
                    if "aggregate" in self.finished.get(rnd, {}):
                        log.info("round %d resumed after a restart and finished", rnd)
                        return True
                if time.monotonic() > deadline:
                    raise errors.IncompleteRoundError("participants did not all send their sketch commitments in time")
                stop.wait(0.05)
            raise errors.IncompleteRoundError("stopped while resuming the round")
        except JanusError as err:
            with self.lock:
                self.finished.pop(rnd, None)
                self.failed.add(rnd)
            log.warning("round %d could not be resumed after a restart (%s: %s); it is marked failed",
                        rnd, type(err).__name__, err)
            return False

    # --- RPC handlers (bytes -> bytes) ------------------------------------------------------------
    def Announcement(self, req: bytes) -> bytes:
        """RPC: the signed announcement of the requested round."""
        if self.server.announcement_ is None:
            raise NotReadyError("no round announced yet")
        return self.server.announcement_

    def Submit(self, req: bytes) -> bytes:
        """RPC: accept one signed client message (upload or sketch commitment)."""
        with self.lock:
            self.server.receive(req)
            self._maybe_finish()
        return b""

    def _authorize(self, req: bytes, method: str) -> int:
        """Check a signed REQUEST from an enrolled client or the peer server; returns its round."""
        msg = decode(req, max_bytes=1024, session=self.server.session, expect=(MsgType.REQUEST,))
        msg.verify()
        if msg.body["method"] != READ_METHODS[method]:
            raise errors.MalformedMessageError(f"request is for another method than {method}")
        roster = self.server.roster_
        if msg.sender != self.server.peer and (roster is None or msg.sender not in roster):
            raise errors.NotEnrolledError(f"{method} answers only enrolled clients and the peer server")
        return msg.round

    def Count(self, req: bytes) -> bytes:
        """RPC (peer only): the number of uploads accepted in the current round."""
        self._authorize(req, "Count")
        return len(self.server.uploads_).to_bytes(8, "little")

    def _lookup(self, rnd: int, what: str) -> bytes:
        with self.lock:
            if rnd in self.finished and what in self.finished[rnd]:
                return self.finished[rnd][what]
            if rnd in self.failed or (self.server.round_ is not None and rnd < self.server.round_):
                raise RoundFailedError(f"round {rnd} was abandoned by the servers")
            raise NotReadyError(f"{what} of round {rnd} is not ready")

    def Seal(self, req: bytes) -> bytes:
        """RPC: the signed seal of the requested round (sketch mode)."""
        return self._lookup(self._authorize(req, "Seal"), "seal")

    def Aggregate(self, req: bytes) -> bytes:
        """RPC: the signed aggregate of the requested round."""
        return self._lookup(self._authorize(req, "Aggregate"), "aggregate")

    def Open(self, req: bytes) -> bytes:
        """S1: open the round S0 announced.

        The request is msgpack ``[ANNOUNCE, AGGREGATE0, SEAL0]``: S0's signed announcement and S0's
        messages of the round it last agreed (empty when none). S1 first follows that round to the
        successor model version (it checks S0's aggregate against its own, as a client would), then
        opens the new round only if it announces that version (:meth:`AggregationServer.announce`).
        """
        try:
            ann, agg0, seal0 = msgpack.unpackb(req, raw=False, max_bin_len=2**31)
        except Exception as err:  # noqa: BLE001 - any decoding failure is a malformed request
            raise errors.MalformedMessageError(f"Open takes [announce, aggregate0, seal0]: {err}") from err
        msg = decode(ann, max_bytes=4096, session=self.server.session, expect=(MsgType.ANNOUNCE,))
        msg.verify(expected_sender=self.server.peer)
        with self.lock:
            if self.server.round_ != msg.round:
                if agg0:
                    self.server.advance(agg0, peer_seal=seal0 or None)
                return self.server.announce(msg.round, msg.body["model_digest"])
            assert self.server.announcement_ is not None  # the current round was announced
            return self.server.announcement_

    def _evidence(self) -> list[bytes]:
        """S0: its aggregate and seal of the current round when agreed (what S1 follows), else empties."""
        s = self.server
        if s.participants_ is None:
            return [b"", b""]
        try:
            agg = s.aggregate()
        except JanusError:
            return [b"", b""]
        seal = s.seal(s.peer_seal_commit_msg_) if s.config.mode == "sketch" and s.peer_seal_commit_msg_ else b""
        return [agg, seal]

    def _follow(self, timeout: float, stop: threading.Event) -> None:
        """S0: follow its current agreed round to the next model version with S1's aggregate (and seal)."""
        s, peer = self.server, self._peer()
        with self.lock:
            pending = s.participants_ is not None and s.model_digest_ == s.head_ and s.head_released_
            rnd = s.round_
        if not pending or rnd is None:
            return
        deadline = time.monotonic() + timeout
        sign = s.keys.sign

        def fetch(method: str) -> bytes:
            while True:
                try:
                    return peer.call(method, read_request(method, s.session, rnd, sign))
                except (NotReadyError, ServerUnavailableError):
                    if time.monotonic() > deadline or stop.is_set():
                        raise
                    stop.wait(0.2)

        agg1 = fetch("Aggregate")
        seal1 = fetch("Seal") if s.config.mode == "sketch" else None
        with self.lock:
            s.advance(agg1, peer_seal=seal1)

    def Agree(self, req: bytes) -> bytes:
        """S1: close the round, fix the participant set with S0's signed list; returns S1's own signed list.

        Only S0 gets an answer: the request must be its signed PARTICIPANTS of the current round.
        """
        msg = decode(req, max_bytes=self.server.participants_max_bytes, max_dim=2**21, session=self.server.session,
                     expect=(MsgType.PARTICIPANTS,))
        msg.verify(expected_sender=self.server.peer)
        with self.lock:
            if msg.round != self.server.round_:
                raise errors.WrongRoundError(f"Agree names round {msg.round}; the current round is {self.server.round_}")
            own = self.server.participants()  # closes the round: later uploads get RoundClosedError
            if self.server.participants_ is None:
                self.server.agree(req)
            self._maybe_finish()
            return own

    def SealCommit(self, req: bytes) -> bytes:
        """S1 (sketch mode): take S0's seal commitment, reveal S1's seal, return S1's own commitment.

        S1's commitment is fixed by its agreed aggregate and its secret nonce before it sees anything
        but S0's commitment, and S0's later reveal must open the commitment S1 signed into its seal.
        """
        with self.lock:
            own = self.server.seal_commit()
            seal = self.server.seal(req)
            self.finished.setdefault(self.server._current_round, {})["seal"] = seal
            self._maybe_finish()
            return own

    def SketchCheck(self, req: bytes) -> bytes:
        """S1 (sketch mode, range proof): compare S0's per-participant sketch pairs with its own.

        The request is msgpack ``[SEAL0, SKETCH_CHECK0]``; the answer ``[SEAL1, SKETCH_CHECK1]``. Both servers
        then name the same participants whose sketch commitment contradicts their upload; with any, S1
        lists the round failed (no aggregate), otherwise it releases its aggregate.
        """
        try:
            seal0, pairs0 = msgpack.unpackb(req, raw=False, max_bin_len=2**31)
        except Exception as err:  # noqa: BLE001 - any decoding failure is a malformed request
            raise errors.MalformedMessageError(f"SketchCheck takes [seal0, sketch_check0]: {err}") from err
        with self.lock:
            s, rnd = self.server, self.server.round_
            if rnd is None or "seal" not in self.finished.get(rnd, {}):
                raise NotReadyError("S1 has not sealed the current round")
            if s.participants_ is None or any(c not in s.sketch_commits_ for c in s.participants_):
                raise NotReadyError("S1 does not hold every participant's sketch commitment yet")
            own = s.sketch_pairs(seal0)
            if s.check_sketch(seal0, pairs0):
                self.failed.add(rnd)
            else:
                self._maybe_finish()
            return msgpack.packb([self.finished[rnd]["seal"], own], use_bin_type=True)

    def _sketch_check(self, rnd: int, deadline: float, stop: threading.Event) -> None:
        """S0: once every participant's sketch commitment is in, run the per-client check with S1."""
        s, peer = self.server, self._peer()
        while True:
            with self.lock:
                ready = s.participants_ is not None and all(c in s.sketch_commits_ for c in s.participants_)
            if ready:
                break
            if time.monotonic() > deadline or stop.is_set():
                raise errors.IncompleteRoundError("participants did not all send their sketch commitments in time")
            stop.wait(0.05)
        while True:
            try:
                with self.lock:
                    own_seal = self.finished[rnd]["seal"]
                seal_req = read_request("Seal", s.session, rnd, s.keys.sign)
                seal1 = peer.call("Seal", seal_req)
                with self.lock:
                    request = msgpack.packb([own_seal, s.sketch_pairs(seal1)], use_bin_type=True)
                answer = peer.call("SketchCheck", request)
                break
            except (NotReadyError, ServerUnavailableError):
                if time.monotonic() > deadline or stop.is_set():
                    raise
                stop.wait(0.1)
        seal1, pairs1 = msgpack.unpackb(answer, raw=False, max_bin_len=2**31)
        with self.lock:
            cheaters = s.check_sketch(seal1, pairs1)
            if not cheaters:
                self._maybe_finish()
        if cheaters:
            raise errors.SketchCheatError(
                f"{len(cheaters)} participants sent a sketch commitment that contradicts their upload "
                f"({', '.join(c.hex()[:16] for c in cheaters)}): no aggregate; their uploads are refused from now on",
                cheaters=cheaters)

    # --- round bookkeeping ------------------------------------------------------------------------
    def _maybe_finish(self) -> None:
        s, rnd = self.server, self.server.round_
        if s.participants_ is None or rnd is None or rnd in self.finished and "aggregate" in self.finished[rnd]:
            return
        entry = self.finished.setdefault(rnd, {})
        if s.config.mode == "sketch":
            if "seal" not in entry or any(c not in s.sketch_commits_ for c in s.participants_):
                return
            if s.config.range_proof and (not s.sketch_checked_ or s.cheaters_):
                return  # the per-client sketch check with the peer decides first
        entry["aggregate"] = s.aggregate()
        while len(self.finished) > 8:
            self.finished.popitem(last=False)

    def coordinate(self, *, rounds: int, expect: int, round_timeout: float = 30.0, gap: float = 1.0,
                   settle: float = 1.0, open_timeout: float = 60.0,
                   first_round: int | None = None, stop: threading.Event | None = None) -> list[int]:
        """S0 only: run ``rounds`` rounds; returns the numbers of the rounds that produced an aggregate.

        Each round announces S0's current model version: the initial model, then the successor of the
        last round both servers verified (S0 checks S1's aggregate before it announces the next round,
        and S1 checks S0's before it opens it). A round closes once S0 holds ``expect`` uploads and S1
        holds as many or has not grown for ``settle`` seconds, or after ``round_timeout``. After a
        successful round, ``expect`` becomes the size of its participant set (clients that vanished are
        not waited for again).
        """
        assert isinstance(self.server, AggregationServer) and self.peer is not None
        stop = stop or threading.Event()
        done: list[int] = []
        self.resume(timeout=round_timeout, stop=stop)  # a sketch round agreed before a restart
        start = first_round if first_round is not None else (self.server.round_ or 0) + 1
        for rnd in range(start, start + rounds):
            if stop.is_set():
                break
            try:
                expect = self._run_round(rnd, expect, round_timeout, settle, open_timeout, stop)
                done.append(rnd)
                log.info("round %d finished", rnd)
            except JanusError as err:
                with self.lock:
                    self.failed.add(rnd)
                log.warning("round %d failed: %s: %s", rnd, type(err).__name__, err)
            stop.wait(gap)
        return done

    def _peer(self) -> Remote:
        if self.peer is None:
            raise ProtocolError("this node has no peer (S0 needs S1's address)")
        return self.peer

    def _check_peer_announcement(self, reply: bytes, own: bytes) -> None:
        """S0: S1's answer to Open must announce the same round, model, configuration and roster.

        Otherwise no client could take part (each compares the two announcements), so the round is
        listed failed at once instead of after its timeout.
        """
        s = self.server
        theirs = decode(reply, max_bytes=4096, session=s.session, expect=(MsgType.ANNOUNCE,))
        theirs.verify(expected_sender=s.peer)
        mine = decode(own, max_bytes=4096, session=s.session, expect=(MsgType.ANNOUNCE,))
        fields = ("model_digest", "config_digest", "roster_digest")
        if theirs.round != mine.round or any(theirs.body[f] != mine.body[f] for f in fields):
            raise errors.ModelInconsistencyError(
                f"S1 answered Open for round {mine.round} with an announcement of round {theirs.round} for another "
                "model, configuration or roster: no client can take part, the round is failed")

    def _run_round(self, rnd: int, expect: int, round_timeout: float, settle: float, open_timeout: float,
                   stop: threading.Event) -> int:
        peer = self._peer()
        self._follow(open_timeout, stop)  # the previous round's successor model, checked with S1's aggregate
        with self.lock:
            evidence = self._evidence()
            ann = self.server.announce(rnd, self.server.head_)
        request = msgpack.packb([ann, *evidence], use_bin_type=True)
        deadline = time.monotonic() + open_timeout
        while True:  # S1 may be restarting: retry opening until open_timeout
            try:
                self._check_peer_announcement(peer.call("Open", request), ann)
                break
            except ServerUnavailableError:
                if time.monotonic() > deadline or stop.is_set():
                    raise
                stop.wait(0.2)
        deadline = time.monotonic() + round_timeout
        last1, since = -1, time.monotonic()
        while time.monotonic() < deadline and not stop.is_set():
            count = read_request("Count", self.server.session, rnd, self.server.keys.sign)
            c0, c1 = len(self.server.uploads_), int.from_bytes(peer.call("Count", count), "little")
            if c1 != last1:
                last1, since = c1, time.monotonic()
            # S0 holds everyone expected; S1 either too, or it has stopped growing (a client died in between)
            if c0 >= expect and (c1 >= expect or time.monotonic() - since >= settle):
                break
            stop.wait(0.05)
        with self.lock:
            own = self.server.participants()  # closes the round atomically under the lock
        theirs = peer.call("Agree", own)
        with self.lock:
            agreed = len(self.server.agree(theirs))
            self._maybe_finish()
        if self.server.config.mode == "sketch":
            with self.lock:
                own_commit = self.server.seal_commit()
            peer_commit = peer.call("SealCommit", own_commit)
            with self.lock:
                self.finished.setdefault(rnd, {})["seal"] = self.server.seal(peer_commit)
            if self.server.config.range_proof:
                self._sketch_check(rnd, deadline + round_timeout, stop)
            while time.monotonic() < deadline + round_timeout and not stop.is_set():
                with self.lock:
                    done = "aggregate" in self.finished.get(rnd, {})
                if done:
                    break
                stop.wait(0.05)
            else:
                raise errors.IncompleteRoundError("participants did not all send their sketch commitments in time")
        # S0 checks S1's aggregate against its own as a client would: a round whose aggregate does not
        # verify (a cheating S1, or in sketch mode a participant whose masked vector contradicts its
        # commitment) is listed as failed, not finished, and the model does not move on
        self._follow(open_timeout, stop)
        return agreed


def _generic_handler(node: ServerNode) -> grpc.GenericRpcHandler:
    def wrap(fn):
        def handle(request: bytes, context: grpc.ServicerContext) -> bytes:
            try:
                return fn(request)
            except JanusError as err:
                context.abort(_CODES.get(type(err), grpc.StatusCode.INVALID_ARGUMENT), f"{type(err).__name__}: {err}")
                raise  # abort raises; this line only tells type checkers that no value is returned
        return grpc.unary_unary_rpc_method_handler(handle)

    return grpc.method_handlers_generic_handler(SERVICE, {m: wrap(getattr(node, m)) for m in METHODS})


def start_server(node: ServerNode, address: str, *, tls: TLSConfig | None = None, workers: int = 8) -> tuple[grpc.Server, int]:
    """Serve ``node`` on ``address`` (``host:port``, port 0 picks a free one); returns (server, port)."""
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=workers),
                         options=_options(node.server.config.max_message_bytes * 2 + 2**20))
    server.add_generic_rpc_handlers((_generic_handler(node),))
    if tls is not None and tls.cert is not None:
        port = server.add_secure_port(address, grpc.ssl_server_credentials([(tls.key, tls.cert)]))
    else:
        port = server.add_insecure_port(address)
    server.start()
    return server, port


class NetworkClient:
    """Drives a :class:`JanusClient` against the two gRPC servers.

    Parameters
    ----------
    client : JanusClient
        The protocol client (holds keys, config, server public keys).
    s0, s1 : str
        ``host:port`` of S0 and S1.
    tls : TLSConfig, optional
        Optional :class:`TLSConfig` with the CA certificate.
    poll : float
        Seconds between polls while waiting for a round or an aggregate.
    """

    def __init__(self, client: JanusClient, *, s0: str, s1: str, tls: TLSConfig | None = None,
                 poll: float = 0.2, timeout: float = 10.0) -> None:
        self.client, self.poll = client, poll
        mb = client.config.max_message_bytes * 2 + 2**20
        self.s0 = Remote(s0, max_bytes=mb, tls=tls, timeout=timeout)
        self.s1 = Remote(s1, max_bytes=mb, tls=tls, timeout=timeout)

    def _wait(self, fn, deadline: float):
        while True:
            try:
                return fn()
            except (NotReadyError, ServerUnavailableError):
                if time.monotonic() > deadline:
                    raise
                time.sleep(self.poll)

    def _request(self, method: str, rnd: int) -> bytes:
        return read_request(method, self.client.session, rnd, self.client.key)

    def wait_for_round(self, after: int, timeout: float, *, model: bytes | np.ndarray | None = None) -> int:
        """Block until both servers announce a round later than ``after``; begin it and return its number.

        ``model`` is the global model this client received (the bytes of the weights file, or an array);
        when given, a round whose announced digest differs is refused (:class:`ModelInconsistencyError`).
        """
        deadline = time.monotonic() + timeout

        def fetch():
            a0, a1 = self.s0.call("Announcement"), self.s1.call("Announcement")
            r0 = decode(a0, max_bytes=4096).round
            r1 = decode(a1, max_bytes=4096).round
            if min(r0, r1) <= after or r0 != r1:
                raise NotReadyError("no new round yet")
            return a0, a1

        a0, a1 = self._wait(fetch, deadline)
        announced = decode(a0, max_bytes=4096).round
        try:
            return self.client.begin_round(a0, a1, model=model)
        except errors.ModelReplayError:
            if not self.catch_up(announced):
                raise
        return self.client.begin_round(a0, a1, model=model)

    def catch_up(self, before: int) -> bool:
        """Verify the finished rounds this client missed, up to round ``before`` (exclusive), in order.

        The round the client began but did not finish comes first. Each verified round moves the client
        to the successor model version; rounds the servers list as failed or no longer hold are skipped. Returns True when the client moved at least one version.
        """
        moved = False
        start = (self.client.round_ or 0) + (1 if self.client.round_finished_ else 0)
        for rnd in range(start, before):
            seals: dict[str, bytes] = {}
            try:
                if self.client.config.mode == "sketch":
                    req = self._request("Seal", rnd)
                    seals = {"seal0": self.s0.call("Seal", req), "seal1": self.s1.call("Seal", req)}
                req = self._request("Aggregate", rnd)
                agg0, agg1 = self.s0.call("Aggregate", req), self.s1.call("Aggregate", req)
            except (RoundFailedError, NotReadyError):
                continue
            try:
                self.client.follow(agg0, agg1, **seals)
            except errors.ExcludedError:  # its own unfinished round: verified, without its upload
                pass
            moved = True
        return moved

    def participate(self, update: np.ndarray | None, timeout: float = 60.0) -> RoundResult:
        """Upload ``update`` (or only verify when None) in the begun round and return the verified aggregate.

        Raises :class:`RoundFailedError` or :class:`ServerUnavailableError` on a clean failure, or a
        :class:`VerificationError` if the servers' answer does not verify; never returns an unverified sum.
        """
        rnd = self.client.round_
        if rnd is None:
            raise ProtocolError("call wait_for_round first")
        deadline = time.monotonic() + timeout
        if update is not None:
            up = self.client.upload(update)
            self.s0.call("Submit", up.to_s0)
            self.s1.call("Submit", up.to_s1)
        seals: dict[str, bytes] = {}
        seal_req, agg_req = self._request("Seal", rnd), self._request("Aggregate", rnd)
        if self.client.config.mode == "sketch":
            seals = {"seal0": self._wait(lambda: self.s0.call("Seal", seal_req), deadline),
                     "seal1": self._wait(lambda: self.s1.call("Seal", seal_req), deadline)}
            if update is not None:
                up = self.client.sketch_commit(seals["seal0"], seals["seal1"])
                try:
                    self.s0.call("Submit", up.to_s0)
                    self.s1.call("Submit", up.to_s1)
                except errors.NotAParticipantError:
                    pass  # left out at agreement: the signed aggregates say why (ExcludedError below)
        # poll both servers: an aggregate either one releases is remembered at once (note_aggregate), so a
        # server that withholds its own cannot hide that the other released one
        got: dict[str, bytes] = {}
        while len(got) < 2:
            for name, remote in (("s0", self.s0), ("s1", self.s1)):
                if name in got:
                    continue
                try:
                    got[name] = remote.call("Aggregate", agg_req)
                    self.client.note_aggregate(got[name])
                except (NotReadyError, ServerUnavailableError):
                    if time.monotonic() > deadline:
                        raise
            if len(got) < 2:
                time.sleep(self.poll)
        return self.client.finish_round(got["s0"], got["s1"], **seals)

    def close(self) -> None:
        """Close the gRPC channel."""
        self.s0.close()
        self.s1.close()


def make_server(role: str, *, config, keys, session: bytes, peer_sign: bytes, peer_kem: bytes | None = None,
                state_dir=None, roster=None, model: np.ndarray | None = None) -> _Server:
    """S0 (``role="s0"``) or S1 (``"s1"``) protocol object (``peer_kem``: the peer's X25519 key, for range proofs)."""
    if role not in ("s0", "s1"):
        raise errors.ConfigError(f"role must be 's0' or 's1', got {role!r}")
    cls = AggregationServer if role == "s0" else MaskServer
    peer = ServerPublicKeys(sign=peer_sign, kem=peer_kem) if peer_kem is not None else peer_sign
    return cls(config=config, keys=keys, session=session, peer=peer, state_dir=state_dir, roster=roster,
               model=model)
