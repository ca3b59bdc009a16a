"""Every public entry point names the parameter in TypeError (wrong type) and ValueError (wrong value)."""

import pytest
from icml25_shared.testing import assert_rejects

from train_test_overlap import CorpusSketch, Instance, OverlapIndex, TestSet

TS = TestSet("t", "test", [Instance("q", "a b c d e f", ["g"])])


def test_overlap_index_rejects_wrong_n():
    assert_rejects(OverlapIndex, "n", wrong_type=2.5, wrong_value=0, test_sets=TS)
    assert_rejects(OverlapIndex, "n", wrong_type=["13"], wrong_value=[13, -1], test_sets=TS)


@pytest.mark.parametrize(("name", "wrong_type", "wrong_value"), [
    ("n", "13", 0), ("capacity", 1e6, 0), ("fp_rate", "0.001", 1.0), ("seed", 1.5, -1)])
def test_corpus_sketch_rejects_wrong_settings(name, wrong_type, wrong_value):
    valid = {} if name == "capacity" else {"capacity": 100}
    assert_rejects(CorpusSketch, name, wrong_type=wrong_type, wrong_value=wrong_value, **valid)
