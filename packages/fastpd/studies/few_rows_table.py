"""Render the few-rows study table (studies/few_rows.md) from results/few_rows.json (written by benchmarks/few_rows.py).

One row per (depth, N); each cell is fastpd's time, the peer's time and peer / fastpd (above 1: fastpd
faster). SHAP cells compare with shap's interventional TreeExplainer, the PD cell with scikit-learn's
``partial_dependence(method="brute")``; * marks shap times scaled from fewer rows.

    python packages/fastpd/studies/few_rows_table.py            # the study's table
    python packages/fastpd/studies/few_rows_table.py --ratios   # the README's: peer / fastpd only
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

RESULTS = Path(__file__).resolve().parents[1] / "results" / "few_rows.json"


def _cell(c: dict) -> str:
    ratio = f"**{c['speedup']:.2f}x**" if c["speedup"] >= 1 else f"{c['speedup']:.2f}x"
    star = "*" if c["peer_extrapolated"] else ""
    return f"{c['fastpd_s']:.2g} / {c['peer_s']:.3g}{star} s: {ratio}"


def _ratio(c: dict) -> str:
    text = f"**{c['speedup']:.2f}x**" if c["speedup"] >= 1 else f"{c['speedup']:.2f}x"
    return text + ("\\*" if c["peer_extrapolated"] else "")


def main() -> None:
    ratios = "--ratios" in sys.argv[1:]
    data = json.loads(RESULTS.read_text())
    keys = sorted({(c["depth"], c["N"]) for c in data["cases"]})
    rows = sorted({c["rows"] for c in data["cases"] if c["case"] == "shap_values"})
    print("| depth | N | " + " | ".join(f"SHAP, {r} row{'s' if r > 1 else ''}" for r in rows)
          + " | PD curve, 50 points |")
    print("|---|---|" + "---|" * (len(rows) + 1))
    for depth, n_b in keys:
        cells = {(c["case"], c["rows"]): c for c in data["cases"] if c["depth"] == depth and c["N"] == n_b}
        fmt = _ratio if ratios else _cell
        shap_cells = [fmt(cells[("shap_values", r)]) if ("shap_values", r) in cells else "-" for r in rows]
        pd = next((c for (k, _), c in cells.items() if k == "pd_curve_50"), None)
        print(f"| {depth} | {n_b} | " + " | ".join(shap_cells) + f" | {fmt(pd) if pd else '-'} |")


if __name__ == "__main__":
    main()
