"""Solver on ill-conditioned DSITrainer rounds versus Clarabel: trace, iterations, time.

An MLP 6-5-3 (d = 53, float64) is trained by DSITrainer for 25 rounds on 12 protected groups of 10
samples whose second half repeats the first up to a small jitter (near-duplicate groups make the
leave-one-group-out differences ill-conditioned); budgets 0.5 / 1 / 2. Each round's differences are
solved by dsi's mirror ascent and by Clarabel through cvxpy on the same problem (SVD coordinates scaled
half-way to white, tolerances 1e-10). Writes JSON and prints a markdown table.
"""

from __future__ import annotations

import argparse
import json
import platform
import time
from pathlib import Path

import numpy as np


def clarabel_trace(diffs: np.ndarray, budgets: np.ndarray) -> tuple[float, float]:
    import cvxpy as cp

    u, sv, _ = np.linalg.svd(diffs, full_matrices=False)
    keep = sv > 1e-13 * sv[0]
    dd = np.sqrt(sv[keep] * sv[0])
    w = (sv[keep] / dd)[:, None] * u[:, keep].T
    x = cp.Variable((len(dd), len(dd)), symmetric=True)
    cons = [cp.bmat([[x, w[:, i : i + 1]], [w[:, i : i + 1].T, np.array([[b]])]]) >> 0 for i, b in enumerate(budgets)]
    prob = cp.Problem(cp.Minimize((dd / dd[0]) ** 2 @ cp.diag(x)), cons)
    start = time.perf_counter()
    prob.solve(solver="CLARABEL", tol_gap_abs=1e-10, tol_gap_rel=1e-10, tol_feas=1e-10)
    return float(prob.value * dd[0] ** 2), time.perf_counter() - start


def trainer_rounds(jitter: float, rounds: int, seed: int) -> tuple[list[np.ndarray], np.ndarray]:
    import torch

    from dsi import DSITrainer

    g = torch.Generator().manual_seed(seed)
    base = torch.randn(6, 10, 6, generator=g, dtype=torch.float64)
    x = torch.cat([base, base + jitter * torch.randn(6, 10, 6, generator=g, dtype=torch.float64)]).reshape(-1, 6)
    yb = torch.randint(0, 3, (6, 10), generator=g)
    y = torch.cat([yb, yb]).reshape(-1)
    torch.manual_seed(seed)
    model = torch.nn.Sequential(torch.nn.Linear(6, 5), torch.nn.Tanh(), torch.nn.Linear(5, 3)).double()
    budgets = np.tile([0.5, 1.0, 2.0], 4)
    trainer = DSITrainer(model, lr=0.5, local_steps=5, rounds=rounds, epsilon=4.0, budgets=budgets, random_state=seed)
    xs, ys, gs = trainer._setup(x, y, np.repeat(np.arange(12), 10))
    out = []
    for _ in range(rounds):
        trainer._round(xs, ys, gs)
        out.append(trainer.last_differences_.copy())
    return out, budgets


def main() -> None:
    from dsi import optimal_covariance

    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--out", type=Path, default=Path("out/dsi/ill_conditioned.json"))
    parser.add_argument("--rounds", type=int, default=25)
    parser.add_argument("--jitter", type=float, default=1e-4)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    rows = []
    diffs_list, budgets = trainer_rounds(args.jitter, args.rounds, args.seed)
    for k, diffs in enumerate(diffs_list):
        sv = np.linalg.svd(diffs, compute_uv=False)
        start = time.perf_counter()
        res = optimal_covariance(diffs, budgets)
        ours_s = time.perf_counter() - start
        ref, ref_s = clarabel_trace(diffs, budgets)
        rows.append(
            {
                "round": k,
                "condition": float(sv[0] / sv[sv > 1e-12 * sv[0]][-1]),
                "rel_trace_vs_clarabel": (res.trace - ref) / ref,
                "duality_gap": res.duality_gap,
                "converged": res.converged,
                "iterations": res.iterations,
                "ours_s": ours_s,
                "clarabel_s": ref_s,
            }
        )
    rel = np.array([r["rel_trace_vs_clarabel"] for r in rows])
    summary = {
        "rounds": len(rows),
        "jitter": args.jitter,
        "seed": args.seed,
        "condition_range": [min(r["condition"] for r in rows), max(r["condition"] for r in rows)],
        "converged": int(sum(r["converged"] for r in rows)),
        "max_abs_rel_trace_vs_clarabel": float(np.max(np.abs(rel))),
        "max_rel_trace_above_clarabel": float(np.max(rel)),
        "iterations_median_max": [
            float(np.median([r["iterations"] for r in rows])),
            max(r["iterations"] for r in rows),
        ],
        "ours_s_median": float(np.median([r["ours_s"] for r in rows])),
        "clarabel_s_median": float(np.median([r["clarabel_s"] for r in rows])),
        "python": platform.python_version(),
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps({"summary": summary, "rows": rows}, indent=1))
    print(
        "| rounds | condition | converged | max abs rel. trace vs Clarabel | iterations (median / max) "
        "| dsi (s, median) | Clarabel (s, median) |\n|---|---|---|---|---|---|---|"
    )
    c0, c1 = summary["condition_range"]
    print(
        f"| {len(rows)} | {c0:.1e}-{c1:.1e} | {summary['converged']}/{len(rows)} | "
        f"{summary['max_abs_rel_trace_vs_clarabel']:.1e} | {summary['iterations_median_max'][0]:.0f} / "
        f"{summary['iterations_median_max'][1]} | {summary['ours_s_median']:.4f} | {summary['clarabel_s_median']:.2f} |"
    )


if __name__ == "__main__":
    main()
