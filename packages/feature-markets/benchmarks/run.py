"""Exact market price: O(m log m) sort-and-scan vs the O(m^2) brute force, and the m = 10^6 timing.

python packages/feature-markets/benchmarks/run.py [--out out/feature_markets/benchmark.json]
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np
from icml25_shared.bench import BenchmarkReport, compare, time_call

from feature_markets import market_price


def users(m: int, seed: int = 0):
    rng = np.random.default_rng(seed)
    X = rng.uniform(0, 1, (m, 5))
    w = rng.uniform(0.1, 1, 5)
    return w, -float(np.median(X @ w)), X, 2.0 ** rng.uniform(0, 10, m)


def brute_force_price(w, bias, X, budgets) -> float:
    u = np.maximum(-(X @ w + bias), 0) / np.linalg.norm(w)
    per_unit = budgets[u > 0] / u[u > 0]
    distances = u[u > 0]
    revenue = [p * distances[per_unit >= p].sum() for p in per_unit]
    return float(per_unit[int(np.argmax(revenue))])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--out", type=Path, default=Path("out/feature_markets/benchmark.json"))
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    report = BenchmarkReport("feature-markets: exact equilibrium price", packages=["feature-markets", "numpy"])
    for m in (1_000, 4_000):
        inst = users(m)
        same = market_price(*inst).price == brute_force_price(*inst)
        report.add(
            compare(
                lambda inst=inst: market_price(*inst),
                lambda inst=inst: brute_force_price(*inst),
                label=f"m={m}",
                ours_name="sort + scan",
                peer_name="brute force O(m^2)",
                repeats=args.repeats,
                sizes={"m": m},
                metrics={"same_price": same},
            )
        )
    big = users(1_000_000)
    timing = time_call(lambda: market_price(*big), name="sort + scan", repeats=args.repeats)
    from icml25_shared.bench import Comparison

    report.add(
        Comparison(
            label="m=10^6", ours=timing, peer=None, sizes={"m": 1_000_000}, metrics={"under_1s": timing.median_s < 1.0}
        )
    )
    report.write_json(args.out)
    print(report.to_markdown())


if __name__ == "__main__":
    main()
