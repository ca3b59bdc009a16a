"""Judge acceptance item 5 on a `python -m dsi reproduce` JSON with the criteria fixed before the
confirmatory run on seeds 3-5 (README, "Confirmatory run"):

1. DSI's canary exposure is monotone non-increasing in epsilon (8 -> 4 -> 2 -> 1) on the seed mean.
2. DSI's mean test accuracy is >= isotropic's, >= per-sample DP-SGD's and >= DP-SGD-group's at every epsilon.
3. Backdoor: DSI's ASR at epsilon = 4 is at most half the no-defence ASR on the seed mean, with mean clean
   accuracy within 2 points (0.02) of no defence.

Per-seed comparisons are printed too (they are reported, not part of the pass/fail rule).

Usage: python packages/dsi/studies/reproduce-grid/criteria.py packages/dsi/results/reproduce_seeds345.json [--out FILE.md]
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path


def judge(data: dict) -> tuple[list[str], dict[str, bool]]:
    summary = data["summary"]
    seeds = data["seeds"]
    epsilons = sorted(data["epsilons"], reverse=True)
    mem = {(e["regime"], e["epsilon"]): e for e in summary if e["task"] == "memorisation"}
    bd = {e["epsilon"]: e for e in summary if e["task"] == "backdoor"}
    lines = [f"Seeds {seeds}.", ""]
    verdict: dict[str, bool] = {}

    exp = [mem[("dsi", e)]["exposure"][0] for e in epsilons]
    verdict["exposure monotone"] = all(b <= a for a, b in zip(exp, exp[1:], strict=False))
    lines.append(
        "1. DSI exposure (mean, eps "
        + " -> ".join(f"{e:g}" for e in epsilons)
        + "): "
        + ", ".join(f"{v:.2f}" for v in exp)
        + f" -> {'met' if verdict['exposure monotone'] else 'NOT met'}"
    )
    lines.append(
        "   per seed: "
        + "; ".join(
            f"seed {s}: " + ", ".join(f"{mem[('dsi', e)]['per_seed_exposure'][i]:.2f}" for e in epsilons)
            for i, s in enumerate(seeds)
        )
    )
    lines += ["", "2. Test accuracy, mean [per seed]:", ""]
    lines.append("| eps | DSI | isotropic | DP-SGD | DP-SGD-group | DSI >= all (mean) | seeds where DSI >= all |")
    lines.append("|---|---|---|---|---|---|---|")
    ok_acc = True
    for e in epsilons:
        d = mem[("dsi", e)]
        peers = [mem[(r, e)] for r in ("isotropic", "dpsgd", "dpsgd-group") if (r, e) in mem]
        ok = all(d["test_accuracy"][0] >= p["test_accuracy"][0] for p in peers)
        ok_acc &= ok and len(peers) == 3
        per_seed_ok = [
            s
            for i, s in enumerate(seeds)
            if all(d["per_seed_test_accuracy"][i] >= p["per_seed_test_accuracy"][i] for p in peers)
        ]

        def cell(entry: dict) -> str:
            return (
                f"{entry['test_accuracy'][0]:.3f} ["
                + ", ".join(f"{v:.3f}" for v in entry["per_seed_test_accuracy"])
                + "]"
            )

        lines.append(
            f"| {e:g} | {cell(d)} | "
            + " | ".join(cell(p) for p in peers)
            + f" | {'yes' if ok else 'NO'} | {', '.join(map(str, per_seed_ok)) or 'none'} |"
        )
    verdict["accuracy >= peers"] = ok_acc
    lines.append(f"   -> {'met' if ok_acc else 'NOT met'}")
    base, d4 = bd[None], bd[4.0]
    asr0, asr4 = base["attack_success_rate"][0], d4["attack_success_rate"][0]
    acc0, acc4 = base["clean_accuracy"][0], d4["clean_accuracy"][0]
    verdict["backdoor"] = asr4 <= 0.5 * asr0 and acc0 - acc4 <= 0.02
    lines += [
        "",
        f"3. Backdoor, mean: no defence clean {acc0:.3f} / ASR {asr0:.3f}; DSI eps=4 clean {acc4:.3f} / ASR "
        f"{asr4:.3f} (ratio {asr4 / asr0 if asr0 else float('nan'):.2f}, clean change {100 * (acc4 - acc0):+.1f} "
        f"points) -> {'met' if verdict['backdoor'] else 'NOT met'}",
        "   per seed (clean / ASR, none -> DSI eps=4): "
        + "; ".join(
            f"seed {s}: {base['per_seed_clean_accuracy'][i]:.3f}/{base['per_seed_attack_success_rate'][i]:.2f} -> "
            f"{d4['per_seed_clean_accuracy'][i]:.3f}/{d4['per_seed_attack_success_rate'][i]:.2f}"
            for i, s in enumerate(seeds)
        ),
        "",
        "All criteria met: " + ("yes" if all(verdict.values()) else "no"),
    ]
    return lines, verdict


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("json", type=Path)
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args()
    lines, _ = judge(json.loads(args.json.read_text()))
    text = "\n".join(lines) + "\n"
    if args.out is not None:
        args.out.write_text(text)
    print(text)


if __name__ == "__main__":
    main()
