"""CorpusSketch: no false negatives vs the exact scan, the configured false-positive rate, bitwise shard merging."""

import math

import numpy as np
import pytest

from train_test_overlap import OverlapIndex, load_helm_scenarios, metrics
from train_test_overlap.sketch import CorpusSketch

pytest.importorskip("xxhash")


def test_no_false_negatives_vs_exact_counts(helm_data):
    sets = load_helm_scenarios(helm_data / "scenarios.jsonl")
    counts = OverlapIndex(sets, n=5).scan(helm_data / "corpus.txt")
    sketch = CorpusSketch(n=5, capacity=1000, fp_rate=1e-3).add_corpus(helm_data / "corpus.txt")
    found = [counts.index.tokens_of(g) for g in counts._counts[5]]
    assert len(found) > 50 and sketch.contains(found).all()
    approx = sketch.overlap(sets)
    for m in metrics(counts, n=5, parts=("input",)):
        got = approx[(m.test_set, m.split)][m.instance_id]
        assert (math.isnan(got) and math.isnan(m.jaccard)) or got >= m.jaccard


def _fp_rate(p, queries):
    sketch = CorpusSketch(n=2, tokenizer="whitespace", capacity=100_000, fp_rate=p, seed=3)
    sketch.add_documents([f"a{i} b{i}" for i in range(100_000)])  # exactly `capacity` distinct 2-grams
    return sketch.contains([(f"x{i}", f"y{i}") for i in range(queries)]).mean()


@pytest.mark.parametrize("p", [1e-2, 1e-3])
def test_false_positive_rate_on_absent_ngrams(p):
    assert 0.5 * p <= _fp_rate(p, 200_000) <= 1.5 * p


@pytest.mark.slow
@pytest.mark.parametrize("p", [1e-2, 1e-3])
def test_false_positive_rate_on_a_million_absent_ngrams(p):
    assert 0.5 * p <= _fp_rate(p, 1_000_000) <= 1.5 * p


def test_or_merged_shards_equal_the_one_pass_filter_bitwise(tmp_path):
    rng = np.random.default_rng(0)
    docs = [" ".join(f"w{v}" for v in rng.integers(0, 300, size=rng.integers(0, 40))) for _ in range(200)]
    kw = {"n": 3, "capacity": 5000, "fp_rate": 1e-2, "seed": 7}
    whole = CorpusSketch(**kw).add_documents(docs)
    shards = [CorpusSketch(**kw).add_documents(docs[i::3]) for i in (2, 0, 1)]
    merged = shards[0] | shards[1] | shards[2]
    assert np.array_equal(merged.bits, whole.bits) and merged.documents == 200
    path = whole.save(tmp_path / "s.npz")
    back = CorpusSketch.load(path)
    assert np.array_equal(back.bits, whole.bits) and (back.n, back.k, back.m, back.tokenizer.name) == (3, whole.k, whole.m, "helm-default")
    with pytest.raises(ValueError, match="differ in parameters"):
        whole | CorpusSketch(**{**kw, "seed": 8})


def test_queries_under_another_n_or_tokenizer_are_refused():
    sketch = CorpusSketch(n=13, capacity=100).add_documents(["a b c"])
    with pytest.raises(ValueError, match="holds 13-grams; a query with n=5"):
        sketch.contains([("a",) * 5], n=5)
    with pytest.raises(ValueError, match="tokenizer 'helm-default'; a query with 'janitor'"):
        sketch.overlap([], tokenizer="janitor")
    with pytest.raises(ValueError, match="has 2 tokens"):
        sketch.contains([("a", "b")])
    # a string is not an n-gram: "abc" would be read as the 3-gram ("a", "b", "c") and answer another question
    three = CorpusSketch(n=3, capacity=100, tokenizer="whitespace").add_documents(["a b c"])
    assert three.contains([("a", "b", "c")]).tolist() == [True]
    with pytest.raises(TypeError, match="sequence of tokens, not a str"):
        three.contains(["abc"])


@pytest.mark.parametrize("fp", [0, 1, 1.5, -0.1])
def test_fp_rate_outside_the_unit_interval_is_refused(fp):
    with pytest.raises(ValueError, match=r"fp_rate must be a float in \(0, 1\)"):
        CorpusSketch(fp_rate=fp)


def test_localise_gives_the_exact_counts_of_flagged_instances(helm_data):
    sets = load_helm_scenarios(helm_data / "scenarios.jsonl")
    exact = OverlapIndex(sets, n=13, parts=("input",)).scan(helm_data / "corpus.txt")
    # a tiny, overfull filter: many false positives, which localisation must remove
    sketch = CorpusSketch(n=13, capacity=20, fp_rate=0.3).add_corpus(helm_data / "corpus.txt")
    local = sketch.localise(sets, helm_data / "corpus.txt")
    for ts in sets:
        ids = [i.id for i in ts.instances]
        kept = {ts2.key: [i.id for i in ts2.instances] for ts2 in local.index.test_sets}.get(ts.key, [])
        assert set(exact.overlapping_ids(ts.key, "input", 13)) <= set(kept) <= set(ids)
        assert local.overlapping_ids(ts.key, "input", 13) == exact.overlapping_ids(ts.key, "input", 13)
        for i in kept:
            assert local.ngram_counts(ts.key, i, "input", 13) == exact.ngram_counts(ts.key, i, "input", 13)
    assert sum(len(t.instances) for t in local.index.test_sets) == 9 > 4  # 5 false positives removed
    assert CorpusSketch(n=13, capacity=100).localise(sets, helm_data / "corpus.txt") is None


def test_a_sketch_with_a_custom_tokenizer_loads_back_with_that_tokenizer(tmp_path):
    def chars3(text):
        return [text[j:j + 3] for j in range(0, len(text), 3)]

    sketch = CorpusSketch(n=2, tokenizer=chars3, capacity=1000).add_documents(["abcdefghi"])
    path = sketch.save(tmp_path / "s.npz")
    with pytest.raises(ValueError, match="pass tokenizer="):
        CorpusSketch.load(path)
    with pytest.raises(ValueError, match=r"was saved with tokenizer '.*chars3'; the tokenizer passed is 'whitespace'"):
        CorpusSketch.load(path, tokenizer="whitespace")
    back = CorpusSketch.load(path, tokenizer=chars3)
    assert np.array_equal(back.bits, sketch.bits) and back.documents == 1
    assert back.contains([("abc", "def"), ("def", "abc")]).tolist() == [True, False]


def test_seed_is_a_valid_xxhash_seed():
    for bad, error in ((-1, ValueError), (2**64, ValueError), (1.5, TypeError), ("3", TypeError), (True, TypeError),
                       (None, TypeError)):
        with pytest.raises(error, match="CorpusSketch: seed must be an int"):
            CorpusSketch(n=2, capacity=100, seed=bad)
    assert CorpusSketch(n=2, capacity=100, seed=np.uint64(2**64 - 1)).seed == 2**64 - 1
