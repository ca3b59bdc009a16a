"""Benchmark finextract against its anchors in one process; writes JSON and prints a markdown table."""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np
from icml25_shared.bench import BenchmarkReport, compare


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--out", type=Path, default=Path("out/finextract/benchmark.json"))
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    report = BenchmarkReport("finextract", packages=["finextract", "numpy"])
    x = np.random.default_rng(0).standard_normal((500, 500))
    report.add(compare(lambda: np.linalg.qr(x), lambda: np.linalg.svd(x), label="qr vs svd, 500x500",
                       ours_name="qr", peer_name="svd", repeats=args.repeats, sizes={"n": 500}))
    report.write_json(args.out)
    print(report.to_markdown())


if __name__ == "__main__":
    main()
