"""Multi-process deployment on 127.0.0.1: two gRPC server processes and 20 client processes.

Timeline (one S0 coordinator run of 5 rounds):
  round 1: all 20 clients, verified aggregate over 20;
  round 2: client 0 is SIGKILLed between its S0 and S1 uploads -> verified aggregate over the 19 survivors;
  round 3: the 19 survivors, verified;
  round 4: S1 SIGKILLs itself after 5 uploads -> every client that saw the round fails cleanly (at least
           the 5 whose S1 upload was accepted), nobody accepts an aggregate; a client that was still
           between rounds when S1 died may skip round 4 entirely;
  round 5: S1 restarted from its state directory; client 19 uploads y_i + 1 under honest commitments ->
           both servers exclude it, the 18 others verify their exact sum and see client 19 named as
           excluded ("inconsistent upload"), client 19 gets ExcludedError.
"""

import json
import os
import subprocess
import sys

import numpy as np
import pytest

from janus_sa.deploy import client_update
from janus_sa.deploy import main as deploy_main
from janus_sa.quantize import Quantizer

N, DIM = 20, 16
PY = [sys.executable, "-m", "janus_sa"]
CLEAN_FAILURES = {"RoundFailedError", "ServerUnavailableError", "NetworkError"}



def _spawn(args, log, env):
    return subprocess.Popen(PY + args, stdout=subprocess.PIPE, stderr=open(log, "w"), text=True, env=env)


def _provision(tmp_path):
    """Each party's keys in its own folder, the public bundle, and the roster both servers sign (the CLI)."""
    for role in ("s0", "s1"):
        assert deploy_main(["keygen", "--role", role, "--out", str(tmp_path / role)]) == 0
    for i in range(N):
        assert deploy_main(["keygen", "--role", "client", "--name", f"c{i}", "--out", str(tmp_path / "c")]) == 0
    dep, roster = str(tmp_path / "deployment.json"), str(tmp_path / "roster.json")
    assert deploy_main(["bundle", "--s0", str(tmp_path / "s0" / "s0.pub.json"), "--s1",
                        str(tmp_path / "s1" / "s1.pub.json"), "--dim", str(DIM), "--out", dep]) == 0
    pubs = [str(tmp_path / "c" / f"c{i}.pub.json") for i in range(N)]
    for role in ("s0", "s1"):
        assert deploy_main(["enroll", "--role", role, "--key", str(tmp_path / role / f"{role}.key"), "--deployment",
                            dep, "--clients", *pubs, "--version", "1", "--roster", roster]) == 0
    return dep, roster


@pytest.mark.slow  # 22 processes, about 77 s wall on the shared 2-core machine
def test_twenty_client_processes_with_client_and_s1_crashes(tmp_path, free_ports):
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    dep, roster = _provision(tmp_path)
    p0, p1 = free_ports(2)
    a0, a1 = f"127.0.0.1:{p0}", f"127.0.0.1:{p1}"
    s1_args = ["serve", "--role", "s1", "--deployment", dep, "--key", str(tmp_path / "s1" / "s1.key"),
               "--roster", roster, "--port", str(p1), "--peer", a0, "--state-dir", str(tmp_path / "st1")]
    s1 = _spawn(s1_args + ["--die-at-round", "4", "--die-after-uploads", "5"], tmp_path / "s1.log", env)
    s0 = _spawn(["serve", "--role", "s0", "--deployment", dep, "--key", str(tmp_path / "s0" / "s0.key"),
                 "--roster", roster, "--port", str(p0), "--peer", a1,
                 "--state-dir", str(tmp_path / "st0"), "--rounds", "5", "--expect", str(N), "--round-timeout", "150",
                 "--settle", "3", "--gap", "0.2", "--linger", "3"], tmp_path / "s0.log", env)
    clients = []
    for i in range(N):
        extra = {0: ["--kill-after-s0-upload", "2"], N - 1: ["--masked-plus-one-round", "5"]}.get(i, [])
        clients.append(_spawn(["client", "--deployment", dep, "--key", str(tmp_path / "c" / f"c{i}.key"),
                               "--roster", roster, "--s0", a0,
                               "--s1", a1, "--rounds", "9", "--last-round", "5", "--index", str(i), "--timeout", "200"] + extra,
                              tmp_path / f"c{i}.log", env))
    restarted = None
    try:
        assert s1.wait(timeout=400) == -9, "S1 should have been killed by the injected fault"
        restarted = _spawn(s1_args, tmp_path / "s1b.log", env)  # same keys, port and state directory
        outs = [c.communicate(timeout=400)[0] for c in clients]
        s0.terminate()  # the clients are done: end S0's linger (its summary is printed before it)
        s0_out = s0.communicate(timeout=60)[0]
    finally:
        for p in [s0, s1, restarted, *clients]:
            if p is not None and p.poll() is None:
                p.kill()
    summary = json.loads(s0_out.strip().splitlines()[-1])
    assert summary == {"finished_rounds": [1, 2, 3, 5], "failed_rounds": [4]}
    assert clients[0].returncode == -9
    lines = [[json.loads(x) for x in out.strip().splitlines()] for out in outs]
    q = Quantizer()

    def expected(rnd, members):
        return sum(q.quantize(client_update(i, rnd, DIM)).astype(np.int64) for i in members).tolist()

    survivors, cheat = range(1, N), N - 1
    key_of = {i: json.loads((tmp_path / "c" / f"c{i}.pub.json").read_text())["sign"] for i in (0, cheat)}
    named = {2: {key_of[0]: "reached one server only"}, 5: {key_of[cheat]: "inconsistent upload"}}
    assert [ln["round"] for ln in lines[0]] == [1]  # killed during round 2, before printing it
    failed_in_4 = 0
    for i in survivors:
        by_round = {ln["round"]: ln for ln in lines[i]}
        assert sorted(by_round) in ([1, 2, 3, 4, 5], [1, 2, 3, 5]), lines[i]
        for rnd, members in [(1, range(N)), (2, survivors), (3, survivors), (5, range(1, cheat))]:
            ln = by_round[rnd]
            if i == cheat and rnd == 5:
                assert not ln["ok"] and ln["error"] == "ExcludedError", ln
                # its own (unshifted) y_i gives another S0 pair than the y_i + 1 S0 received and listed
                assert ln["reason"] == "inconsistent upload" and ln["blamed"] == ["S0"], ln
                continue
            assert ln["ok"], (i, ln)
            assert ln["n"] == len(members)
            assert ln["sum_codes"] == expected(rnd, members)
            assert ln["excluded"] == named.get(rnd, {}), ln
        if 4 in by_round:
            assert not by_round[4]["ok"] and by_round[4]["error"] in CLEAN_FAILURES, by_round[4]
            failed_in_4 += 1
    assert failed_in_4 >= 5
