"""Command-line deployment: ``keygen``, ``bundle``, ``enroll``, ``serve --role s0|s1`` and ``client`` (see README)."""

from __future__ import annotations

import argparse
import hashlib
import json
import logging
import os
import signal
import sys
import threading
from pathlib import Path

import msgpack
import numpy as np

from janus_sa import crypto
from janus_sa.crypto import ServerKeys, ServerPublicKeys, SigningKey
from janus_sa.errors import ExcludedError, JanusError
from janus_sa.net import NetworkClient, Remote, ServerNode, TLSConfig, make_server, start_server
from janus_sa.protocol import JanusClient, JanusConfig, Roster, Upload, _atomic_write
from janus_sa.quantize import Quantizer
from janus_sa.wire import decode, encode

COMMANDS = ("keygen", "bundle", "enroll", "serve", "client")


def _config(d: dict) -> JanusConfig:
    q = Quantizer(clipping_range=d["clipping_range"], quantization_range=d["quantization_range"],
                  modulus_range=d["modulus_range"])
    initial = d.get("initial_model")
    return JanusConfig(dim=d["dim"], mode=d["mode"], sketch_k=d["sketch_k"], quantizer=q,
                       min_participants=d.get("min_participants"), n_expected=d.get("n_expected"),
                       dropout_rate=d.get("dropout_rate", 0.5), learning_rate=d.get("learning_rate", 1.0),
                       batch_size=d.get("batch_size", 1), range_proof=d.get("range_proof", False),
                       initial_model=bytes.fromhex(initial) if initial else None).validate()


def load_model(path: str | os.PathLike | None, dim: int, config: JanusConfig | None = None) -> np.ndarray | None:
    """The initial model of a ``--model`` file: a ``.npy`` float vector of length ``dim`` (None without a file).

    With ``config``, a deployment that names an initial model needs the file (every party computes each
    later version from it) and the file must be that model.
    """
    if not path:
        if config is not None and config.initial_model is not None:
            raise SystemExit("this deployment names an initial model: pass it with --model (the .npy given to bundle)")
        return None
    weights = np.load(path, allow_pickle=False)
    if weights.ndim != 1 or weights.shape[0] != dim or not np.issubdtype(weights.dtype, np.floating):
        raise ValueError(f"{path}: the model must be a .npy float vector of length {dim}; got {weights.dtype} "
                         f"{weights.shape}")
    weights = weights.astype(np.float64)
    if config is not None and crypto.model_digest(weights) != config.initial_digest:
        raise SystemExit(f"{path} is not the initial model this deployment names (digests differ)")
    return weights


LOOPBACK = ("127.0.0.1", "localhost", "::1", "[::1]")


def _is_loopback(address: str) -> bool:
    host = address.rsplit(":", 1)[0] if ":" in address and not address.startswith("[") else address
    if address.startswith("["):
        host = address[:address.index("]") + 1]
    return host in LOOPBACK or host.startswith("127.")


def _require_tls(args: argparse.Namespace, addresses: list[str], *, have_tls: bool) -> None:
    """Refuse plaintext gRPC to or from a non-loopback address unless ``--insecure-plaintext`` was given."""
    remote = [a for a in addresses if a and not _is_loopback(a)]
    if remote and not have_tls and not args.insecure_plaintext:
        raise SystemExit(f"{', '.join(remote)} is not a loopback address: use TLS (--tls-cert/--tls-key on servers, "
                         "--tls-ca on clients and S0) or pass --insecure-plaintext explicitly (anyone on the path "
                         "then sees every message and can replay signed read requests)")


def write_private_key(path: str | os.PathLike, raw: bytes) -> None:
    """Create ``path`` with mode 0600 from the start (``os.open``) and write ``raw``; never overwrites."""
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:
        raise SystemExit(f"{path} exists; refusing to overwrite a key (move it away first)") from None
    try:
        os.write(fd, raw)
        os.fsync(fd)
    finally:
        os.close(fd)


