"""Real processes killed by PID and restarted from their state directories (net_restart.py, s1_die_after_agree.py).

Timeline (3 client processes, S0 and S1 as separate processes on 127.0.0.1):
  round 1: S1 SIGKILLs itself 50 ms after answering S0's Agree; restarted with the same keys, port and
           state directory it re-serves its signed aggregate, and every client verifies the sum of 3;
  round 2: S0 SIGKILLs itself after accepting 2 uploads; restarted, it lists round 2 as failed (clients
           fail cleanly, nobody accepts an aggregate) and coordinates round 3, which every client verifies.
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

N, DIM = 3, 8
PY = [sys.executable, "-m", "janus_sa"]
CLEAN_FAILURES = {"RoundFailedError", "ServerUnavailableError", "NetworkError"}



@pytest.mark.slow
def test_s1_restart_after_agreement_and_s0_restart_mid_round(tmp_path, free_ports):
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    for role in ("s0", "s1"):
        deploy_main(["keygen", "--role", role, "--out", str(tmp_path / role)])
    for i in range(N):
        deploy_main(["keygen", "--role", "client", "--name", f"c{i}", "--out", str(tmp_path / "c")])
    dep, roster = str(tmp_path / "deployment.json"), str(tmp_path / "roster.json")
    deploy_main(["bundle", "--s0", str(tmp_path / "s0" / "s0.pub.json"), "--s1", str(tmp_path / "s1" / "s1.pub.json"),
                 "--dim", str(DIM), "--out", dep])
    for role in ("s0", "s1"):
        deploy_main(["enroll", "--role", role, "--key", str(tmp_path / role / f"{role}.key"), "--deployment", dep,
                     "--clients", *[str(tmp_path / "c" / f"c{i}.pub.json") for i in range(N)], "--version", "1",
                     "--roster", roster])
    p0, p1 = free_ports(2)
    a0, a1 = f"127.0.0.1:{p0}", f"127.0.0.1:{p1}"
    common = ["--deployment", dep, "--roster", roster]
    s1_args = ["serve", "--role", "s1", "--key", str(tmp_path / "s1" / "s1.key"), *common, "--port", str(p1),
               "--peer", a0, "--state-dir", str(tmp_path / "st1")]
    s0_args = ["serve", "--role", "s0", "--key", str(tmp_path / "s0" / "s0.key"), *common, "--port", str(p0),
               "--peer", a1, "--state-dir", str(tmp_path / "st0"), "--expect", str(N), "--round-timeout", "120",
               "--settle", "2", "--gap", "0.2", "--linger", "20"]
    procs = []

    def spawn(args, log):
        p = subprocess.Popen(PY + args, stdout=subprocess.PIPE, stderr=open(tmp_path / log, "w"), text=True, env=env)
        procs.append(p)
        return p

    try:
        s1 = spawn(s1_args + ["--die-after-agree-round", "1"], "s1.log")
        s0 = spawn(s0_args + ["--rounds", "2", "--die-at-round", "2", "--die-after-uploads", "2"], "s0.log")
        clients = [spawn(["client", *common, "--key", str(tmp_path / "c" / f"c{i}.key"), "--s0", a0, "--s1", a1,
                          "--rounds", "5", "--last-round", "3", "--index", str(i), "--timeout", "150"], f"c{i}.log")
                   for i in range(N)]
        assert s1.wait(timeout=300) == -9, "S1 should have died after agreeing on round 1"
        spawn(s1_args, "s1b.log")  # same keys, port and state directory
        assert s0.wait(timeout=300) == -9, "S0 should have died in round 2"
        s0b = spawn([*s0_args, "--rounds", "1"], "s0b.log")
        outs = [c.communicate(timeout=400)[0] for c in clients]
        s0b.terminate()  # every client has its round-3 aggregates: end S0's linger (it printed its summary)
        summary = json.loads(s0b.communicate(timeout=120)[0].strip().splitlines()[-1])
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
    assert summary == {"finished_rounds": [3], "failed_rounds": [2]}
    q = Quantizer()
    for i, out in enumerate(outs):
        by_round = {ln["round"]: ln for ln in map(json.loads, out.strip().splitlines())}
        for rnd in (1, 3):
            ln = by_round[rnd]
            assert ln["ok"] and ln["n"] == N, (i, ln)
            expected = sum(q.quantize(client_update(j, rnd, DIM)).astype(np.int64) for j in range(N)).tolist()
            assert ln["sum_codes"] == expected
        if 2 in by_round:
            assert not by_round[2]["ok"] and by_round[2]["error"] in CLEAN_FAILURES, by_round[2]
