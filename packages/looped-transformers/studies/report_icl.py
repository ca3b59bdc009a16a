"""Write results/icl-<protocol>.{json,md,png} from the stored cells without training more (budget set to 0).

    python packages/looped-transformers/studies/report_icl.py               # icl-cpu, root seed 2
    python packages/looped-transformers/studies/report_icl.py converged 3   # icl-converged, root seed 3
"""

import sys

from looped_transformers import experiments
from looped_transformers.__main__ import main

name, seed = (sys.argv[1], sys.argv[2]) if len(sys.argv) > 2 else ("cpu", "2")
experiments.ICL_PROTOCOLS[name]["budget_minutes"] = 0.0  # report only: every missing cell is listed as skipped
raise SystemExit(main(["reproduce", "--protocol", f"icl-{name}", "--seed", seed,
                       "--out", "packages/looped-transformers/results"]))
