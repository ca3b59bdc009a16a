"""Rerun four validation-chosen cells of seed 3 and compare them with results/reproduce_seeds345.json.

Usage: OMP_NUM_THREADS=1 python packages/dsi/studies/reproduce-grid/check_stored_cells.py (about 30 s)
Exits 1 when a rerun cell differs from the stored one.
"""

import json
import sys
from dataclasses import replace
from pathlib import Path

import torch

from dsi.applications import TaskConfig, backdoor_defense, memorization_mitigation
from dsi.experiments import hyper_grid

STORED = Path(__file__).resolve().parents[2] / "results" / "reproduce_seeds345.json"


def main() -> int:
    torch.set_num_threads(1)
    data = json.loads(STORED.read_text())
    cfg = replace(TaskConfig(), validation=0.2)
    same = True
    for regime, eps in [("none", None), ("dsi", 8.0), ("dsi", 1.0)]:
        row = next(
            r for r in data["memorization"] if r["seed"] == 3 and r["regime"] == regime and r["epsilon"] == eps
        )
        k = row["chosen"]
        res = memorization_mitigation(
            regime=regime,
            epsilon=eps,
            config=hyper_grid(regime, cfg)[k][1],
            n_references=1023,
            n_canaries=8,
            random_state=3,
        )
        stored = row["runs"][k]
        ok = (res.test_accuracy, res.exposure) == (stored["test_accuracy"], stored["exposure"])
        same &= ok
        print(regime, eps, row["cells"][k], "stored", stored["test_accuracy"], stored["exposure"],
              "now", res.test_accuracy, res.exposure, "same" if ok else "DIFFERENT", flush=True)
    row = next(r for r in data["backdoor"] if r["seed"] == 3 and r["regime"] == "dsi" and r["epsilon"] == 4.0)
    k = row["chosen"]
    res = backdoor_defense(regime="dsi", epsilon=4.0, config=hyper_grid("dsi", cfg)[k][1], random_state=3)
    stored = row["runs"][k]
    ok = (res.clean_accuracy, res.attack_success_rate) == (stored["clean_accuracy"], stored["attack_success_rate"])
    same &= ok
    print("backdoor dsi 4.0", row["cells"][k], "stored", stored["clean_accuracy"], stored["attack_success_rate"],
          "now", res.clean_accuracy, res.attack_success_rate, "same" if ok else "DIFFERENT")
    return 0 if same else 1


if __name__ == "__main__":
    sys.exit(main())
