"""Write results/icl-<protocol>.{json,md,png} from the stored cells without training more (budget set to 0).

    python packages/looped-transformers/studies/report_icl.py               # icl-cpu, root seed 2
    python packages/looped-transformers/studies/report_icl.py converged 3   # icl-converged, root seed 3
    python packages/looped-transformers/studies/report_icl.py converged 4 icl-converged-seed4   # another folder
"""

import json
import sys
from pathlib import Path

import torch
from icml25_shared.cli import save_figure

from looped_transformers import experiments
from looped_transformers.__main__ import main

name, seed = (sys.argv[1], sys.argv[2]) if len(sys.argv) > 2 else ("cpu", "2")
if len(sys.argv) > 3:  # cells of a run stored in results/<folder>/: the same report, named after the folder
    protocol = experiments.ICL_PROTOCOLS[name]
    folder = Path("packages/looped-transformers/results") / sys.argv[3]
    report = experiments.icl_verdicts(folder, n_seeds=protocol["seeds"], steps=protocol["steps"])
    folder.with_suffix(".json").write_text(json.dumps({"protocol": protocol, "seed": int(seed),
                                                       "torch": torch.__version__, **report}, indent=1))
    folder.with_suffix(".md").write_text(experiments.icl_table(report))
    figure = experiments.icl_figure(report, n_seeds=protocol["seeds"], steps=protocol["steps"])
    save_figure(figure, folder.with_suffix(".png"))
    raise SystemExit(0)
experiments.ICL_PROTOCOLS[name]["budget_minutes"] = 0.0  # report only: every missing cell is listed as skipped
raise SystemExit(main(["reproduce", "--protocol", f"icl-{name}", "--seed", seed,
                       "--out", "packages/looped-transformers/results"]))