def keygen(args: argparse.Namespace) -> int:
    """Create one party's keys on its own machine: ``<name>.key`` (0600) and the public ``<name>.pub.json``."""
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    name = args.name or args.role
    if args.role == "client":
        key = SigningKey()
        raw, pub = key.to_bytes(), {"role": "client", "sign": key.public.hex()}
    else:
        keys = ServerKeys()
        raw, pub = keys.to_bytes(), {"role": args.role, "sign": keys.public.sign.hex(), "kem": keys.public.kem.hex()}
    write_private_key(out / f"{name}.key", raw)
    (out / f"{name}.pub.json").write_text(json.dumps(pub, indent=2))
    return 0


def bundle(args: argparse.Namespace) -> int:
    """Assemble the public deployment file from the two servers' public bundles and the configuration."""
    pubs = {}
    for role in ("s0", "s1"):
        pub = json.loads(Path(getattr(args, role)).read_text())
        if pub.get("role") != role:
            raise SystemExit(f"--{role} names a bundle of role {pub.get('role')!r}")
        pubs[role] = {"sign": pub["sign"], "kem": pub["kem"]}
    if pubs["s0"]["sign"] == pubs["s1"]["sign"]:
        raise SystemExit("S0 and S1 bundles hold the same key: each server must generate its own")
    initial = load_model(args.model, args.dim)
    cfg = {"dim": args.dim, "mode": args.mode, "sketch_k": args.sketch_k, "clipping_range": args.clipping_range,
           "quantization_range": args.quantization_range, "modulus_range": args.modulus_range,
           "min_participants": args.min_participants, "n_expected": args.n_expected,
           "dropout_rate": args.dropout_rate, "learning_rate": args.learning_rate, "batch_size": args.batch_size,
           "range_proof": args.range_proof,
           "initial_model": crypto.model_digest(initial).hex() if initial is not None else None}
    _config(cfg)
    dep = {"session": args.session or os.urandom(16).hex(), "config": cfg, **pubs}
    Path(args.out).write_text(json.dumps(dep, indent=2))
    return 0


def _load(path: str) -> tuple[dict, JanusConfig, bytes]:
    dep = json.loads(Path(path).read_text())
    return dep, _config(dep["config"]), bytes.fromhex(dep["session"])


def _public_keys(dep: dict) -> dict[str, ServerPublicKeys]:
    return {r: ServerPublicKeys(sign=bytes.fromhex(dep[r]["sign"]), kem=bytes.fromhex(dep[r]["kem"]))
            for r in ("s0", "s1")}


def load_roster(path: str | os.PathLike, dep: dict) -> Roster:
    """The roster file written by ``enroll``, checked against both servers' keys in the deployment file."""
    data = json.loads(Path(path).read_text())
    if not data.get("s0") or not data.get("s1"):
        missing = [r for r in ("s0", "s1") if not data.get(r)]
        raise SystemExit(f"{path}: roster version {data.get('version')} is not signed by {', '.join(missing)} yet")
    pk = _public_keys(dep)
    return Roster.from_signed(bytes.fromhex(data["s0"]), bytes.fromhex(data["s1"]), s0=pk["s0"].sign,
                              s1=pk["s1"].sign, session=bytes.fromhex(dep["session"]))


def enroll_cmd(args: argparse.Namespace) -> int:
    """Sign the roster (all ``--clients`` public bundles, version ``--version``) as S0 or S1 into ``--roster``."""
    dep, config, session = _load(args.deployment)
    keys = ServerKeys.from_bytes(Path(args.key).read_bytes())
    if keys.public.sign.hex() != dep[args.role]["sign"]:
        raise SystemExit(f"{args.key} is not the {args.role} key of this deployment")
    members = []
    for f in args.clients:
        pub = json.loads(Path(f).read_text())
        if pub.get("role") != "client":
            raise SystemExit(f"{f} is not a client bundle")
        members.append(bytes.fromhex(pub["sign"]))
    other = "s1" if args.role == "s0" else "s0"
    server = make_server(args.role, config=config, keys=keys, session=session,
                         peer_sign=bytes.fromhex(dep[other]["sign"]),
                         peer_kem=bytes.fromhex(dep[other]["kem"]))
    path = Path(args.roster)
    ids = sorted(m.hex() for m in members)
    data = json.loads(path.read_text()) if path.exists() else {}
    previous = data.get("previous")  # the last roster both servers signed: a new version keeps its batches
    if data.get("s0") and data.get("s1") and data.get("version", args.version) < args.version:
        previous = {"s0": data["s0"], "s1": data["s1"]}
    if previous:
        pk = _public_keys(dep)
        server.install_roster(Roster.from_signed(bytes.fromhex(previous["s0"]), bytes.fromhex(previous["s1"]),
                                                 s0=pk["s0"].sign, s1=pk["s1"].sign, session=session))
    signed = server.sign_roster(members, version=args.version)
    if data.get("version") != args.version or data.get("members") != ids:
        # a new roster: old signatures go
        data = {"version": args.version, "members": ids, "s0": "", "s1": "", "previous": previous}
    data[args.role] = signed.hex()
    path.write_text(json.dumps(data, indent=2))
    return 0


