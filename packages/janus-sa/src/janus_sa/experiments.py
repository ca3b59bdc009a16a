"""``demo`` (federated rounds with a cheating-server episode) and ``reproduce`` (per-client cost vs n,
Janus vs SecAgg+, plus federated accuracy vs plain FedAvg)."""

from __future__ import annotations

import time

import numpy as np
from icml25_shared.cli import RunContext

from janus_sa.fl import run_federated
from janus_sa.protocol import AggregationServer, JanusConfig
from janus_sa.secaggplus import neighbours_for, run_secaggplus_round
from janus_sa.simulation import InProcessDeployment, random_updates


class _PlusOneS0(AggregationServer):
    """S0 that adds 1 to coordinate 0 of the masked sum (the issue's first cheating case)."""

    def _aggregate_uploads(self, agreed):
        super()._aggregate_uploads(agreed)
        self._value[0] += 1


def janus_costs(n: int, dim: int, *, mode: str = "exact", seed: int = 0) -> dict:
    """Run one real in-process Janus round with ``n`` clients; per-client mean bytes and CPU seconds."""
    dep = InProcessDeployment(config=JanusConfig(dim=dim, mode=mode))
    ids = dep.add_clients(n)
    t0 = time.perf_counter()
    report = dep.run_round(random_updates(dim, ids, seed=seed))
    wall = time.perf_counter() - t0
    st = list(report.stats.values())
    ups = {s.upload_bytes for s in st}
    return {"protocol": f"janus-{mode}", "n": n, "dim": dim, "verified": len(report.results) == n,
            "upload_bytes": int(np.mean([s.upload_bytes for s in st])), "upload_bytes_distinct": len(ups),
            "download_bytes": int(np.mean([s.download_bytes for s in st])),
            "client_seconds": float(np.mean([s.seconds for s in st])), "round_wall_seconds": wall}


def secaggplus_costs(n: int, dim: int, *, seed: int = 0) -> dict:
    """Run one full SecAgg+ round with ``n`` clients (one dropout when n >= 10); per-client means."""
    rng = np.random.default_rng(seed)
    codes = {i: rng.integers(0, 1 << 22, dim).astype(np.uint32) for i in range(1, n + 1)}
    drop = {1} if n >= 10 else set()
    t0 = time.perf_counter()
    total, clients = run_secaggplus_round(codes, dim=dim, drop_after_shares=drop, seed=seed)
    wall = time.perf_counter() - t0
    ok = bool(np.array_equal(total, sum(codes[i].astype(np.int64) for i in codes if i not in drop)))
    live = [c for c in clients if c.index not in drop]
    return {"protocol": "secagg+", "n": n, "dim": dim, "verified": False, "correct_sum": ok,
            "neighbours": neighbours_for(n),
            "upload_bytes": int(np.mean([c.bytes_up for c in live])),
            "upload_bytes_distinct": len({c.bytes_up for c in live}),
            "download_bytes": int(np.mean([c.bytes_down for c in live])),
            "client_seconds": float(np.mean([c.seconds for c in live])), "round_wall_seconds": wall}


def demo(ctx: RunContext) -> None:
    """Federated softmax regression on digits with Janus; round 2 has a cheating S0 that is caught."""
    n, rounds = (4, 2) if ctx.quick else (10, 4)
    fl = run_federated(n_clients=n, rounds=rounds, seed=ctx.seed, local_steps=5 if ctx.quick else 10)
    rows = ["| round | clients | Janus accuracy | FedAvg accuracy | max param gap | outcome |",
            "|---|---|---|---|---|---|"]
    for r in range(rounds):
        rows.append(f"| {r + 1} | {fl.participants[r]} | {fl.accuracy_janus[r]:.4f} | {fl.accuracy_fedavg[r]:.4f} "
                    f"| {fl.max_param_gap[r]:.2e} | verified by all clients |")
    # cheating episode: S0 adds 1 to one coordinate of the masked sum
    dim = fl.weights.size
    dep = InProcessDeployment(config=JanusConfig(dim=dim))
    ids = dep.add_clients(n)
    dep.s0 = _PlusOneS0(config=dep.config, keys=dep.keys0, session=dep.session, peer=dep.keys1.sign.public)
    report = dep.run_round(random_updates(dim, ids, seed=ctx.seed), model=fl.weights)
    errs = sorted({type(e).__name__ for e in report.errors.values()})
    rows.append(f"| cheat | {n} | - | - | - | S0 added 1 to coordinate 0: {len(report.errors)}/{n} clients "
                f"rejected ({', '.join(errs)}), {len(report.results)} accepted |")
    ctx.write_table("\n".join(rows))
    ctx.write_json({"federated": fl.__dict__ | {"weights": None},
                    "cheating_round": {"rejected": len(report.errors), "accepted": len(report.results),
                                       "errors": errs}})
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(5, 3.2))
    xs = np.arange(1, rounds + 1)
    ax.plot(xs, fl.accuracy_fedavg, "o-", label="plain FedAvg (no security)")
    ax.plot(xs, fl.accuracy_janus, "x--", label="Janus (verified)")
    ax.set_xlabel("round")
    ax.set_ylabel("test accuracy (digits)")
    ax.set_title(f"{n} clients; cheating S0 caught by {len(report.errors)}/{n}")
    ax.legend()
    fig.tight_layout()
    ctx.save_figure(fig)


def reproduce(ctx: RunContext) -> None:
    """Per-client upload/download bytes and CPU time vs n, Janus (exact, sketch) vs SecAgg+; FL accuracy."""
    if ctx.quick:
        ns, dim, fl_kw = [3, 6, 12], 20, {"n_clients": 4, "rounds": 1, "local_steps": 2}
    else:
        ns, dim, fl_kw = [10, 100, 1000], 1000, {"n_clients": 50, "rounds": 10}
    rows = []
    for n in ns:
        rows.append(janus_costs(n, dim, mode="exact", seed=ctx.seed))
        rows.append(janus_costs(n, dim, mode="sketch", seed=ctx.seed))
        rows.append(secaggplus_costs(n, dim, seed=ctx.seed))
    fl = run_federated(seed=ctx.seed, **fl_kw)
    ctx.write_json({"dim": dim, "costs": rows,
                    "federated": {"accuracy_janus": fl.accuracy_janus, "accuracy_fedavg": fl.accuracy_fedavg,
                                  "max_param_gap": fl.max_param_gap, "participants": fl.participants}})
    table = ["| protocol | n | upload B/client | download B/client | client CPU s | verified |", "|---|---|---|---|---|---|"]
    table += [f"| {r['protocol']} | {r['n']} | {r['upload_bytes']} | {r['download_bytes']} | {r['client_seconds']:.4f} "
              f"| {r['verified']} |" for r in rows]
    ctx.write_table("\n".join(table))
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 2, figsize=(9, 3.4))
    for proto, style in [("janus-exact", "o-"), ("janus-sketch", "s-"), ("secagg+", "x--")]:
        sel = [r for r in rows if r["protocol"] == proto]
        axes[0].plot([r["n"] for r in sel], [r["upload_bytes"] for r in sel], style, label=proto)
        axes[1].plot([r["n"] for r in sel], [r["client_seconds"] for r in sel], style, label=proto)
    for ax, lab in zip(axes, ["upload bytes per client", "client CPU seconds"], strict=True):
        ax.set_xscale("log")
        ax.set_xlabel("clients n")
        ax.set_ylabel(lab)
    axes[0].legend()
    fig.suptitle(f"per-client cost vs n (l = {dim})")
    fig.tight_layout()
    ctx.save_figure(fig)
