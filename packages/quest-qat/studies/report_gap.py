"""Write results/gap-<protocol>.{json,md,png} from the stored runs without training more (budget set to 0).

    python packages/quest-qat/studies/report_gap.py             # gap-cpu, root seed 2
    python packages/quest-qat/studies/report_gap.py confirm 3   # gap-confirm, root seed 3
"""

import sys

from quest.__main__ import main
from quest.scaling import GAP_PROTOCOLS

name, seed = (sys.argv[1], sys.argv[2]) if len(sys.argv) > 2 else ("cpu", "2")
GAP_PROTOCOLS[name]["budget_minutes"] = 0.0  # report only: every missing run is listed as skipped
raise SystemExit(main(["reproduce", "--gap", name, "--seed", seed, "--out", "packages/quest-qat/results"]))