def _tls(args: argparse.Namespace) -> TLSConfig | None:
    read = lambda p: Path(p).read_bytes() if p else None  # noqa: E731
    if not (args.tls_cert or args.tls_ca):
        return None
    return TLSConfig(cert=read(args.tls_cert), key=read(args.tls_key), ca=read(args.tls_ca))


def serve(args: argparse.Namespace) -> int:
    """Run S0 (which also coordinates ``--rounds`` rounds) or S1 until killed."""
    dep, config, session = _load(args.deployment)
    keys = ServerKeys.from_bytes(Path(args.key).read_bytes())
    if keys.public.sign.hex() != dep[args.role]["sign"]:
        raise SystemExit(f"{args.key} is not the {args.role} key of this deployment")
    other = "s1" if args.role == "s0" else "s0"
    tls = _tls(args)
    _require_tls(args, [f"{args.host}:{args.port}", args.peer or ""],
                 have_tls=tls is not None and tls.cert is not None and (args.peer is None or tls.ca is not None))
    server = make_server(args.role, config=config, keys=keys, session=session,
                         peer_sign=bytes.fromhex(dep[other]["sign"]),
                         peer_kem=bytes.fromhex(dep[other]["kem"]), state_dir=args.state_dir,
                         roster=load_roster(args.roster, dep), model=load_model(args.model, config.dim, config))
    peer = Remote(args.peer, max_bytes=config.max_message_bytes * 2 + 2**20, tls=tls) if args.peer else None
    node = ServerNode(server, peer=peer)
    if args.die_at_round is not None:
        _install_fault(node, args.die_at_round, args.die_after_uploads)
    if args.die_after_agree_round is not None:
        _install_agree_fault(node, args.die_after_agree_round)
    grpc_server, port = start_server(node, f"{args.host}:{args.port}", tls=tls)
    print(f"READY {port}", flush=True)
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    if args.role == "s0":
        if peer is None:
            raise SystemExit("serve --role s0 needs --peer host:port of S1")
        done = node.coordinate(rounds=args.rounds, expect=args.expect, round_timeout=args.round_timeout,
                               gap=args.gap, settle=args.settle, stop=stop)
        print(json.dumps({"finished_rounds": done, "failed_rounds": sorted(node.failed)}), flush=True)
        stop.wait(args.linger)
    else:
        stop.wait()
    grpc_server.stop(grace=1.0)
    return 0


def _install_agree_fault(node: ServerNode, rnd: int) -> None:
    """Fault injection for tests: S1 SIGKILLs itself 50 ms after answering S0's Agree of round ``rnd``."""
    agree = node.Agree

    def dying_agree(req: bytes) -> bytes:
        out = agree(req)
        if node.server.round_ == rnd:
            threading.Timer(0.05, lambda: os.kill(os.getpid(), signal.SIGKILL)).start()
        return out

    setattr(node, "Agree", dying_agree)  # noqa: B010 - fault injection replaces the bound handler


