"""The janitor tokenizer decides contamination as lm-eval's ``Janitor.clean_python`` does.

Fixtures (``tests/data/janitor_clean.json``, written by ``studies/janitor_clean_goldens.py`` from
lm-evaluation-harness's own janitor and its test strings): lm-eval's ``test_janitor1``-``7`` and
``TEST_SEQUENCE`` cases, and 300 seeded documents with stand-alone punctuation.
"""

import json
from collections import Counter

import pytest

from train_test_overlap import Instance, JanitorTokenizer, OverlapIndex, TestSet

CASES = json.loads((__import__("pathlib").Path(__file__).parent / "data/janitor_clean.json").read_text(
    encoding="utf-8"))["cases"]


def _lm_eval_counts(case):
    return Counter(gram for gram, _start, _end in case["matches"])


def _our_counts(case, tokenizer="janitor"):
    ts = TestSet("t", "test", [Instance(str(k), c) for k, c in enumerate(case["contaminants"])])
    index = OverlapIndex(ts, n=case["n"], tokenizer=tokenizer, parts=("input",))
    counts = index.finish(index.scan_documents([case["document"]]))
    found: dict[str, int] = {}
    for k in range(len(case["contaminants"])):
        for gram, count in counts.ngram_counts(ts, str(k), "input", case["n"]).items():
            found[" ".join(gram)] = count
    return Counter(found)


def test_the_fixtures_hold_lm_evals_own_tests_and_stand_alone_punctuation():
    names = [c["name"] for c in CASES]
    assert [n for n in names if n.startswith("lm-eval")] == [f"lm-eval test_janitor{k}" for k in range(1, 8)] + [
        "lm-eval TEST_SEQUENCE"]
    assert len(names) == 308
    # lm-eval's own expectations, as its test file states them (one 1-gram hit; 11 hits in test 7: too dirty)
    by_name = {c["name"]: c for c in CASES}
    assert len(by_name["lm-eval test_janitor1"]["matches"]) == 1 and by_name["lm-eval test_janitor7"]["clean"] == []


@pytest.mark.parametrize("case", CASES, ids=[c["name"] for c in CASES])
def test_matched_ngrams_equal_lm_eval_clean(case):
    assert _our_counts(case) == _lm_eval_counts(case)


def test_normalising_before_splitting_would_differ_on_stand_alone_punctuation():
    """The check has power: the test-side rule applied to the corpus finds n-grams across a lone "-"."""

    class NormaliseThenSplit(JanitorTokenizer):
        def tokenize_corpus(self, text):
            return self.tokenize(text)

    differ = [c["name"] for c in CASES if _our_counts(c, NormaliseThenSplit()) != _lm_eval_counts(c)]
    assert len(differ) >= 10 and all(name.startswith("random") for name in differ)
