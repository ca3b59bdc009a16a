"""Write results/gap-cpu.{json,md,png} from the stored runs without training more (budget set to 0).

    python packages/quest-qat/studies/report_gap.py
"""

from quest.__main__ import main
from quest.scaling import GAP_PROTOCOLS

GAP_PROTOCOLS["cpu"]["budget_minutes"] = 0.0  # report only: every missing run is listed as skipped
raise SystemExit(main(["reproduce", "--gap", "cpu", "--seed", "2", "--out", "packages/quest-qat/results"]))
