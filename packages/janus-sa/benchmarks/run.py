"""Per-client cost of one round: Janus client vs SecAgg+ client (Bell et al. 2020), in one process.

Rows 1-3: one client's whole protocol work for a round (Janus: check announcements, quantise, mask,
commit, encrypt seeds, sign; unmask and verify the aggregate. SecAgg+: advertise keys, Shamir-share
and encrypt to k(n) neighbours, pairwise masks, reveal shares). The Janus aggregate comes from a real
round with n clients; the SecAgg+ client gets real keys and ciphertexts from its k(n) neighbours.
Rows 4-5: the performance budget (exact n=100, l=10^4 whole round; sketch l=10^6 per client).
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import numpy as np
from icml25_shared.bench import BenchmarkReport, compare

from janus_sa import InProcessDeployment, JanusClient, JanusConfig
from janus_sa.secaggplus import SecAggPlusClient, neighbours_for
from janus_sa.simulation import random_updates


def janus_single_client(n: int, dim: int, mode: str = "exact"):
    """Run a real round with n clients, then return a closure doing one fresh client's work on it."""
    dep = InProcessDeployment(config=JanusConfig(dim=dim, mode=mode))
    ids = dep.add_clients(n)
    report = dep.run_round(random_updates(dim, ids))
    assert len(report.results) == n
    a0, a1 = dep.s0.announcement_, dep.s1.announcement_
    agg0, agg1 = dep.s0.aggregate(), dep.s1.aggregate()
    seals = {}
    if mode == "sketch":
        c0, c1 = dep.s0.seal_commit(), dep.s1.seal_commit()
        seals = {"seal0": dep.s0.seal(c1), "seal1": dep.s1.seal(c0)}
    key = dep.clients[ids[0]].key  # redo the work of a participant (its id is in the final list)
    update = np.random.default_rng(1).standard_normal(dim)
    sizes = {}

    def work():
        c = JanusClient(config=dep.config, s0=dep.keys0.public, s1=dep.keys1.public, session=dep.session,
                        signing_key=key, roster=dep.roster)
        c.begin_round(a0, a1)
        up = c.upload(update)
        sent = len(up.to_s0) + len(up.to_s1)
        if seals:
            up2 = c.sketch_commit(**seals)
            sent += len(up2.to_s0) + len(up2.to_s1)
        res = c.finish_round(agg0, agg1, **seals)
        sizes["upload_bytes"] = sent
        return res

    return work, sizes


def secagg_single_client(n: int, dim: int):
    """One SecAgg+ client's round with k(n) real neighbours; the neighbours' ciphertexts are made beforehand."""
    k = neighbours_for(n)
    neighbours = [SecAggPlusClient(i, dim) for i in range(2, k + 2)]
    keys = {v.index: (v.c_sk.public_key().public_bytes_raw(), v.s_sk.public_key().public_bytes_raw())
            for v in neighbours}
    me0 = SecAggPlusClient(1, dim)
    mine = (me0.c_sk.public_key().public_bytes_raw(), me0.s_sk.public_key().public_bytes_raw())
    inbox = {v.index: v.share_keys({1: mine}, 1)[1] for v in neighbours}
    codes = np.random.default_rng(1).integers(0, 1 << 22, dim).astype(np.uint32)
    sizes = {}

    def work():
        me = SecAggPlusClient(1, dim)  # fresh keys are generated (and timed) ...
        me.c_sk, me.s_sk = me0.c_sk, me0.s_sk  # ... then replaced by the ones the neighbours encrypted to
        me.advertise_keys()
        me.share_keys(keys, k // 2 + 1)
        me.masked_input(codes, inbox)
        me.unmask({v.index for v in neighbours} | {1})
        sizes["upload_bytes"] = me.bytes_up
        return me

    return work, sizes, k


def _cpu(fn) -> float:
    """Process CPU seconds of one call (robust to other jobs on a shared machine, unlike wall time)."""
    t0 = time.process_time()
    fn()
    return time.process_time() - t0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--out", type=Path, default=Path("out/janus_sa/benchmark.json"))
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--dim", type=int, default=1000)
    parser.add_argument("--ns", type=int, nargs="+", default=[10, 100, 1000])
    parser.add_argument("--skip-budget", action="store_true", help="skip the n=100/l=1e4 and l=1e6 rows")
    args = parser.parse_args()
    report = BenchmarkReport("janus-sa: per-client cost, Janus vs SecAgg+", packages=["janus-sa", "cryptography", "rbcl"])
    for n in args.ns:
        ours, ours_sizes = janus_single_client(n, args.dim)
        peer, peer_sizes, k = secagg_single_client(n, args.dim)
        comp = compare(ours, peer, label=f"one client's round, n={n}, l={args.dim}", ours_name="janus-exact",
                       peer_name=f"secagg+ (k={k})", repeats=args.repeats, sizes={"n": n, "l": args.dim, "k": k})
        comp.metrics.update({"janus_cpu_s": _cpu(ours), "secagg_cpu_s": _cpu(peer),
                             "janus_upload_bytes": ours_sizes["upload_bytes"],
                             "secagg_upload_bytes": peer_sizes["upload_bytes"]})
        report.add(comp)
    if not args.skip_budget:
        dep = InProcessDeployment(config=JanusConfig(dim=10_000))
        ids = dep.add_clients(100)
        ups = random_updates(10_000, ids)
        verified, cpu = [], []

        def whole_round():
            t0 = time.process_time()
            verified.append(len(dep.run_round(ups, workers=2).results))
            cpu.append(time.process_time() - t0)

        comp = compare(whole_round, None, warmup=0, repeats=1,
                       label="budget: exact, n=100, l=10^4, whole in-process round, 2 threads (limit 60 s)",
                       ours_name="janus-exact round", sizes={"n": 100, "l": 10_000})
        comp.metrics.update({"verified_clients": verified[0], "janus_cpu_s": cpu[0]})
        report.add(comp)
        work, sizes = janus_single_client(3, 1_000_000, mode="sketch")
        comp = compare(work, None, warmup=0, repeats=1, ours_name="janus-sketch client",
                       label="budget: sketch (k=32), l=10^6, one client's round (limit 10 s)", sizes={"n": 3, "l": 10**6})
        comp.metrics.update({"janus_upload_bytes": sizes["upload_bytes"], "janus_cpu_s": _cpu(work)})
        report.add(comp)
    report.write_json(args.out)
    print(report.to_markdown())


if __name__ == "__main__":
    main()
