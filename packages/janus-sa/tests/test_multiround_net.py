"""The two-round differencing attack over real processes on 127.0.0.1 (CLI services and clients).

By S0: a real S1 service and 5 client processes run round 1 (t = 4 of 5) with an S0 driven from this
test; S0 then asks S1 to open round 2 on round 1's model, or on a copy nudged by 1e-12, to aggregate
it without the victim. S1 refuses to open either, so no second aggregate exists and no client uploads.
By S1: a real S0 coordinator and 5 client processes; this test's S1 announces round 2 for round 1's
model. Every client sees two different digests and uploads nothing; S0 sees S1's announcement differ
from its own and lists round 2 as failed at once (not after its 30 s round timeout).
"""

import json
import os
import subprocess
import sys
import time

import msgpack
import numpy as np
import pytest

from janus_sa import model_digest
from janus_sa.crypto import ServerKeys
from janus_sa.deploy import _config, client_update, load_roster
from janus_sa.deploy import main as deploy_main
from janus_sa.errors import ModelReplayError
from janus_sa.net import Remote, ServerNode, make_server, start_server
from janus_sa.protocol import MaskServer
from janus_sa.quantize import Quantizer
from janus_sa.wire import decode

N, DIM = 5, 8
PY = [sys.executable, "-m", "janus_sa"]


def _provision(tmp_path):
    for role in ("s0", "s1"):
        assert deploy_main(["keygen", "--role", role, "--out", str(tmp_path / role)]) == 0
    for i in range(N):
        assert deploy_main(["keygen", "--role", "client", "--name", f"c{i}", "--out", str(tmp_path / "c")]) == 0
    dep, roster = str(tmp_path / "deployment.json"), str(tmp_path / "roster.json")
    assert deploy_main(["bundle", "--s0", str(tmp_path / "s0" / "s0.pub.json"), "--s1",
                        str(tmp_path / "s1" / "s1.pub.json"), "--dim", str(DIM), "--min-participants", "4",
                        "--out", dep]) == 0
    pubs = [str(tmp_path / "c" / f"c{i}.pub.json") for i in range(N)]
    for role in ("s0", "s1"):
        assert deploy_main(["enroll", "--role", role, "--key", str(tmp_path / role / f"{role}.key"), "--deployment",
                            dep, "--clients", *pubs, "--version", "1", "--roster", roster]) == 0
    data = json.loads((tmp_path / "deployment.json").read_text())
    return dep, roster, data


def _clients(tmp_path, dep, roster, a0, a1, env, timeout):
    return [subprocess.Popen(PY + ["client", "--deployment", dep, "--key", str(tmp_path / "c" / f"c{i}.key"),
                                   "--roster", roster, "--s0", a0, "--s1", a1, "--rounds", "2", "--index", str(i),
                                   "--timeout", str(timeout)],
                             stdout=subprocess.PIPE, stderr=open(tmp_path / f"c{i}.log", "w"), text=True, env=env)
            for i in range(N)]


def _round1_ok(outs):
    """Each output's first line is a verified round 1 over all N clients; returns the parsed lines."""
    q = Quantizer()
    want = sum(q.quantize(client_update(i, 1, DIM)).astype(np.int64) for i in range(N)).tolist()
    lines = [[json.loads(x) for x in out.strip().splitlines()] for out in outs]
    for ln in lines:
        assert ln[0]["round"] == 1 and ln[0]["ok"] and ln[0]["n"] == N and ln[0]["sum_codes"] == want, ln
    return lines