def _install_fault(node: ServerNode, rnd: int, after: int) -> None:
    """Fault injection for tests: the server SIGKILLs itself after accepting ``after`` uploads of round ``rnd``."""
    submit = node.Submit

    def dying_submit(req: bytes) -> bytes:
        out = submit(req)
        if node.server.round_ == rnd and len(node.server.uploads_) >= after:
            os.kill(os.getpid(), signal.SIGKILL)
        return out

    setattr(node, "Submit", dying_submit)  # noqa: B010 - fault injection replaces the bound handler


def client_update(index: int, rnd: int, dim: int) -> np.ndarray:
    """The deterministic update of client ``index`` in round ``rnd`` used by the ``client`` command."""
    seed = int.from_bytes(hashlib.sha256(f"{index}/{rnd}".encode()).digest()[:8], "little")
    return np.random.default_rng(seed).uniform(-1, 1, dim)


def _masked_plus_one(jc: JanusClient):
    """Fault injection: ``jc.upload`` that sends ``y_i + 1`` on coordinate 0 (re-signed; commitments kept)."""
    honest = jc.upload

    def upload(update: np.ndarray) -> Upload:
        up = honest(update)
        m = decode(up.to_s0, max_bytes=jc.config.max_message_bytes)
        if jc.config.mode == "exact":
            sc = crypto.words_to_scalars(m.body["masked"])
            sc[0] = (sc[0] + 1) % crypto.GROUP_ORDER
            masked = crypto.scalars_to_words(sc)
        else:
            masked = m.body["masked"].copy()
            masked[0] += np.uint32(1)
        return Upload(encode(m.type, m.session, m.round, {**m.body, "masked": masked}, jc.key), up.to_s1)

    return upload


def save_client_state(path: str | os.PathLike, jc: JanusClient) -> None:
    """Write the client's place in the model chain (last round, version, weights, spent versions) atomically.

    A client restarted from it keeps refusing a second upload for a version it uploaded for, also when a
    server that lost its own state re-opens that version.
    """
    weights = b"" if jc.model_ is None else jc.model_.astype("<f8").tobytes()
    blob = msgpack.packb({"round": jc.round_, "head": jc.head_, "weights": weights,
                          "spent": [[k, v] for k, v in jc.spent_.items()],
                          "released": sorted(jc.released_), "finished": jc.round_finished_}, use_bin_type=True)
    _atomic_write(Path(path), blob, 0o600)


def load_client_state(path: str | os.PathLike, jc: JanusClient) -> bool:
    """Restore what :func:`save_client_state` wrote into ``jc``; False when there is no file yet."""
    path = Path(path)
    if not path.exists():
        return False
    d = msgpack.unpackb(path.read_bytes(), raw=False)
    jc.round_, jc.head_ = d["round"], bytes(d["head"])
    jc.model_ = np.frombuffer(d["weights"], dtype="<f8").astype(np.float64) if d["weights"] else None
    jc.spent_ = {bytes(k): int(v) for k, v in d["spent"]}
    jc.released_ = {bytes(k) for k in d.get("released", [])}
    jc.round_finished_ = bool(d.get("finished", True))
    return True


def _saving_upload(jc: JanusClient, path: Path):
    """``jc.upload`` that records the spent version on disk before the upload can leave the process."""
    inner = jc.upload

    def upload(update: np.ndarray) -> Upload:
        up = inner(update)
        save_client_state(path, jc)
        return up

    return upload


