"""Confirm-run extra cells at d=64: STE W4A4 and W4A4 without Hadamard, paired with the stored confirm run.

    nohup nice -n 5 env OMP_NUM_THREADS=1 python packages/quest-qat/studies/run_gap_extra.py > log 2>&1 &

Same settings, root seed 3 and seed count as ``GAP_PROTOCOLS["confirm"]``, so the batch stream
(``child_seeds(3, 4)[0]``) and each seed's initial weights equal the stored FP32 / QuEST W4A4 runs in
``results/gap-confirm/``. Two such processes share the queue in order (seed 0 of both cells, then seed 1,
then seed 2): a cell is claimed by creating ``<label>.claim``; none is started at or after ``STOP`` (UTC).

    python packages/quest-qat/studies/run_gap_extra.py report   # results/gap-ablation.{json,md,png}

pairs the stored runs of both folders (``gap_verdicts``) and renders them (``gap_table``, ``gap_figure``).
"""

import datetime as dt
import logging
import os
import sys
from pathlib import Path

import torch

from quest.scaling import GAP_PROTOCOLS, ngram_baselines, run_gap_cells

CELLS = {"STE W4A4": [4, "ste", "half"], "W4A4 no Hadamard": [4, "quest", None]}
OUT = Path(__file__).resolve().parents[1] / "results" / "gap-confirm-extra"
STOP = dt.time(23, 52)


def report() -> None:
    """Write results/gap-ablation.{json,md,png}: the new cells with the stored FP32 and QuEST W4A4 runs."""
    import json

    from quest.experiments import gap_figure, gap_table
    from quest.scaling import gap_verdicts

    results = OUT.parent
    protocol = {**GAP_PROTOCOLS["confirm"], "precisions": {"FP32": None, "W4A4": [4, "quest", "half"], **CELLS}}
    verdicts = gap_verdicts([results / "gap-confirm", OUT], n_seeds=protocol["n_seeds"])
    # the W1A1 runs and their rules belong to the confirm report; this one keeps the gate and the ablation rules
    verdicts["runs"] = {k: v for k, v in verdicts["runs"].items() if not k.startswith("W1A1")}
    verdicts["rules"] = {k: v for k, v in verdicts["rules"].items() if not k.startswith(("1 ", "2 "))}
    (results / "gap-ablation.json").write_text(json.dumps(
        {"protocol": protocol, "seed": 3, "torch": torch.__version__,
         "folders": ["results/gap-confirm", "results/gap-confirm-extra"], **verdicts}, indent=1))
    (results / "gap-ablation.md").write_text(gap_table(verdicts))
    gap_figure(verdicts, n_seeds=protocol["n_seeds"]).savefig(results / "gap-ablation.png", dpi=120)


if __name__ == "__main__" and sys.argv[1:] == ["report"]:
    report()
elif __name__ == "__main__":
    import json

    torch.set_num_threads(1)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(message)s", stream=sys.stdout)
    OUT.mkdir(parents=True, exist_ok=True)
    if not (OUT / "ngram.json").exists():
        (OUT / "ngram.json").write_text(json.dumps(ngram_baselines(GAP_PROTOCOLS["confirm"]["corpus_bytes"]), indent=1))
    for i in range(GAP_PROTOCOLS["confirm"]["n_seeds"]):
        for name, spec in CELLS.items():
            label = f"{name}-d64-seed{i}".replace(" ", "_")
            if dt.datetime.now(dt.timezone.utc).time() >= STOP:
                logging.info("%s not started: clock stop %s UTC", label, STOP)
                continue
            try:
                os.close(os.open(OUT / f"{label}.claim", os.O_CREAT | os.O_EXCL))
            except FileExistsError:
                continue
            protocol = {**GAP_PROTOCOLS["confirm"], "precisions": {name: spec}}
            run_gap_cells(protocol, OUT, random_state=3, seed_indices=[i])
            (OUT / f"{label}.claim").unlink()
