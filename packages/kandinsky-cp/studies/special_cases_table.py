"""Render the special-case table of studies/special_cases.md from results/special_cases.json (benchmarks/special_cases.py).

    python packages/kandinsky-cp/studies/special_cases_table.py
"""

from __future__ import annotations

import json
from pathlib import Path

RESULTS = Path(__file__).resolve().parents[1] / "results" / "special_cases.json"
NOTES = {"Mondrian CP, 8 bins": " (crepes' off-by-one in the 2 bins with integer (n_b + 1) alpha)"}


def main() -> None:
    data = json.loads(RESULTS.read_text())
    print("| case | KandinskyCP | peer | ours / peer | max \\|diff\\| |")
    print("|---|---|---|---|---|")
    for r in data["rows"]:
        ratio = r["ratio_ours_over_peer"]
        verdict = f"{ratio:.1f}x slower" if ratio > 1 else f"**{1 / ratio:.1f}x faster**"
        print(f"| {r['case']} | {r['ours_s'] * 1e3:.2f} ms | {r['peer']} {r['peer_s'] * 1e3:.2f} ms | {verdict} | "
              f"{r['max_abs_diff']:.2g}{NOTES.get(r['case'], '') if r['max_abs_diff'] else ''} |")


if __name__ == "__main__":
    main()
