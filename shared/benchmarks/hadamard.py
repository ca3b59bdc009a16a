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


def run(sizes=(256, 1024, 4096), rows: int = 256, repeats: int = 5, threads: int = 1) -> BenchmarkReport:
    """Both sides on ``threads`` torch threads: the comparison is about operation counts, and torch's
    intra-op threading of the butterfly's many small ops is erratic on a loaded machine."""
    report = BenchmarkReport(f"Walsh-Hadamard transform, float32, CPU, {threads} torch thread(s)",
                             packages=["icml25-shared", "torch", "scipy"])
    previous = torch.get_num_threads()
    torch.set_num_threads(threads)
    try:
        _add_rows(report, sizes, rows, repeats)
    finally:
        torch.set_num_threads(previous)
    return report


def _add_rows(report: BenchmarkReport, sizes, rows: int, repeats: int) -> None:
    for n in sizes:
        x = torch.randn(rows, n, generator=torch.Generator().manual_seed(n))
        H = torch.tensor(scipy.linalg.hadamard(n), dtype=torch.float32) / n**0.5
        err = (hadamard_transform(x, backend="torch") - x @ H).abs().max().item()
        report.add(compare(lambda x=x: hadamard_transform(x, backend="torch"), lambda x=x, H=H: x @ H,
                           label=f"n={n}", ours_name="butterfly (torch)", peer_name="dense x @ H",
                           repeats=repeats, sizes={"rows": rows, "n": n}, metrics={"max_abs_diff": err}))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--out", type=Path, default=Path("out/icml25_shared/hadamard.json"))
    parser.add_argument("--rows", type=int, default=256)
    parser.add_argument("--threads", type=int, default=1)
    args = parser.parse_args()
    report = run(rows=args.rows, threads=args.threads)
    report.write_json(args.out)
    print(report.to_markdown())


if __name__ == "__main__":
    main()
