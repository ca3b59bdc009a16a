"""Write results/icl-cpu.{json,md,png} from the stored cells without training more (budget set to 0).

    python packages/looped-transformers/studies/report_icl.py
"""

from looped_transformers import experiments
from looped_transformers.__main__ import main

experiments.ICL_PROTOCOLS["cpu"]["budget_minutes"] = 0.0  # report only: every missing cell is listed as skipped
raise SystemExit(main(["reproduce", "--protocol", "icl-cpu", "--seed", "2", "--out", "packages/looped-transformers/results"]))
