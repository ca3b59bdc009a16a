"""Benchmark __MODULE__.bootstrap_mean against the closed-form t-interval in one process.

Writes JSON and prints a markdown table (sizes, versions, machine).
"""

from __future__ import annotations

import argparse
import functools
from pathlib import Path

import numpy as np
from icml25_shared.bench import BenchmarkReport, compare
from icml25_shared.stats import t_interval

from __MODULE__ import bootstrap_mean


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--out", type=Path, default=Path("out/__MODULE__/benchmark.json"))
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    report = BenchmarkReport("__DIST__", packages=["__DIST__", "icml25-shared", "numpy"])
    for n in (100, 1000):
        x = np.random.default_rng(0).normal(size=n)
        ours, peer = bootstrap_mean(x, random_state=0), t_interval(x)
        report.add(compare(functools.partial(bootstrap_mean, x, random_state=0), functools.partial(t_interval, x),
                           label=f"n={n}", ours_name="bootstrap_mean", peer_name="t_interval",
                           repeats=args.repeats, sizes={"n": n, "n_resamples": 2000},
                           metrics={"max_bound_diff": max(abs(ours.low - peer.low), abs(ours.high - peer.high))}))
    report.write_json(args.out)
    print(report.to_markdown())


if __name__ == "__main__":
    main()
