"""The powered comparison of ``powered_protocol.md``: per-seed runs and the pooled paired tests.

    OMP_NUM_THREADS=1 nice python packages/de-antifake/studies/powered_comparison.py --sizes powered --seeds 100-107
    python packages/de-antifake/studies/powered_comparison.py --summary
"""

from __future__ import annotations

import argparse
import json
import math
from dataclasses import replace
from pathlib import Path

import numpy as np

OUT = Path(__file__).resolve().parents[1] / "results" / "powered"
COMPARISONS = (("PhonePuRe", "stage 1 (t=3)"), ("PhonePuRe", "AudioPure t=5"),
               ("PhonePuRe", "PhonePuRe, shuffled alignment"))


def mcnemar_exact(a: list[bool], b: list[bool]) -> dict:
    """Exact two-sided McNemar test of paired successes ``a`` vs ``b`` (binomial on the discordant pairs)."""
    from scipy.stats import binomtest

    a_only = sum(x and not y for x, y in zip(a, b, strict=True))
    b_only = sum(y and not x for x, y in zip(a, b, strict=True))
    n = a_only + b_only
    p = 1.0 if n == 0 else float(binomtest(a_only, n, 0.5).pvalue)
    return {"a_only": a_only, "b_only": b_only, "p": p}


def paired_t(a: list[float], b: list[float]) -> dict:
    """Paired t test of ``a - b``: mean difference, 95% interval and two-sided p."""
    from scipy.stats import t, ttest_rel

    d = np.asarray(a) - np.asarray(b)
    half = t.ppf(0.975, len(d) - 1) * d.std(ddof=1) / math.sqrt(len(d)) if len(d) > 1 else float("nan")
    return {"mean_difference": float(d.mean()), "ci": [float(d.mean() - half), float(d.mean() + half)],
            "p": float(ttest_rel(a, b).pvalue) if len(d) > 1 else float("nan")}


def wilson(k: int, n: int) -> list[float]:
    """95% Wilson interval of ``k`` successes in ``n``."""
    z = 1.959963984540054
    centre = (k + z * z / 2) / (n + z * z)
    half = z * math.sqrt(k * (n - k) / n + z * z / 4) / (n + z * z)
    return [centre - half, centre + half]


def pool(runs: list[dict]) -> dict:
    """Pool per-reference outcomes over seeds and run the protocol's tests."""
    names = list(runs[0]["rows"])
    acc = {n: [a for r in runs for a in r["rows"][n]["accepted"]] for n in names}
    sims = {n: [s for r in runs for s in r["rows"][n]["sims"]] for n in names}
    out: dict = {"seeds": [r["seed"] for r in runs], "n_pairs": len(acc[names[0]]), "rows": {}, "tests": {}}
    for n in names:
        k = sum(acc[n])
        out["rows"][n] = {"success": k / len(acc[n]), "success_ci": wilson(k, len(acc[n])),
                          "sim": float(np.mean(sims[n]))}
    for a, b in COMPARISONS:
        if a in acc and b in acc:
            out["tests"][f"{a} vs {b}"] = {"mcnemar": mcnemar_exact(acc[a], acc[b]), "sim_paired_t": paired_t(sims[a], sims[b])}
    return out


def _seeds(text: str) -> list[int]:
    lo, _, hi = text.partition("-")
    return list(range(int(lo), int(hi or lo) + 1))


def main(argv: list[str] | None = None) -> int:
    """Run seeds (one JSON each) or print the pooled summary."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", choices=("quick", "full", "powered"), default="powered")
    parser.add_argument("--seeds", default="100-107")
    parser.add_argument("--shuffled", action="store_true", help="add the shuffled-alignment control to quick/full")
    parser.add_argument("--out", default=str(OUT))
    parser.add_argument("--summary", action="store_true")
    args = parser.parse_args(argv)
    out = Path(args.out)
    if args.summary:
        runs = [json.loads(p.read_text()) for p in sorted(out.glob("seed*.json"))]
        res = pool(runs)
        (out / "summary.json").write_text(json.dumps(res, indent=1))
        print(json.dumps(res, indent=1))
        return 0
    import torch

    from de_antifake.experiments import FULL, POWERED, ChainSizes, run_chain

    torch.set_num_threads(1)
    sizes = {"quick": ChainSizes(), "full": FULL, "powered": POWERED}[args.sizes]
    if args.shuffled:
        sizes = replace(sizes, shuffled_control=True)
    out.mkdir(parents=True, exist_ok=True)
    for seed in _seeds(args.seeds):
        res = run_chain(seed, sizes)
        res["sizes"] = sizes.__dict__
        (out / f"seed{seed}.json").write_text(json.dumps(res, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
