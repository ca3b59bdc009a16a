"""Write results/charlm-converged{,-seed7}.{json,md} and results/icl-equal-compute{,-seed8}.{json,md,png} from the stored cells
(nothing is trained). A seed whose cells did not all finish is moved to ``<folder>/not-read/`` and left out,
as the protocol (studies/charlm-equal-compute-protocol.md) fixes.

    python packages/looped-transformers/studies/report_charlm_equal_compute.py main      # the two main runs
    python packages/looped-transformers/studies/report_charlm_equal_compute.py confirm   # the root seed 7 run
    python packages/looped-transformers/studies/report_charlm_equal_compute.py icl-confirm  # the root seed 8 run
"""

import json
import sys
from pathlib import Path

import torch
from icml25_shared.cli import save_figure

from looped_transformers import experiments

RESULTS = Path(__file__).resolve().parents[1] / "results"


def complete_seeds(folder: Path, protocol: dict, cells: list[str]) -> list[int]:
    """Seeds with every cell stored; the cells of the others move to ``not-read/``."""
    done = [i for i in range(protocol["seeds"]) if all((folder / f"{c}-seed{i}.json").exists() for c in cells)]
    for i in range(protocol["seeds"]):
        if i not in done:
            for path in folder.glob(f"*-seed{i}.json"):
                (folder / "not-read").mkdir(exist_ok=True)
                path.rename(folder / "not-read" / path.name)
    return done


def write(name: str, protocol: dict, seed: int, done: list[int], report: dict) -> None:
    (RESULTS / f"{name}.json").write_text(json.dumps({"protocol": protocol, "seed": seed, "seeds_read": done,
                                                      "torch": torch.__version__, **report}, indent=1))
    (RESULTS / f"{name}.md").write_text(experiments.icl_table(report))


def write_icl(name: str, protocol: dict, seed: int) -> None:
    """The equal-compute in-context report of ``results/<name>/``: table, rules and figure."""
    folder = RESULTS / name
    done = complete_seeds(folder, protocol, [f"{k}-r{r}-steps{s}" for k, r, s in protocol["equal_compute"]])
    report = experiments.icl_verdicts(folder, n_seeds=len(done), steps=protocol["steps"], compute=protocol["compute"])
    write(name, protocol, seed, done, report)
    save_figure(experiments.icl_figure(report, n_seeds=len(done), steps=protocol["steps"]), RESULTS / f"{name}.png")


icl = experiments.ICL_PROTOCOLS["equal-compute"]
if sys.argv[1:] == ["icl-confirm"]:  # amendment 2: the equal-compute protocol on root seed 8, three seeds
    write_icl("icl-equal-compute-seed8", {**icl, "seeds": 3}, 8)
    raise SystemExit(0)
lm = experiments.CHARLM_PROTOCOLS["converged"]
if sys.argv[1:] == ["confirm"]:  # amendment 1: the confirmatory run on root seed 7, LT r=1 and r=4
    confirm = {**lm, "cells": [["LT", 1], ["LT", 4]]}
    folder = RESULTS / "charlm-converged-seed7"
    done = complete_seeds(folder, confirm, [f"{k}-r{r}-steps{lm['steps']}" for k, r in confirm["cells"]])
    write("charlm-converged-seed7", confirm, 7, done, experiments.charlm_verdicts(folder, n_seeds=len(done)))
    raise SystemExit(0)
folder = RESULTS / "charlm-converged"
done = complete_seeds(folder, lm, [f"{k}-r{r}-steps{lm['steps']}" for k, r in lm["cells"]])
write("charlm-converged", lm, 5, done, experiments.charlm_verdicts(folder, n_seeds=len(done)))
write_icl("icl-equal-compute", icl, 6)
