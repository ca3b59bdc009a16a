"""How much of the noisy reproduce rows' k trend is the strong model's errors: episodes with failed calls.

Reruns the ``noisy`` setting of ``python -m combo_redteam reproduce --seed 0`` (50 tasks, seeds 0-4, strong
stand-in with refusal rate 0.1 and error rate 0.3, seeded), checks that its rates equal the stored ones in
``results/reproduce.json``, and counts per strategy the rated episodes some of whose calls failed (a
decomposition drops a subtask whose strong call failed) and the success per episode among those without any.
Writes ``results/noisy-failed-calls.json``. Seconds on one CPU.
"""

import json
import warnings
from pathlib import Path

from combo_redteam import StandInStrong, StandInWeak, benign_suite, run
from combo_redteam.experiments import strategy_set

RESULTS = Path(__file__).resolve().parents[1] / "results"


def main() -> None:
    suite = benign_suite(50, random_state=0)
    strong = StandInStrong(capability=10, refusal_rate=0.1, error_rate=0.3, random_state=0)
    weak = StandInWeak(capability=2)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        result = run(suite, strategy_set(strong, weak, ks=(1, 3, 5)), seeds=[0, 1, 2, 3, 4], max_error_share=1.0)
    stored = {r["strategy"]: r for r in json.loads((RESULTS / "reproduce.json").read_text())["noisy"]["rows"]}
    rows = []
    for row in result.summary():
        assert abs(row["success"] - stored[row["strategy"]]["success"]) < 1e-12, row["strategy"]
        clean = [e for e in result.select(row["strategy"]) if e.errors == 0]
        rows.append({"strategy": row["strategy"], "episodes": row["episodes"], "errored": row["errored"],
                     "with_failed_calls": row["with_failed_calls"], "success": row["success"],
                     "episodes_without_failed_calls": len(clean),
                     "success_per_episode_without_failed_calls": sum(e.success for e in clean) / len(clean)})
    out = {"setting": "reproduce --seed 0, noisy", "models": [strong.name, weak.name], "rows": rows}
    (RESULTS / "noisy-failed-calls.json").write_text(json.dumps(out, indent=1) + "\n")
    for r in rows:
        print(r)


if __name__ == "__main__":
    main()
