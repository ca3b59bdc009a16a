"""Time the portfolio scorer and the report writers; write JSON and print a markdown table.

Cases: ``assess_many`` on 100,000 generated answer sets (DataFrame, CSV file, list of dicts), ``assess``
row by row on 10,000 sets (the scalar reference that ``assess_many`` agrees with), and 1,000 Markdown and
HTML reports (``assess`` plus the writer). Answer sets are drawn with ``random_state`` (each answer "yes"
with probability 0.6, else uniform over the question's accepted answers).
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
from pathlib import Path

import numpy as np
from icml25_shared.bench import environment, time_call
from icml25_shared.random import check_random_state

from right_to_ai import assess, load
from right_to_ai.portfolio import assess_many
from right_to_ai.report import to_html, to_markdown


def answer_sets(n: int, random_state: int = 0) -> dict[str, list[str]]:
    """``n`` answer sets as columns (question id -> answers)."""
    rng = check_random_state(random_state)
    cols = {}
    for q in load().questions:
        u = rng.random(n)
        pick = rng.choice(np.array(q.accepted, dtype=object), size=n)
        cols[q.id] = np.where(u < 0.6, "yes", pick).tolist()
    return cols


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--out", type=Path, default=Path("out/right_to_ai/benchmark.json"))
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--n", type=int, default=100_000)
    args = parser.parse_args()
    import pandas as pd

    load()  # parse and validate the data once, outside the timings
    cols = answer_sets(args.n)
    frame = pd.DataFrame(cols)
    records = frame.to_dict("records")
    ids = list(cols)
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        csv_path = Path(tmp) / "answers.csv"
        frame.to_csv(csv_path, index=False)
        for label, fn in (("DataFrame", lambda: assess_many(frame)), ("CSV file", lambda: assess_many(csv_path)),
                          ("list of dicts", lambda: assess_many(records))):
            t = time_call(fn, name=label, repeats=args.repeats)
            rows.append({"case": f"assess_many, {label}", "n": args.n, "median_s": t.median_s, "min_s": t.min_s})
    small = records[:10_000]
    t = time_call(lambda: [assess(r) for r in small], name="assess", warmup=0, repeats=1)
    rows.append({"case": "assess row by row", "n": len(small), "median_s": t.median_s, "min_s": t.min_s})
    thousand = records[:1000]
    for label, writer in (("Markdown", to_markdown), ("HTML", to_html)):
        t = time_call(lambda writer=writer: [writer(assess(r)) for r in thousand], name=label, repeats=args.repeats)
        rows.append({"case": f"assess + {label} report", "n": 1000, "median_s": t.median_s, "min_s": t.min_s})
    tiers = np.bincount(assess_many(frame).tier, minlength=5)[1:].tolist()
    result = {"rows": rows, "tier_counts": tiers, "load_average_1_5_15": [round(x, 1) for x in os.getloadavg()],
              "questions": len(ids), "data_version": load().version,
              "environment": environment(["right-to-ai", "numpy", "pandas", "jinja2", "pyyaml"])}
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=2) + "\n")
    print("| case | answer sets | median (s) | fastest (s) | per set (µs) |")
    print("|---|---|---|---|---|")
    for r in rows:
        print(f"| {r['case']} | {r['n']:,} | {r['median_s']:.2f} | {r['min_s']:.2f} | "
              f"{r['median_s'] / r['n'] * 1e6:.1f} |")
    print(f"\ntiers of the {args.n:,} sets (1-4): {tiers}; load average {result['load_average_1_5_15']}; "
          f"{result['environment']}")


if __name__ == "__main__":
    main()
