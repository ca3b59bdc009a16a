"""Benchmark corrgcv against scikit-learn's RidgeCV (efficient LOO / "GCV mode") in one process.

Rows: a 50-penalty CorrGCV path (exponential K) vs RidgeCV(cv=None).fit on the same grid, and our
exact LOO path vs the same RidgeCV with its agreement measured. Writes JSON and prints markdown.
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np
from icml25_shared.bench import BenchmarkReport, compare
from sklearn.linear_model import RidgeCV

from corrgcv import ExponentialCorrelation, RidgeCorrGCV, corrgcv, loo


def bench_size(report: BenchmarkReport, T: int, N: int, alphas: np.ndarray, repeats: int) -> None:
    """Add the three rows for one problem size."""
    rng = np.random.default_rng(0)
    X = rng.standard_normal((T, N))
    y = X @ rng.standard_normal(N) / np.sqrt(N) + rng.standard_normal(T)
    K = ExponentialCorrelation(xi=10.0)
    sizes = {"T": T, "N": N, "n_alphas": alphas.size}

    def ridgecv() -> RidgeCV:
        return RidgeCV(alphas=alphas, fit_intercept=False, store_cv_results=True).fit(X, y)

    ref = ridgecv()
    ours_loo = loo(X, y, alphas)
    report.add(
        compare(
            lambda: corrgcv(X, y, alphas, K=K),
            ridgecv,
            label=f"{alphas.size}-penalty CorrGCV path vs RidgeCV, T={T}, N={N}",
            ours_name="corrgcv(K=exponential)",
            peer_name="RidgeCV(cv=None).fit",
            repeats=repeats,
            sizes=sizes,
        )
    )
    report.add(
        compare(
            lambda: loo(X, y, alphas),
            ridgecv,
            label=f"exact LOO path vs RidgeCV, T={T}, N={N}",
            ours_name="corrgcv.loo",
            peer_name="RidgeCV(cv=None).fit",
            repeats=repeats,
            sizes=sizes,
            metrics={
                "max_rel_diff_vs_sklearn_cv_results": float(np.max(np.abs(ours_loo / ref.cv_results_.mean(0) - 1))),
                "same_alpha": bool(alphas[np.argmin(ours_loo)] == ref.alpha_),
            },
        )
    )
    report.add(
        compare(
            lambda: RidgeCorrGCV(alphas=alphas, fit_intercept=False).fit(X, y),
            ridgecv,
            label=f"RidgeCorrGCV.fit (K estimated) vs RidgeCV, T={T}, N={N}",
            ours_name="RidgeCorrGCV.fit",
            peer_name="RidgeCV(cv=None).fit",
            repeats=repeats,
            sizes=sizes,
        )
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--out", type=Path, default=Path("out/corrgcv/benchmark.json"))
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--quick", action="store_true", help="small sizes only")
    parser.add_argument(
        "--sizes", nargs="+", default=None, help="TxN pairs, e.g. 4000x500 (default: 2000x2000 4000x500)"
    )
    args = parser.parse_args()
    report = BenchmarkReport("corrgcv vs scikit-learn RidgeCV", packages=["corrgcv", "scikit-learn", "numpy", "scipy"])
    alphas = np.logspace(-3, 3, 50)
    if args.sizes:
        sizes = [tuple(int(v) for v in size.lower().split("x")) for size in args.sizes]
    else:
        sizes = [(400, 100)] if args.quick else [(2000, 2000), (4000, 500)]
    for T, N in sizes:
        bench_size(report, T, N, alphas, args.repeats)
    report.write_json(args.out)
    print(report.to_markdown())


if __name__ == "__main__":
    main()
