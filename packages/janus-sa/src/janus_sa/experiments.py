"""The ``demo`` and ``reproduce`` commands.

``demo`` runs federated rounds with a cheating-server episode; ``reproduce`` measures per-client cost
against n (Janus vs SecAgg+) and federated accuracy against plain FedAvg.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import numpy as np
from icml25_shared.cli import RunContext
from icml25_shared.random import RandomStateLike, spawn

from janus_sa.crypto import model_digest
from janus_sa.fl import run_federated
from janus_sa.protocol import AggregationServer, JanusConfig
from janus_sa.secaggplus import neighbours_for, run_secaggplus_round
from janus_sa.simulation import InProcessDeployment, random_updates


class _PlusOneS0(AggregationServer):
    """S0 that adds 1 to coordinate 0 of the masked sum (the first cheating case of the tests)."""

    def _aggregate_uploads(self, agreed):
        super()._aggregate_uploads(agreed)
        self._value[0] += 1


def janus_costs(n: int, dim: int, *, mode: str = "exact", random_state: RandomStateLike = 0) -> dict:
    """Run one real in-process Janus round with ``n`` clients and measure its per-client cost.

    Parameters
    ----------
    n : int
        Clients.
    dim : int
        Update length l.
    mode : {"exact", "sketch"}, default "exact"
        Janus commitment mode.
    random_state : None, int or numpy Generator, default 0
        Draws the updates.

    Returns
    -------
    dict
        Per-client mean upload and download bytes and CPU seconds, and whether all clients verified.
    """
    dep = InProcessDeployment(config=JanusConfig(dim=dim, mode=mode))
    ids = dep.add_clients(n)
    t0 = time.perf_counter()
    report = dep.run_round(random_updates(dim, ids, random_state=random_state))
    wall = time.perf_counter() - t0
    st = list(report.stats.values())
    ups = {s.upload_bytes for s in st}
    return {"protocol": f"janus-{mode}", "n": n, "dim": dim, "verified": len(report.results) == n,
            "upload_bytes": int(np.mean([s.upload_bytes for s in st])), "upload_bytes_distinct": len(ups),
            "download_bytes": int(np.mean([s.download_bytes for s in st])),
            "client_seconds": float(np.mean([s.seconds for s in st])), "round_wall_seconds": wall}


def secaggplus_costs(n: int, dim: int, *, random_state: RandomStateLike = 0) -> dict:
    """Run one full SecAgg+ round with ``n`` clients (one dropout when n >= 10) and measure its cost.

    Parameters
    ----------
    n : int
        Clients.
    dim : int
        Update length l.
    random_state : None, int or numpy Generator, default 0
        Root of two independent streams: the clients' codes and the neighbour graph.

    Returns
    -------
    dict
        Per-client mean upload and download bytes and CPU seconds, and whether the sum was correct.
    """
    codes_rng, graph_rng = spawn(random_state, 2)
    codes = {i: codes_rng.integers(0, 1 << 22, dim).astype(np.uint32) for i in range(1, n + 1)}
    drop = {1} if n >= 10 else set()
    t0 = time.perf_counter()
    total, clients = run_secaggplus_round(codes, dim=dim, drop_after_shares=drop, random_state=graph_rng)
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
    """Run federated softmax regression on digits with Janus, then a round with a cheating S0.

    Writes a table (per-round accuracy of Janus and plain FedAvg, and the cheating round's outcome),
    the JSON behind it and a figure.

    Parameters
    ----------
    ctx : RunContext
        The command's output folder, seed and ``--quick`` flag.
    """
    n, rounds = (4, 2) if ctx.quick else (10, 4)
    fl_stream, cheat_stream = spawn(ctx.seed, 2)
    fl = run_federated(n_clients=n, rounds=rounds, random_state=fl_stream, local_steps=5 if ctx.quick else 10)
    rows = [[r + 1, fl.participants[r], f"{fl.accuracy_janus[r]:.4f}", f"{fl.accuracy_fedavg[r]:.4f}",
             f"{fl.max_param_gap[r]:.2e}", "verified by all clients"] for r in range(rounds)]
    # cheating episode: S0 adds 1 to one coordinate of the masked sum
    weights = fl.weights
    assert weights is not None  # run_federated returns the final model
    dim = weights.size
    dep = InProcessDeployment(config=JanusConfig(dim=dim, initial_model=model_digest(weights)), model=weights)
    ids = dep.add_clients(n)
    dep.s0 = _PlusOneS0(config=dep.config, keys=dep.keys0, session=dep.session, peer=dep.keys1.sign.public,
                        roster=dep.roster, model=weights)
    report = dep.run_round(random_updates(dim, ids, random_state=cheat_stream))
    errs = sorted({type(e).__name__ for e in report.errors.values()})
    rows.append(["cheat", n, "-", "-", "-", f"S0 added 1 to coordinate 0: {len(report.errors)}/{n} clients "
                 f"rejected ({', '.join(errs)}), {len(report.results)} accepted"])
    ctx.write_table(rows, headers=["round", "clients", "Janus accuracy", "FedAvg accuracy", "max param gap",
                                   "outcome"])
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


def reproduce_figure(result: dict[str, Any]) -> Any:
    """The reproduce figure, drawn from its JSON (``results/reproduce.json``) alone.

    Parameters
    ----------
    result : dict
        What ``reproduce`` writes: ``dim`` and the ``costs`` rows (protocol, n, upload bytes, client seconds).

    Returns
    -------
    matplotlib.figure.Figure
        Upload bytes and client CPU seconds per client against n, one line per protocol.
    """
    import matplotlib.pyplot as plt

    rows = result["costs"]
    fig, axes = plt.subplots(1, 2, figsize=(9, 3.6), layout="constrained")
    for proto, style in [("janus-exact", "o-"), ("janus-sketch", "s-"), ("secagg+", "x--")]:
        sel = [r for r in rows if r["protocol"] == proto]
        axes[0].plot([r["n"] for r in sel], [r["upload_bytes"] for r in sel], style, label=proto)
        axes[1].plot([r["n"] for r in sel], [r["client_seconds"] for r in sel], style, label=proto)
    for ax, lab in zip(axes, ["upload bytes per client", "client CPU seconds"], strict=True):
        ax.set_xscale("log")
        ax.set_xlabel("clients n")
        ax.set_ylabel(lab)
    axes[0].legend()
    fig.suptitle(f"per-client cost vs n (l = {result['dim']}; one run per point)")
    return fig


def reproduce(ctx: RunContext) -> None:
    """Measure per-client bytes and CPU time against n (Janus exact and sketch vs SecAgg+) and FL accuracy.

    Parameters
    ----------
    ctx : RunContext
        The command's output folder, seed and ``--quick`` flag (small n and l).
    """
    fl_kw: dict[str, Any]
    if ctx.quick:
        ns, dim, fl_kw = [3, 6, 12], 20, {"n_clients": 4, "rounds": 1, "local_steps": 2}
    else:
        ns, dim, fl_kw = [10, 100, 1000], 1000, {"n_clients": 50, "rounds": 10}
    rows = []
    streams = iter(spawn(ctx.seed, 3 * len(ns) + 1))
    for n in ns:
        rows.append(janus_costs(n, dim, mode="exact", random_state=next(streams)))
        rows.append(janus_costs(n, dim, mode="sketch", random_state=next(streams)))
        rows.append(secaggplus_costs(n, dim, random_state=next(streams)))
    fl = run_federated(random_state=next(streams), **fl_kw)
    ctx.write_json({"dim": dim, "costs": rows,
                    "federated": {"accuracy_janus": fl.accuracy_janus, "accuracy_fedavg": fl.accuracy_fedavg,
                                  "max_param_gap": fl.max_param_gap, "participants": fl.participants}})
    table = [[r["protocol"], r["n"], r["upload_bytes"], r["download_bytes"], f"{r['client_seconds']:.4f}",
              r["verified"]] for r in rows]
    ctx.write_table(table, headers=["protocol", "n", "upload B/client", "download B/client", "client CPU s",
                                    "verified"])
    fig = reproduce_figure({"dim": dim, "costs": rows})
    ctx.save_figure(fig)


def readme_tables(results: str | Path) -> dict[str, str]:
    """The README's benchmark and reproduction tables, rendered from the JSON files in ``results``.

    ``benchmark``: ``range_proof_costs.json`` (client and server CPU, upload bytes, with and without the
    range proof, l = 10^3 and 10^4, n = 10, 100, 1000). ``reproduction``: upload bytes of the current
    wire format from ``upload_bytes.json`` and ``range_proof_costs.json``; CPU, SecAgg+ bytes and
    accuracy from ``reproduce.json`` and ``demo.json``.
    """
    results = Path(results)
    costs = json.loads((results / "range_proof_costs.json").read_text())["rows"]
    sizes = json.loads((results / "upload_bytes.json").read_text())["rows"]
    repro = json.loads((results / "reproduce.json").read_text())
    cheat = json.loads((results / "demo.json").read_text())["cheating_round"]
    lines = ["| l | n | upload B: no proof / proof | client CPU s: upload (no proof / proof), verify | "
             "S0 CPU s: no proof / proof | S1 CPU s: no proof / proof |", "|---|---|---|---|---|---|"]
    cells = {(r["l"], r["n"], r["range_proof"]): r for r in costs}
    for (dim, n, proof), off in cells.items():
        on = cells.get((dim, n, True))
        if proof or on is None:
            continue
        mark = " (extrapolated)" if on["extrapolated"] or off["extrapolated"] else ""
        verify = "–" if off["client_verify_cpu_s"] is None else f"{off['client_verify_cpu_s']:.3f}"
        lines.append(f"| {dim:,} | {n:,} | {off['upload_bytes']:,} / {on['upload_bytes']:,} | "
                     f"{off['client_upload_cpu_s']:.3f} / {on['client_upload_cpu_s']:.3f}, {verify} | "
                     f"{off['s0_cpu_s']:.1f} / {on['s0_cpu_s']:.1f}{mark} | {off['s1_cpu_s']:.1f} / {on['s1_cpu_s']:.1f}{mark} |")
    benchmark = "\n".join(lines)
    plain = [r for r in costs if r["l"] == 1000 and not r["range_proof"]]

    def by(proto: str) -> list[dict]:
        return [r for r in repro["costs"] if r["protocol"] == proto]

    def one(values) -> str:
        distinct = sorted(set(values))
        return f"{distinct[0]:,}" if len(distinct) == 1 else " / ".join(f"{v:,}" for v in distinct)

    exact = one([r["upload_bytes"] for r in plain] + [r["upload_bytes"] for r in sizes if r["protocol"] == "janus-exact"])
    sketch = one([r["upload_bytes"] for r in sizes if r["protocol"] == "janus-sketch"])
    ns = sorted({r["n"] for r in plain} | {r["n"] for r in sizes if r["protocol"] == "janus-exact"})

    def arrow(rows: list[dict], key: str, fmt: str) -> str:
        return " → ".join(format(r[key], fmt) for r in rows)

    secagg = by("secagg+")
    ratio = secagg[-1]["client_seconds"] / secagg[0]["client_seconds"]
    acc_j, acc_f = repro["federated"]["accuracy_janus"], repro["federated"]["accuracy_fedavg"]
    same = "identical to" if acc_j == acc_f else f"max gap {max(abs(a - b) for a, b in zip(acc_j, acc_f, strict=True)):.3f} to"
    n_big = max(r["n"] for r in by("janus-exact"))
    verified = all(r["verified"] for r in by("janus-exact") + by("janus-sketch"))
    rows = [
        ("per-client communication constant in n (SecAgg+: logarithmic)",
         f"Janus upload {exact} B at n = {', '.join(map(str, ns))} (sketch {sketch} B at n = "
         f"{', '.join(str(r['n']) for r in sizes if r['protocol'] == 'janus-sketch')}); SecAgg+ "
         f"{arrow(secagg, 'upload_bytes', ',')} B"),
        ("per-client computation constant in n",
         f"Janus exact {arrow(by('janus-exact'), 'client_seconds', '.3f')} CPU-s, sketch "
         f"{arrow(by('janus-sketch'), 'client_seconds', '.3f')}; SecAgg+ {arrow(secagg, 'client_seconds', '.4f')} "
         f"({ratio:.1f}x)"),
        ("accuracy close to no secure aggregation",
         f"{same} plain FedAvg in all {len(acc_j)} rounds ({acc_j[0]:.3f} → {acc_j[-1]:.3f} on digits, 50 clients)"),
        ("clients verify the aggregate; a cheating server is caught",
         f"{'all' if verified else 'not all'} {n_big:,} clients verify; the demo's cheating S0 is rejected by "
         f"{cheat['rejected']}/{cheat['rejected'] + cheat['accepted']} clients (`{', '.join(cheat['errors'])}`)"),
    ]
    reproduction = "\n".join(["| claim (paper) | ours |", "|---|---|", *(f"| {a} | {b} |" for a, b in rows)])
    return {"benchmark": benchmark, "reproduction": reproduction}
