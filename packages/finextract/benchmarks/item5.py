"""Acceptance item 5 on the instance design: pooled verdict over the first run's test seeds and the extra seeds.

Reads the searching run (``reproduce.json``: test seeds 0-2, calibration seed 3) and the frozen-settings run on
more test seeds (``reproduce --seeds 4,5 --calibration .../reproduce.json`` -> ``reproduce-seeds4-5.json``), checks
that both used the same design, config, pretrained model and calibrated settings, and applies the criterion fixed
in the README before the extra seeds were run:

- regimes: one counts if the calibrated CFG baseline's AS on the calibration seed (mean of full and LoRA) is above
  the AS of 8 random other real 3s (``no_extraction_reference``); every regime is reported either way;
- item 5 is met if, in every counted regime, calibrated FineXtract has a strictly higher mean AS *and* a strictly
  higher mean A-ESR at the acceptance threshold (0.93) than calibrated CFG, over all test seeds, for full and LoRA.

Prints markdown (per seed, pooled, extra seeds alone) and writes it to ``--out``.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from finextract.experiments import BASELINE, METHOD, counted_regimes, head_to_head, no_extraction_reference


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--first", type=Path, default=Path("out/finextract-instance/reproduce.json"))
    parser.add_argument("--more", type=Path, default=Path("out/finextract-instance/reproduce-seeds4-5.json"))
    parser.add_argument("--out", type=Path, default=Path("out/finextract-instance/item5.md"))
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
        f"# Acceptance item 5, instance design: {METHOD} vs {BASELINE}",
        "",
        f"Settings (frozen from calibration seed {first['calibration']['seed']}): {first['calibration']['chosen']}",
        "",
        f"Regime rule (calibration seed only): calibrated CFG AS > {stored['AS']:.3f} (8 random other 3s). "
        f"Per-set AS of that reference: 90th / 95th percentile {ref['AS_per_set_quantiles']['0.9']:.3f} / "
        f"{ref['AS_per_set_quantiles']['0.95']:.3f} (secondary, not the rule).",
        "",
        "| regime | calibration-seed CFG AS | counts |",
        "|---|---|---|",
        *[f"| {g} | {c['cfg_AS']:.3f} | {'yes' if c['counts'] else 'no'} |" for g, c in counted.items()],
        "",
        f"Per seed, FineXtract / CFG: AS, {esr}",
        "",
        "| regime | setting | seed | AS | " + esr + " |",
        "|---|---|---|---|---|",
    ]
    runs = first["runs"] + more["runs"]
    index = {(x["regime"], x["setting"], x["method"], x["seed"]): x for x in runs}
    for e in head_to_head(runs, esr):
        for s in e["seeds"]:
            fx, cfg = (index[(e["regime"], e["setting"], m, s)] for m in (METHOD, BASELINE))
            lines.append(
                f"| {e['regime']} | {e['setting']} | {s} | {fx['AS']:.3f} / {cfg['AS']:.3f} | "
                f"{fx[esr]:.3f} / {cfg[esr]:.3f} |"
            )
    verdict = True
    for title, rows in (("all test seeds (the criterion)", runs), ("extra seeds only (descriptive)", more["runs"])):
        lines += ["", f"Means over {title}", ""]
        lines += ["| regime | setting | seeds | FX AS | CFG AS | FX " + esr + " | CFG " + esr + " | FX wins both |"]
        lines += ["|---|---|---|---|---|---|---|---|"]
        for e in head_to_head(rows, esr):
            lines.append(
                f"| {e['regime']} | {e['setting']} | {','.join(map(str, e['seeds']))} | {e['FX AS']:.3f} | "
                f"{e['CFG AS']:.3f} | {e['FX ' + esr]:.3f} | {e['CFG ' + esr]:.3f} | {'yes' if e['wins'] else 'no'} |"
            )
            if rows is runs and counted[e["regime"]]["counts"]:
                verdict = verdict and e["wins"]
    verdict = verdict and any(c["counts"] for c in counted.values())
    lines += [
        "",
        f"**Item 5 (counted regimes: {[g for g, c in counted.items() if c['counts']]}): "
        f"{'met' if verdict else 'not met'}.**",
    ]
    text = "\n".join(lines) + "\n"
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(text)
    print(text)


if __name__ == "__main__":
    main()
