"""Walsh-Hadamard transform: O(n log n) butterfly (torch path) vs a dense ``x @ H`` matmul.

    python shared/benchmarks/hadamard.py [--out out/icml25_shared/hadamard.json] [--rows 256]
"""

from __future__ import annotations

import argparse
from pathlib import Path

import scipy.linalg
import torch
from icml25_shared.bench import BenchmarkReport, compare
from icml25_shared.kernels import hadamard_transform


def run(sizes=(256, 1024, 4096), rows: int = 256, repeats: int = 5) -> BenchmarkReport:
    report = BenchmarkReport("Walsh-Hadamard transform, float32, CPU", packages=["icml25-shared", "torch", "scipy"])
    for n in sizes:
        x = torch.randn(rows, n, generator=torch.Generator().manual_seed(n))
        H = torch.tensor(scipy.linalg.hadamard(n), dtype=torch.float32) / n**0.5
        err = (hadamard_transform(x, backend="torch") - x @ H).abs().max().item()
        report.add(compare(lambda x=x: hadamard_transform(x, backend="torch"), lambda x=x, H=H: x @ H,
                           label=f"n={n}", ours_name="butterfly (torch)", peer_name="dense x @ H",
                           repeats=repeats, sizes={"rows": rows, "n": n}, metrics={"max_abs_diff": err}))
    return report


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--out", type=Path, default=Path("out/icml25_shared/hadamard.json"))
    parser.add_argument("--rows", type=int, default=256)
    args = parser.parse_args()
    report = run(rows=args.rows)
    report.write_json(args.out)
    print(report.to_markdown())


if __name__ == "__main__":
    main()
