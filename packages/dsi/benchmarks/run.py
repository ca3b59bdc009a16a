"""Benchmark dsi's covariance solver against cvxpy's SDP solver (same problem) and at d = 10^6; writes JSON
and prints a markdown table.

Rows: (1) mirror ascent vs cvxpy/Clarabel on random problems, with the relative trace difference;
(2) d = 10^6 parameters, n = 64 differences (float32 input), mirror ascent alone (an SDP in R^d is out
of reach, and cvxpy on the reduced problem is row 1's comparison), with the DSI / isotropic trace ratio;
(3) one DSITrainer round vs one opacus DP-SGD epoch on the reproduce task.
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np
from icml25_shared.bench import BenchmarkReport, compare

from dsi import isotropic_covariance, optimal_covariance


def _solver_rows(report: BenchmarkReport, repeats: int, quick: bool) -> None:
    sizes = [(6, 20), (12, 200)] if quick else [(6, 20), (12, 200), (20, 1000)]
    for n, d in sizes:
        rng = np.random.default_rng(n)
        diffs = rng.standard_normal((n, d)) * rng.uniform(0.2, 3.0, size=(n, 1))
        ours = optimal_covariance(diffs)
        peer = optimal_covariance(diffs, method="sdp")
        rel = abs(ours.trace - peer.trace) / peer.trace
        report.add(
            compare(
                lambda diffs=diffs: optimal_covariance(diffs),
                lambda diffs=diffs: optimal_covariance(diffs, method="sdp"),
                label=f"solve n={n}, d={d}",
                ours_name="dsi mirror-ascent",
                peer_name="cvxpy SDP (Clarabel)",
                repeats=repeats if n <= 12 else 1,
                warmup=1 if n <= 12 else 0,
                sizes={"n": n, "d": d},
                metrics={
                    "rel_trace_diff": rel,
                    "ours_gap": ours.duality_gap,
                    "dsi_over_iso_span": ours.trace / isotropic_covariance(diffs).span_trace,
                },
            )
        )
        print(f"done: solve n={n}, d={d}", flush=True)


def _large_row(report: BenchmarkReport, quick: bool) -> None:
    d = 100_000 if quick else 1_000_000
    n = 64
    rng = np.random.default_rng(0)
    diffs = (
        rng.standard_normal((n, 16), dtype=np.float32) @ rng.standard_normal((16, d), dtype=np.float32)
        + 0.3 * rng.standard_normal((n, d), dtype=np.float32)
    ) * rng.uniform(0.2, 3.0, (n, 1)).astype(np.float32)
    res = optimal_covariance(diffs)
    iso = isotropic_covariance(diffs)
    report.add(
        compare(
            lambda: optimal_covariance(diffs),
            None,
            label=f"solve n={n}, d={d} (float32)",
            ours_name="dsi mirror-ascent",
            repeats=3,
            warmup=0,
            sizes={"n": n, "d": d},
            metrics={
                "ours_gap": res.duality_gap,
                "dsi_over_iso_span": res.trace / iso.span_trace,
                "max_m_over_budget": float(res.mahalanobis.max()),
            },
        )
    )


def _training_row(report: BenchmarkReport) -> None:
    import torch

    from dsi.applications import TaskConfig, _digits, _mlp, train_dpsgd
    from dsi.training import DSITrainer

    torch.set_num_threads(1)
    cfg = TaskConfig()
    xtr, ytr, _, _ = _digits(0)
    groups = np.full(len(ytr), -1)
    groups[:32] = np.arange(32) % 4  # four protected groups
    x, y = torch.as_tensor(xtr, dtype=torch.float32), torch.as_tensor(ytr)

    def ours() -> None:
        DSITrainer(
            _mlp(64, cfg.hidden, 10, 0),
            optimizer=cfg.optimizer,
            lr=cfg.lr,
            local_steps=cfg.local_steps,
            rounds=1,
            epsilon=2.0,
            random_state=0,
        ).fit(x, y, groups)

    def peer() -> None:
        steps = int(np.ceil(len(ytr) / cfg.dpsgd_batch_size))
        train_dpsgd(
            _mlp(64, cfg.hidden, 10, 0),
            xtr,
            ytr,
            epsilon=2.0,
            delta=cfg.delta,
            steps=steps,
            batch_size=cfg.dpsgd_batch_size,
            lr=cfg.dpsgd_lr,
            max_grad_norm=cfg.dpsgd_max_grad_norm,
            optimizer=cfg.optimizer,
        )

    report.add(
        compare(
            ours,
            peer,
            label="one DSI round (4 groups, 5 full-batch steps) vs one DP-SGD epoch incl. opacus make_private_with_epsilon",
            ours_name="DSITrainer",
            peer_name="opacus DP-SGD",
            repeats=3,
            sizes={"n": len(ytr), "d": 64 * cfg.hidden + cfg.hidden + cfg.hidden * 10 + 10},
        )
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--out", type=Path, default=Path("out/dsi/benchmark.json"))
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--quick", action="store_true", help="smaller sizes")
    args = parser.parse_args()
    report = BenchmarkReport(
        "dsi: optimal DSI covariance and training", packages=["dsi", "numpy", "cvxpy", "clarabel", "torch", "opacus"]
    )
    _large_row(report, args.quick)
    print("done: large", flush=True)
    _training_row(report)
    print("done: training", flush=True)
    _solver_rows(report, args.repeats, args.quick)
    report.write_json(args.out)
    print(report.to_markdown())


if __name__ == "__main__":
    main()
