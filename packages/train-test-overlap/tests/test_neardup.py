"""MinHash near-duplicates: estimates within 0.1 of exact Jaccard, LSH recall on planted copies, few far pairs flagged."""

import numpy as np
import pytest

from train_test_overlap import Instance, TestSet

pytest.importorskip("datasketch")
from train_test_overlap.neardup import minhash, near_duplicates, shingles  # noqa: E402


def test_minhash_estimates_within_0_1_of_exact_jaccard_for_99_percent_of_1000_pairs():
    rng = np.random.default_rng(0)
    close = 0
    for _ in range(1000):
        size = int(rng.integers(20, 200))
        target = rng.random()
        shared = int(round(size * target))
        a = {f"s{j}" for j in range(size)}
        b = {f"s{j}" for j in range(shared)} | {f"t{j}" for j in range(size - shared)}
        exact = len(a & b) / len(a | b)
        est = minhash(a).jaccard(minhash(b))
        close += abs(est - exact) <= 0.1
    assert close >= 990


def _words(rng, k):
    return [f"w{v}" for v in rng.integers(0, 50_000, size=k)]


def test_lsh_finds_planted_near_duplicates_and_rarely_flags_far_pairs():
    rng = np.random.default_rng(1)
    inst, docs, kind = [], [], []
    for i in range(150):
        words = _words(rng, 60)
        inst.append(Instance(f"q{i}", " ".join(words)))
        near = list(words)
        near[int(rng.integers(0, 60))] = "edited"         # one word changed: J about 0.84
        far = words[:24] + _words(rng, 36)                # shared 40% prefix: J about 0.2
        docs += [" ".join(near), " ".join(far)]
        kind += [("near", i), ("far", i)]
    ts = TestSet("t", "test", inst)
    exact = {}
    for u, (_, i) in enumerate(kind):
        a, b = shingles(inst[i].input), shingles(docs[u])
        exact[u] = len(a & b) / len(a | b)
    assert min(exact[u] for u, (k, _) in enumerate(kind) if k == "near") >= 0.8
    assert max(exact[u] for u, (k, _) in enumerate(kind) if k == "far") <= 0.3
    hits = {(d.unit, d.instance_id) for d in near_duplicates(ts, docs, threshold=0.6, verify=False)}
    near_units = [(u, f"q{i}") for u, (k, i) in enumerate(kind) if k == "near"]
    far_units = [(u, f"q{i}") for u, (k, i) in enumerate(kind) if k == "far"]
    assert sum(p in hits for p in near_units) >= 0.98 * len(near_units)
    assert sum(p in hits for p in far_units) <= 0.01 * len(far_units)
    # no unrelated pair is flagged either
    assert all(pair in near_units or pair in far_units for pair in hits)


def test_paragraph_mode_and_errors():
    ts = TestSet("t", "test", [Instance("q", "alpha beta gamma delta epsilon zeta eta theta iota kappa")])
    doc = "unrelated words here and there\n\nALPHA beta, gamma delta epsilon zeta eta theta iota kappa!"
    assert near_duplicates(ts, [doc]) == []  # the whole document dilutes the similarity
    (hit,) = near_duplicates(ts, [doc], paragraphs=True)
    assert hit.unit == 1 and hit.estimated_jaccard == 1.0
    with pytest.raises(ValueError, match="threshold"):
        near_duplicates(ts, [doc], threshold=1.0)
    assert shingles("a b", k=5) == {"a b"} and shingles("...") == set()
