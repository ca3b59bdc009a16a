"""Paired statistics align episodes on (task, seed), whatever the suite's pair labels say."""

import dataclasses

from combo_redteam import ManualDecomposition, SingleModel, StandInStrong, StandInWeak, TaskSuite, benign_suite, run


def test_tasks_sharing_a_pair_label_are_all_paired():
    # a user suite may reuse a pair label for several flagged tasks (e.g. one label per source problem)
    base = benign_suite(6, random_state=5, variants=("flagged",))
    suite = TaskSuite([dataclasses.replace(t, pair="shared") for t in base])
    strong, weak = StandInStrong(capability=10), StandInWeak(capability=2)
    result = run(suite, [SingleModel(strong), ManualDecomposition.default(strong, weak)], seeds=[0, 1])
    first, second = result.paired("manual", "single-strong")
    assert first.size == 12  # 6 tasks x 2 seeds, not 1 pair x 2 seeds
    up = result.uplift("manual")
    assert up.n == 6 and up.estimate == 1.0 and up.mcnemar.b == 6  # tasks are the units, not the 12 episodes


def test_run_rejects_a_temperature_that_is_not_a_finite_non_negative_float():
    import pytest

    suite = benign_suite(1, random_state=0)
    for bad in (float("nan"), -0.5, float("inf")):
        with pytest.raises(ValueError, match="temperature must be a"):
            run(suite, [SingleModel(StandInStrong())], temperature=bad)
    with pytest.raises(TypeError, match="temperature"):
        run(suite, [SingleModel(StandInStrong())], temperature="0")
