"""Planted-cluster benchmark of the two clique stopping rules: recall of memorised images among noise.

Seven memorised images, twelve generations each (a random unit-norm centre plus Gaussian noise of relative norm
r, i.e. N(0, (r / sqrt(d))^2) per coordinate), hidden among isotropic random generations that make up a fraction
f of all generations. For each cell ``cluster_extract(F, n_train=7, stop=...)`` is run with the paper's and the
robust rule; recall is the fraction of the seven planted clusters with a representative among the seven selected
generations, "exact" counts the selected cliques that are exactly one planted cluster. Writes JSON and markdown.

    OMP_NUM_THREADS=1 python packages/finextract/benchmarks/planted.py --out packages/finextract/results
    # or one process per dimension, then: planted.py --merge a/planted.json b/planted.json --out ...
"""

from __future__ import annotations

import argparse
import json
import platform
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

N_CLUSTERS, PER = 7, 12


def run_cell(
    d: int, fraction: float, rel_noise: float, seed: int, rules: tuple[str, ...] = ("paper", "robust")
) -> dict:
    from test_cluster_metrics import _planted_unit

    from finextract import cluster_extract

    n_noise = round(N_CLUSTERS * PER * fraction / (1 - fraction))
    feats, labels = _planted_unit(seed, d=d, n_noise=n_noise, noise=rel_noise / np.sqrt(d))
    planted = [set(np.flatnonzero(labels == k).tolist()) for k in range(N_CLUSTERS)]
    row = {"d": d, "noise_fraction": fraction, "relative_noise": rel_noise, "seed": seed, "generations": len(feats)}
    for stop in rules:
        t0 = time.perf_counter()
        res = cluster_extract(feats, N_CLUSTERS, stop=stop)
        row[f"{stop}_seconds"] = time.perf_counter() - t0
        top = res.selected[:N_CLUSTERS]
        row[f"{stop}_recall"] = len(set(labels[top].tolist()) - {-1}) / N_CLUSTERS
        row[f"{stop}_exact"] = sum(set(c) in planted for c in res.cliques[:N_CLUSTERS])
        row[f"{stop}_threshold"] = res.threshold
    return row


def table(rows: list[dict]) -> str:
    cells: dict[tuple, list[dict]] = {}
    for r in rows:
        cells.setdefault((r["d"], r["relative_noise"], r["noise_fraction"]), []).append(r)
    lines = [
        "| d | noise r | within-cluster cosine | random generations | recall paper | recall robust | exact cliques "
        "paper / robust | seconds paper / robust |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for (d, r, f), rs in sorted(cells.items()):
        mean = {k: float(np.mean([x[k] for x in rs])) for k in rs[0] if k.startswith(("paper", "robust"))}
        lines.append(
            f"| {d} | {r:g} | {1 / (1 + r * r):.2f} | {f:.0%} ({rs[0]['generations'] - N_CLUSTERS * PER}) "
            f"| {mean['paper_recall']:.3f} | {mean['robust_recall']:.3f} "
            f"| {mean['paper_exact']:.1f} / {mean['robust_exact']:.1f} "
            f"| {mean['paper_seconds']:.2f} / {mean['robust_seconds']:.2f} |"
        )
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", type=Path, default=Path("out/finextract"))
    parser.add_argument("--dims", type=int, nargs="+", default=[64, 256])
    parser.add_argument("--fractions", type=float, nargs="+", default=[0.0, 0.2, 0.4, 0.6, 0.8])
    parser.add_argument("--noise", type=float, nargs="+", default=[0.4, 0.8, 1.2])
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1])
    parser.add_argument("--rules", nargs="+", default=["paper", "robust"], choices=["paper", "robust"])
    parser.add_argument(
        "--paper-from", type=Path, default=None, help="take the paper rule's rows from an earlier planted.json"
    )
    parser.add_argument(
        "--merge", type=Path, nargs="+", default=None, help="earlier planted.json files to combine instead of running"
    )
    args = parser.parse_args()
    import networkx

    rows = []
    if args.merge:
        stored = [json.loads(p.read_text()) for p in args.merge]
        rows = [r for s in stored for r in s["rows"]]
        args.dims, args.noise, args.fractions, args.seeds = [], [], [], stored[0]["meta"]["seeds"]
    for d in args.dims:
        for r in args.noise:
            for f in args.fractions:
                for seed in args.seeds:
                    rows.append(run_cell(d, f, r, seed, tuple(args.rules)))
                    if args.paper_from is not None:
                        earlier = json.loads(args.paper_from.read_text())["rows"]
                        key = ("d", "noise_fraction", "relative_noise", "seed")
                        match = next(e for e in earlier if all(e[k] == rows[-1][k] for k in key))
                        rows[-1].update({k: v for k, v in match.items() if k.startswith("paper_")})
                    x = rows[-1]
                    print(
                        f"d={d} r={r} f={f} seed={seed}: recall paper {x['paper_recall']:.3f} "
                        f"robust {x['robust_recall']:.3f} ({x['paper_seconds']:.1f} s / {x['robust_seconds']:.1f} s)",
                        file=sys.stderr,
                        flush=True,
                    )
    from finextract import __version__

    meta = {
        "n_clusters": N_CLUSTERS,
        "per_cluster": PER,
        "n_train": N_CLUSTERS,
        "seeds": args.seeds,
        "python": platform.python_version(),
        "machine": platform.machine(),
        "finextract": __version__,
        "numpy": np.__version__,
        "networkx": networkx.__version__,
        "date_utc": time.strftime("%Y-%m-%d %H:%M", time.gmtime()),
    }
    if args.merge:
        meta = {**stored[0]["meta"], "merged_from": [str(p) for p in args.merge]}
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "planted.json").write_text(json.dumps({"meta": meta, "rows": rows}, indent=2))
    worse = [r for r in rows if r["robust_recall"] < r["paper_recall"]]
    text = (
        f"### finextract: clique stopping rules on planted clusters\n\n{table(rows)}\n\n"
        f"Means over seeds {args.seeds}; {N_CLUSTERS} planted clusters of {PER}, n_train = {N_CLUSTERS}. Runs where "
        f"the robust rule recalls less than the paper rule: {len(worse)} of {len(rows)}. "
        f"Python {meta['python']} on {meta['machine']}, numpy {meta['numpy']}, networkx {meta['networkx']}, "
        f"finextract {meta['finextract']}; {meta['date_utc']} UTC.\n"
    )
    (args.out / "planted.md").write_text(text)
    print(text)


if __name__ == "__main__":
    main()
