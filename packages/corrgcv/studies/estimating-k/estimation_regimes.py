"""How RidgeCorrGCV's estimate of K behaves in three regimes (the README's estimation table).

Model: N = 100, eta_k = k^-1.8, r = 0.3, sigma = 0.3, exponential xi = 100, 25 penalties
lambda = alpha / T in [1e-5, 10], 10 seeds, no intercept. Prints markdown.
"""

from __future__ import annotations

import argparse

import numpy as np

from corrgcv import ExponentialCorrelation, power_law_problem
from corrgcv.simulate import REGIMES, simulate_estimation


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--T", type=int, nargs="+", default=[150, 400])
    parser.add_argument("--seeds", type=int, default=10)
    args = parser.parse_args()
    problem = power_law_problem(100, capacity=1.8, source=0.3, noise_std=0.3)
    corr = ExponentialCorrelation(100.0)
    print(
        "| regime | T | rule | median xi est. | mean criterion / risk at chosen | mean risk / min risk "
        "| max risk / min risk | median index - oracle index |"
    )
    print("|---|---|---|---|---|---|---|---|")
    for regime in REGIMES:
        for T in args.T:
            res = simulate_estimation(problem, corr, T, T * np.logspace(-5, 1, 25), regime, seeds=range(args.seeds))
            for rule in ("both", "features", "residuals", "gcv"):
                r = res[rule]
                xi = f"{np.median(res['xi'][rule]):.3g}" if rule in res["xi"] else "(K = I)"
                print(
                    f"| {regime} | {T} | {rule} | {xi} | {r['ratio'].mean():.3f} | {r['excess'].mean():.3f} | "
                    f"{r['excess'].max():.3f} | {np.median(r['index']) - res['oracle_index']:+g} |"
                )


if __name__ == "__main__":
    main()