def client(args: argparse.Namespace) -> int:
    """Take part in ``--rounds`` rounds; print one JSON line per round (verified sum or the error)."""
    dep, config, session = _load(args.deployment)
    pk = _public_keys(dep)
    tls = _tls(args)
    _require_tls(args, [args.s0, args.s1], have_tls=tls is not None and tls.ca is not None)
    jc = JanusClient(config=config, s0=pk["s0"], s1=pk["s1"], session=session,
                     signing_key=SigningKey.from_bytes(Path(args.key).read_bytes()), roster=load_roster(args.roster, dep),
                     model=load_model(args.model, config.dim, config))
    state = None
    if args.state_dir:
        Path(args.state_dir).mkdir(parents=True, exist_ok=True)
        state = Path(args.state_dir) / "client.state"
        load_client_state(state, jc)
    net = NetworkClient(jc, s0=args.s0, s1=args.s1, tls=tls)
    model = None  # the client follows the model versions itself from the initial model
    last = args.after_round
    for _ in range(args.rounds):
        if args.last_round is not None and last >= args.last_round:
            break
        try:
            rnd = net.wait_for_round(last, timeout=args.timeout, model=model)
        except JanusError as err:
            print(json.dumps({"round": None, "ok": False, "error": type(err).__name__}), flush=True)
            return 1
        last = rnd
        line = {"round": rnd, "index": args.index}
        try:
            jc.__dict__.pop("upload", None)
            if args.masked_plus_one_round == rnd:  # fault injection: a malicious client in the named round
                setattr(jc, "upload", _masked_plus_one(jc))  # noqa: B010 - shadows the method on this object
            if state is not None:
                setattr(jc, "upload", _saving_upload(jc, state))  # noqa: B010 - as above
            if args.kill_after_s0_upload == rnd:  # fault injection: die between the two uploads
                up = jc.upload(client_update(args.index, rnd, config.dim))
                net.s0.call("Submit", up.to_s0)
                os.kill(os.getpid(), signal.SIGKILL)
            res = net.participate(client_update(args.index, rnd, config.dim), timeout=args.timeout)
            line.update(ok=True, n=res.n_participants, sum_codes=res.sum_codes.tolist(),
                        excluded={c.hex(): why for c, why in res.excluded.items()})
        except JanusError as err:
            line.update(ok=False, error=type(err).__name__)
            if isinstance(err, ExcludedError):  # the signed reason, and the server whose listed pair is false
                line.update(reason=err.reason, blamed=list(err.blamed))
        if state is not None:
            save_client_state(state, jc)
        print(json.dumps(line), flush=True)
    net.close()
    return 0


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of the ``keygen``, ``bundle``, ``enroll``, ``serve`` and ``client`` commands."""
    p = argparse.ArgumentParser(prog="python -m janus_sa", description=__doc__)
    sub = p.add_subparsers(dest="command", required=True)
    k = sub.add_parser("keygen", help="create one party's keys: <name>.key (0600) and <name>.pub.json")
    k.add_argument("--role", required=True, choices=["s0", "s1", "client"])
    k.add_argument("--out", required=True, help="directory on this party's own machine")
    k.add_argument("--name", help="file stem (default: the role)")
    b = sub.add_parser("bundle", help="assemble deployment.json from the servers' public bundles and the config")
    b.add_argument("--s0", required=True, help="s0.pub.json")
    b.add_argument("--s1", required=True, help="s1.pub.json")
    b.add_argument("--out", required=True)
    b.add_argument("--session", help="hex session id (default: random)")
    b.add_argument("--dim", type=int, required=True)
    b.add_argument("--mode", default="exact", choices=["exact", "sketch"])
    b.add_argument("--sketch-k", type=int, default=32)
    b.add_argument("--clipping-range", type=float, default=8.0)
    b.add_argument("--quantization-range", type=int, default=1 << 22)
    b.add_argument("--modulus-range", type=int, default=1 << 32)
    b.add_argument("--min-participants", type=int,
                   help="smallest participant set accepted (default max(min(3, n), ceil((1 - dropout rate) n)))")
    b.add_argument("--n-expected", type=int, help="clients a round expects (default: the roster size)")
    b.add_argument("--dropout-rate", type=float, default=0.5, help="fraction of clients a round tolerates losing")
    b.add_argument("--learning-rate", type=float, default=1.0, help="update rule: w_next = w + lr * mean")
    b.add_argument("--batch-size", type=int, default=1,
                   help="participation batches: a client is aggregated only with its whole batch (1: off)")
    b.add_argument("--range-proof", action="store_true",
                   help="each upload proves its codes lie in [0, quantization range); servers exclude a failed proof")
    b.add_argument("--model", help="initial model, a .npy float vector of length --dim (default zeros)")
    e = sub.add_parser("enroll", help="sign the client roster as S0 or S1 (each server runs it once per version)")
    e.add_argument("--role", required=True, choices=["s0", "s1"])
    e.add_argument("--key", required=True, help="this server's private key file")
    e.add_argument("--deployment", required=True, help="deployment.json written by bundle")
    e.add_argument("--clients", nargs="+", required=True, help="every enrolled client's .pub.json")
    e.add_argument("--version", type=int, required=True, help="roster version (revoke a key with a higher one)")
    e.add_argument("--roster", required=True, help="roster.json to create or countersign (a new version keeps the "
                   "batches of the version it replaces)")
    for name in ("serve", "client"):
        s = sub.add_parser(name)
        s.add_argument("--tls-cert")
        s.add_argument("--tls-key")
        s.add_argument("--tls-ca")
        s.add_argument("--timeout", type=float, default=60.0)
        s.add_argument("--insecure-plaintext", action="store_true",
                       help="allow plaintext gRPC to a non-loopback address (TLS is required otherwise)")
        s.add_argument("--model", help="the initial model (.npy, as given to bundle); later rounds use the "
                                       "successor of each verified aggregate")
    s = sub.choices["serve"]
    s.add_argument("--role", required=True, choices=["s0", "s1"])
    s.add_argument("--deployment", required=True, help="deployment.json written by bundle")
    s.add_argument("--key", required=True, help="this server's private key file")
    s.add_argument("--roster", required=True, help="roster.json signed by both servers")
    s.add_argument("--host", default="127.0.0.1")
    s.add_argument("--port", type=int, default=0)
    s.add_argument("--peer", help="host:port of S1 (for S0)")
    s.add_argument("--state-dir")
    s.add_argument("--rounds", type=int, default=1)
    s.add_argument("--expect", type=int, default=1,
                   help="uploads to wait for in the first round (later rounds: the preceding round's participants)")
    s.add_argument("--round-timeout", type=float, default=30.0)
    s.add_argument("--settle", type=float, default=1.0,
                   help="once S0 holds the expected uploads, wait at most this long for S1's count to stop growing")
    s.add_argument("--gap", type=float, default=0.5)
    s.add_argument("--linger", type=float, default=5.0, help="keep serving aggregates this long after the final round")
    s.add_argument("--die-at-round", type=int, help=argparse.SUPPRESS)
    s.add_argument("--die-after-uploads", type=int, default=1, help=argparse.SUPPRESS)
    s.add_argument("--die-after-agree-round", type=int, help=argparse.SUPPRESS)
    c = sub.choices["client"]
    c.add_argument("--deployment", required=True, help="deployment.json written by bundle")
    c.add_argument("--key", required=True, help="this client's private key file")
    c.add_argument("--roster", required=True, help="roster.json signed by both servers")
    c.add_argument("--s0", required=True)
    c.add_argument("--s1", required=True)
    c.add_argument("--rounds", type=int, default=1)
    c.add_argument("--index", type=int, default=0, help="selects the deterministic test update")
    c.add_argument("--after-round", type=int, default=0, help="skip rounds up to this number")
    c.add_argument("--last-round", type=int, help="stop after taking part in (or skipping past) round LAST_ROUND")
    c.add_argument("--state-dir", help="keep this client's place in the model chain here (it then refuses a "
                   "second upload for a version across restarts)")
    c.add_argument("--kill-after-s0-upload", type=int, help=argparse.SUPPRESS)
    c.add_argument("--masked-plus-one-round", type=int, help=argparse.SUPPRESS)
    return p


def main(argv: list[str]) -> int:
    """Run a deployment command (``keygen``, ``bundle``, ``enroll``, ``serve`` or ``client``); returns its exit code."""
    logging.basicConfig(level=logging.WARNING, stream=sys.stderr)
    args = build_parser().parse_args(argv)
    commands = {"keygen": keygen, "bundle": bundle, "enroll": enroll_cmd, "serve": serve, "client": client}
    try:
        return commands[args.command](args)
    except (JanusError, OSError, ValueError, KeyError) as err:  # bad input files or settings: one line, exit 2
        what = f"missing field {err}" if isinstance(err, KeyError) else str(err)
        print(f"janus-sa {args.command}: {type(err).__name__}: {what}", file=sys.stderr)
        return 2
