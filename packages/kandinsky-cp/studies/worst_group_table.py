"""Render the README's reproduction rows from results/reproduce.json: the per-draw worst-group deviation.

The paper's guarantee holds per calibration draw, so the headline is the mean over the reshuffles of
each draw's largest |coverage - level| over groups, with a 95 % t-interval of that mean; the worst
deviation of the coverage averaged over draws is the secondary column.

    python packages/kandinsky-cp/studies/worst_group_table.py
"""

from __future__ import annotations

import json
import math
from pathlib import Path

from scipy import stats

RESULTS = Path(__file__).resolve().parents[1] / "results" / "reproduce.json"


def main() -> None:
    data = json.loads(RESULTS.read_text())
    print("| data set | method | per-draw worst deviation, mean [95 % CI] (sd), draws | worst deviation of the "
          "mean coverage | set size / width |")
    print("|---|---|---|---|---|")
    for name, methods in data["results"].items():
        for method, r in methods.items():
            n = r["n_reps"]
            half = stats.t.ppf(0.975, n - 1) * r["worst_group_dev_std"] / math.sqrt(n) if n > 1 else float("nan")
            m = r["worst_group_dev_mean"]
            size = r.get("mean_size", r.get("mean_width", float("nan")))
            cell = f"{m:.3f} [{m - half:.3f}, {m + half:.3f}]"
            if method.startswith("Kandinsky ("):  # the method of the paper, in bold
                method, cell = f"**{method}**", f"**{cell}**"
            print(f"| {name} | {method} | {cell} ({r['worst_group_dev_std']:.3f}), {n} | "
                  f"{r['worst_mean_group_dev']:.3f} | {size:.2f} |")


if __name__ == "__main__":
    main()