@pytest.mark.slow
def test_s0_cannot_reopen_round_one_model_on_the_real_s1(tmp_path, free_ports):
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    dep, roster, data = _provision(tmp_path)
    cfg, session = _config(data["config"]), bytes.fromhex(data["session"])
    p0, p1 = free_ports(2)
    a0, a1 = f"127.0.0.1:{p0}", f"127.0.0.1:{p1}"
    s1 = subprocess.Popen(PY + ["serve", "--role", "s1", "--deployment", dep, "--key", str(tmp_path / "s1" / "s1.key"),
                                "--roster", roster, "--port", str(p1), "--peer", a0],
                          stdout=subprocess.PIPE, stderr=open(tmp_path / "s1.log", "w"), text=True, env=env)
    keys0 = ServerKeys.from_bytes((tmp_path / "s0" / "s0.key").read_bytes())
    server0 = make_server("s0", config=cfg, keys=keys0, session=session, peer_sign=bytes.fromhex(data["s1"]["sign"]),
                          roster=load_roster(roster, data))
    node0 = ServerNode(server0, peer=Remote(a1, max_bytes=2**22))
    g0, _ = start_server(node0, a0)
    clients = _clients(tmp_path, dep, roster, a0, a1, env, timeout=120)
    try:
        assert s1.stdout.readline().startswith("READY")
        assert node0.coordinate(rounds=1, expect=N, round_timeout=60, settle=2, gap=0) == [1]
        firsts = [c.stdout.readline() for c in clients]  # each client's round-1 line; all now wait for round 2
        _round1_ok(firsts)
        round1_model = server0.model_digest_
        nudged = np.zeros(DIM)
        nudged[0] += 1e-12
        for digest in (round1_model, model_digest(nudged)):
            ann = server0._announce(2, digest, server0.roster_, nonce=server0.start_nonce, retry=1)
            with pytest.raises(ModelReplayError):
                node0.peer.call("Open", msgpack.packb([ann, *node0._evidence()]))
        assert decode(node0.peer.call("Announcement"), max_bytes=4096).round == 1  # S1 never opened round 2
        # S0 announces round 2 and S1 does not: polling clients (every 0.2 s) never begin it, nobody uploads
        time.sleep(1.5)
        assert server0.round_ == 2 and not server0.uploads_
        for c in clients:
            c.terminate()
        assert all(c.communicate(timeout=30)[0] == "" for c in clients)  # no line for a round 2
    finally:
        for p in [s1, *clients]:
            if p.poll() is None:
                p.kill()
        g0.stop(0)


class _StaleS1(MaskServer):
    """Announces every round after the first for round 1's model."""

    first_model = b""

    def announce(self, rnd, model_digest):
        if rnd == 1:
            self.first_model = model_digest
            return super().announce(rnd, model_digest)
        return self._announce(rnd, self.first_model, self.roster_, nonce=self.start_nonce, retry=1)


@pytest.mark.slow
def test_s1_cannot_get_round_one_model_reannounced_by_the_real_s0(tmp_path, free_ports):
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    dep, roster, data = _provision(tmp_path)
    cfg, session = _config(data["config"]), bytes.fromhex(data["session"])
    p0, p1 = free_ports(2)
    a0, a1 = f"127.0.0.1:{p0}", f"127.0.0.1:{p1}"
    keys1 = ServerKeys.from_bytes((tmp_path / "s1" / "s1.key").read_bytes())
    evil = _StaleS1(config=cfg, keys=keys1, session=session, peer=bytes.fromhex(data["s0"]["sign"]),
                    roster=load_roster(roster, data))
    g1, _ = start_server(ServerNode(evil), a1)
    s0 = subprocess.Popen(PY + ["serve", "--role", "s0", "--deployment", dep, "--key", str(tmp_path / "s0" / "s0.key"),
                                "--roster", roster, "--port", str(p0), "--peer", a1, "--rounds", "2", "--expect",
                                str(N), "--round-timeout", "30", "--settle", "2", "--gap", "0.2", "--linger", "2"],
                          stdout=subprocess.PIPE, stderr=open(tmp_path / "s0.log", "w"), text=True, env=env)
    clients = _clients(tmp_path, dep, roster, a0, a1, env, timeout=60)
    try:
        outs = [c.communicate(timeout=150)[0] for c in clients]
        summary = json.loads(s0.communicate(timeout=60)[0].strip().splitlines()[-1])
    finally:
        for p in [s0, *clients]:
            if p.poll() is None:
                p.kill()
        g1.stop(0)
    assert summary == {"finished_rounds": [1], "failed_rounds": [2]}
    for ln in _round1_ok(outs):
        assert len(ln) == 2 and not ln[1]["ok"] and ln[1]["error"] == "ModelInconsistencyError", ln
    assert evil.round_ == 2 and not evil.uploads_  # no client uploaded for the stale model
