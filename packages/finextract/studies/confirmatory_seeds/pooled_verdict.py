"""Instance design: pooled verdict over the first run's test seeds (0, 1, 2) and the extra seeds (4, 5).

Reads the searching run (``reproduce.json``: test seeds 0-2, calibration seed 3) and the frozen-settings run on
more test seeds (``reproduce --seeds 4,5 --calibration .../reproduce.json`` -> ``reproduce-seeds4-5.json``), checks
that both used the same design, config, pretrained model and calibrated settings, and applies the criterion fixed
in ``studies/confirmatory_seeds.md`` before the extra seeds were first run:

- regimes: one counts if the calibrated CFG baseline's AS on the calibration seed (mean of full and LoRA) is above
  the AS of 8 random other real 3s (``no_extraction_reference``); every regime is reported either way;
- the claim holds if, in every counted regime, calibrated FineXtract has a strictly higher mean AS *and* a strictly
  higher mean A-ESR at the primary threshold (0.93) than calibrated CFG, over all test seeds, for full and LoRA.

Prints markdown (per seed, pooled, extra seeds alone) and writes it to ``--out``.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from icml25_shared.tables import markdown_table

from finextract.experiments import BASELINE, METHOD, counted_regimes, head_to_head, no_extraction_reference

RESULTS = Path(__file__).resolve().parents[2] / "results"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--first", type=Path, default=RESULTS / "reproduce.json")
    parser.add_argument("--more", type=Path, default=RESULTS / "reproduce-seeds4-5.json")
    parser.add_argument("--out", type=Path, default=RESULTS / "pooled-seeds0-5.md")
    args = parser.parse_args()
    first, more = json.loads(args.first.read_text()), json.loads(args.more.read_text())
    for key in ("design", "config", "regimes", "esr_thresholds"):
        if first[key] != more[key]:
            raise SystemExit(f"{key} differs between the two runs: {first[key]} vs {more[key]}")
    if first["calibration"]["chosen"] != more["calibration"]["chosen"]:
        raise SystemExit("the extra seeds were not run with the first run's calibrated settings")
    if more.get("pretrain_seed") != first["seeds"][0] or set(first["seeds"]) & set(more["seeds"]):
        raise SystemExit("the runs must share the pretrained model and have disjoint test seeds")
    esr = f"A-ESR@{first['esr_thresholds'][0]}"
    stored = first["no_extraction_reference"]
    ref = no_extraction_reference(
        stored["n_train"], digits=tuple(stored["digits"]), thresholds=tuple(first["esr_thresholds"])
    )
    if abs(ref["AS"] - stored["AS"]) > 1e-9:
        raise SystemExit("the no-extraction reference does not reproduce")
    counted = counted_regimes(first["calibration"], stored["AS"])
    lines = [
        f"# Instance design, pooled over test seeds: {METHOD} vs {BASELINE}",
        "",
        f"Settings (frozen from calibration seed {first['calibration']['seed']}): {first['calibration']['chosen']}",
        "",
        f"Regime rule (calibration seed only): calibrated CFG AS > {stored['AS']:.3f} (8 random other 3s). "
        f"Per-set AS of that reference: 90th / 95th percentile {ref['AS_per_set_quantiles']['0.9']:.3f} / "
        f"{ref['AS_per_set_quantiles']['0.95']:.3f} (secondary, not the rule).",
        "",
        markdown_table(
            [(g, c["cfg_AS"], c["counts"]) for g, c in counted.items()],
            headers=["regime", "calibration-seed CFG AS", "counts"],
            digits=3,
        ),
        "",
        f"Per seed, FineXtract / CFG: AS, {esr}",
        "",
    ]
    runs = first["runs"] + more["runs"]
    index = {(x["regime"], x["setting"], x["method"], x["seed"]): x for x in runs}
    per_seed = []
    for e in head_to_head(runs, esr):
        for s in e["seeds"]:
            fx, cfg = (index[(e["regime"], e["setting"], m, s)] for m in (METHOD, BASELINE))
            per_seed.append(
                (e["regime"], e["setting"], s, f"{fx['AS']:.3f} / {cfg['AS']:.3f}", f"{fx[esr]:.3f} / {cfg[esr]:.3f}")
            )
    lines.append(markdown_table(per_seed, headers=["regime", "setting", "seed", "AS", esr]))
    verdict = True
    headers = ["regime", "setting", "seeds", "FX AS", "CFG AS", f"FX {esr}", f"CFG {esr}", "FX wins both"]
    for title, rows in (("all test seeds (the criterion)", runs), ("extra seeds only (descriptive)", more["runs"])):
        table = []
        for e in head_to_head(rows, esr):
            table.append(
                (
                    e["regime"],
                    e["setting"],
                    ",".join(map(str, e["seeds"])),
                    e["FX AS"],
                    e["CFG AS"],
                    e["FX " + esr],
                    e["CFG " + esr],
                    e["wins"],
                )
            )
            if rows is runs and counted[e["regime"]]["counts"]:
                verdict = verdict and e["wins"]
        lines += ["", f"Means over {title}", "", markdown_table(table, headers=headers, digits=3)]
    verdict = verdict and any(c["counts"] for c in counted.values())
    lines += [
        "",
        f"**Counted regimes {[g for g, c in counted.items() if c['counts']]}: FineXtract beats CFG on both metrics "
        f"in every counted cell: {'yes' if verdict else 'no'}.**",
    ]
    text = "\n".join(lines) + "\n"
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(text)
    print(text)


if __name__ == "__main__":
    main()
