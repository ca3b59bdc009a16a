"""The scan engine against the HELM-faithful brute force, across batchings, backends, formats and edge cases."""

import gzip
import math
import random
from pathlib import Path

import numpy as np
import pytest

from train_test_overlap import Instance, OverlapIndex, TestSet, iter_documents, metrics
from train_test_overlap.index import ShardCounts

WORDS = ["a", "b", "c", "d", "e", "A", "b.", "(c)", "é", "-", ""]


def _random_text(rng, k):
    return " ".join(rng.choice(WORDS) for _ in range(k)) + rng.choice(["", ".", " !", "?"])


def _random_problem(seed):
    rng = random.Random(seed)
    sets = []
    for s in range(2):
        inst = [Instance(f"i{j}", _random_text(rng, rng.randint(0, 9)),
                         [_random_text(rng, rng.randint(0, 6)) for _ in range(rng.randint(0, 3))]) for j in range(6)]
        sets.append(TestSet(f"set{s}", "test", inst))
    docs = [_random_text(rng, rng.randint(0, 40)) for _ in range(30)]
    return sets, docs, rng


@pytest.mark.parametrize("seed", range(12))
def test_counts_and_metrics_equal_brute_force(ref, seed):
    sets, docs, rng = _random_problem(seed)
    ns = sorted(rng.sample([1, 2, 3, 4], 2))
    index = OverlapIndex(sets, n=ns)
    counts = index.scan(docs, batch_tokens=rng.choice([1, 7, 1 << 18]))
    table = ref.build_index(sets, ns, index.tokenizer.tokenize)
    brute = ref.scan(table, docs, index.tokenizer.tokenize)
    mine = {}
    for n in ns:
        for ts in sets:
            for inst in ts.instances:
                for part in ("input", "references", "intersect"):
                    got = counts.ngram_counts(ts.key, inst.id, part, n)
                    if got:
                        mine[(n, ts.key, inst.id, part)] = got
    assert mine == {k: dict(v) for k, v in brute.items()}
    f = rng.choice([1, 2, 10])
    for n in ns:
        for fil in (None, f):
            for m in metrics(counts, n=n, frequency_filter=fil):
                inst = next(i for i in sets[int(m.test_set[-1])].instances if i.id == m.instance_id)
                text = inst.input if m.part == "input" else " ".join(inst.references)
                tokens = index.tokenizer.tokenize(text)
                if len(tokens) < n:
                    assert math.isnan(m.jaccard) and m.binary == 0
                    continue
                expect = ref.metric_scores(tokens, brute.get((n, (m.test_set, "test"), m.instance_id, m.part), {}), n, fil or 0)
                assert (m.binary, m.jaccard, m.weighted_jaccard, m.token, m.weighted_token) == pytest.approx(expect, rel=1e-12)


def test_hash_collisions_never_count(monkeypatch):
    import train_test_overlap.index as mod

    ts = TestSet("t", "test", [Instance("q", "a b c", [])])
    index = OverlapIndex(ts, n=3, parts=("input",))
    # every window hashes to 0 and 0 is an indexed key: all windows collide, the exact check decides
    monkeypatch.setattr(mod, "_window_hashes", lambda ids, n: np.zeros(ids.size - n + 1, dtype=np.uint64))
    index._engine.keys[3] = np.zeros(1, dtype=np.uint64)
    index._engine.bits[3][:] = True
    counts = index.scan(["a b d a b c c b a", "x a b", "c"])
    assert counts.ngram_counts(ts.key, "q", "input", 3) == {("a", "b", "c"): 1}


def test_indexed_ngrams_sharing_one_hash_key_are_each_counted(monkeypatch, ref):
    import train_test_overlap.index as mod

    sets, docs, _ = _random_problem(2)
    expected = OverlapIndex(sets, n=(2, 3)).scan(docs)
    # every token hashes to 0: every indexed n-gram has key 0 and every corpus window hashes to 0
    monkeypatch.setattr(mod, "_token_hashes", lambda size: np.zeros(size, dtype=np.uint64))
    index = OverlapIndex(sets, n=(2, 3))
    assert index._engine.max_dup[3] == index.num_ngrams[3] > 1
    assert index.scan(docs, batch_tokens=7) == expected


def test_documents_never_join_across_boundaries():
    ts = TestSet("t", "test", [Instance("q", "x y", [])])
    counts = OverlapIndex(ts, n=2).scan(["a x", "y b", "x", "y"], batch_tokens=1 << 18)
    assert counts.ngram_counts(ts.key, "q", "input", 2) == {}


def test_shards_merge_in_any_order_to_the_single_pass():
    sets, docs, _ = _random_problem(3)
    index = OverlapIndex(sets, n=(2, 3))
    whole = index.scan(docs)
    shards = [index.scan_documents(docs[i::4]) for i in range(4)]
    total = ShardCounts({})
    for shard in reversed(shards):
        total = total + shard
    assert index.finish(total) == whole
    assert whole.stats.documents == 30


def test_dask_sync_and_shuffled_file_shards_equal_local(tmp_path):
    pytest.importorskip("dask.bag")
    sets, docs, _ = _random_problem(5)
    index = OverlapIndex(sets, n=(2, 3))
    local = index.scan(docs)
    assert index.scan(docs, backend="dask", scheduler="sync", npartitions=3) == local
    order = list(range(6))
    random.Random(0).shuffle(order)
    for k, i in enumerate(order):
        (tmp_path / f"shard{k}.txt").write_text("\n".join(docs[i::6]) + "\n", encoding="utf-8")
    by_files = index.scan(tmp_path, backend="dask", scheduler="sync")
    assert by_files._counts == local._counts and by_files.stats.documents == local.stats.documents
    for k in (1, 2, 4, 6, 50):  # files grouped into k partitions (at most one per file): same counts
        grouped = index.scan(tmp_path, backend="dask", scheduler="sync", npartitions=k)
        assert grouped._counts == local._counts and grouped.stats == by_files.stats
    for bad in (0, -1, 2.0, True):
        with pytest.raises(ValueError, match="npartitions"):
            index.scan(tmp_path, backend="dask", scheduler="sync", npartitions=bad)


def test_file_partitions_balance_bytes_and_keep_every_file_once(tmp_path):
    from train_test_overlap.index import PARTITION_BYTES, file_partitions

    sizes = [70, 10, 10, 10, 30, 30, 40]
    paths = []
    for k, size in enumerate(sizes):
        paths.append(tmp_path / f"f{k}.txt")
        paths[-1].write_bytes(b"x" * size)
    groups = file_partitions(paths, npartitions=3)
    assert sorted(f for g in groups for f in g) == sorted(str(p) for p in paths)
    loads = sorted(sum(len(open(f, "rb").read()) for f in g) for g in groups)
    assert loads == [60, 70, 70]
    assert len(file_partitions(paths, npartitions=99)) == len(paths)
    assert file_partitions(paths) == [[str(p) for p in paths]]  # 200 bytes < PARTITION_BYTES: one task
    assert PARTITION_BYTES == 32 * 2**20


def test_jsonl_gz_zst_and_text_corpora_agree(tmp_path):
    zstd = pytest.importorskip("zstandard")
    docs = ["Alpha beta gamma.", "", "café — beta gamma delta", "line with\nnewline"]
    import json
    payload = "".join(json.dumps({"text": d, "meta": 1}) + "\n" for d in docs)
    (tmp_path / "c.jsonl").write_text(payload, encoding="utf-8")
    with gzip.open(tmp_path / "c.jsonl.gz", "wt", encoding="utf-8") as f:
        f.write(payload)
    (tmp_path / "c.jsonl.zst").write_bytes(zstd.ZstdCompressor().compress(payload.encode()))
    for name in ("c.jsonl", "c.jsonl.gz", "c.jsonl.zst"):
        assert list(iter_documents(tmp_path / name)) == docs
    ts = TestSet("t", "test", [Instance("q", "beta gamma delta", [])])
    index = OverlapIndex(ts, n=2)
    assert index.scan(tmp_path / "c.jsonl.zst") == index.scan(docs)


def test_helm_edge_tokens_match_across_punctuation():
    # HELM keeps an empty token where text starts/ends with punctuation: "(x) y" and "... x y" share ("", "x")
    ts = TestSet("t", "test", [Instance("q", "(x) y", [])])
    counts = OverlapIndex(ts, n=2, parts=("input",)).scan(["... x y"])
    assert counts.ngram_counts(ts.key, "q", "input", 2) == {("", "x"): 1, ("x", "y"): 1}


def test_input_path_of_folder_is_sorted_and_recursive(tmp_path):
    (tmp_path / "b").mkdir()
    (tmp_path / "b" / "2.txt").write_text("two\n", encoding="utf-8")
    (tmp_path / "1.txt").write_text("one\n", encoding="utf-8")
    (tmp_path / ".hidden").write_text("no\n", encoding="utf-8")
    assert list(iter_documents(tmp_path)) == ["one", "two"]
    assert list(iter_documents([Path(tmp_path / "1.txt")])) == ["one"]


@pytest.mark.slow
def test_two_worker_local_cluster_with_shuffled_shards_equals_local(tmp_path):
    distributed = pytest.importorskip("distributed")
    sets, docs, _ = _random_problem(7)
    index = OverlapIndex(sets, n=(2, 3))
    local = index.scan(docs)
    order = list(range(5))
    random.Random(1).shuffle(order)
    for k, i in enumerate(order):
        (tmp_path / f"shard{k}.txt").write_text("\n".join(docs[i::5]) + "\n", encoding="utf-8")
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None) as cluster, \
            distributed.Client(cluster) as client:
        # workers are other processes with other str hashes: the index ships its process-independent tables
        on_cluster = index.scan(tmp_path, backend="dask", scheduler=client)
    assert on_cluster._counts == local._counts and on_cluster.stats.documents == local.stats.documents
    assert metrics(on_cluster, n=3) == metrics(local, n=3)


@pytest.mark.slow
def test_a_local_transformers_tokenizer_indexes_its_own_tokens():
    tokenizers = pytest.importorskip("tokenizers")
    transformers = pytest.importorskip("transformers")
    tk = tokenizers.Tokenizer(tokenizers.models.WordLevel({"[UNK]": 0, "the": 1, "cat": 2, "sat": 3}, unk_token="[UNK]"))
    tk.pre_tokenizer = tokenizers.pre_tokenizers.Whitespace()
    hf = transformers.PreTrainedTokenizerFast(tokenizer_object=tk, unk_token="[UNK]")
    ts = TestSet("t", "test", [Instance("q", "the cat sat")])
    index = OverlapIndex(ts, n=2, tokenizer=hf, parts=("input",))
    assert index.tokenizer.name == f"hf:{type(hf).__name__}"
    counts = index.scan(["a dog and the cat sat", "the dog sat"])  # unknown words become [UNK]
    assert counts.ngram_counts(ts.key, "q", "input", 2) == {("the", "cat"): 1, ("cat", "sat"): 1}


def test_shards_of_another_index_are_refused_not_misattributed():
    import pickle

    a = TestSet("a", "test", [Instance("q", "x y z")])
    b = TestSet("b", "test", [Instance("r", "p q r")])
    index = OverlapIndex([a, b], n=2, parts=("input",))
    reordered = OverlapIndex([b, a], n=2, parts=("input",))  # same vocabulary size, other token ids
    other_n = OverlapIndex([a, b], n=3, parts=("input",))
    shard = reordered.scan_documents(["p q r"])
    with pytest.raises(ValueError, match="another OverlapIndex"):
        index.finish(shard)
    with pytest.raises(ValueError, match="another OverlapIndex"):
        index.scan_documents(["x y"]) + shard
    with pytest.raises(ValueError, match="another OverlapIndex"):
        index.finish(other_n.scan_documents(["x y z"]))
    # a copy of the index (a worker's unpickled one) produces shards that merge with the original's
    copy = pickle.loads(pickle.dumps(index))
    merged = index.finish(copy.scan_documents(["p q r"]) + index.scan_documents(["x y"]))
    assert merged.overlapping_ids(a.key, "input", 2) == ["q"] and merged.overlapping_ids(b.key, "input", 2) == ["r"]
    assert reordered.finish(shard).overlapping_ids(b.key, "input", 2) == ["r"]


def test_a_scanner_result_is_a_snapshot_not_a_live_view():
    ts = TestSet("t", "test", [Instance("q", "x y")])
    index = OverlapIndex(ts, n=2, parts=("input",))
    scanner = index.scanner()
    scanner.add("x y")
    first = scanner.result()
    scanner.add("x y z")
    second = scanner.result()
    assert index.finish(first).ngram_counts(ts.key, "q", "input", 2) == {("x", "y"): 1} and first.stats.documents == 1
    assert index.finish(second).ngram_counts(ts.key, "q", "input", 2) == {("x", "y"): 2} and second.stats.documents == 2


def test_counts_of_copies_of_one_index_add_and_of_another_index_are_refused():
    import pickle

    ts = TestSet("t", "test", [Instance("q", "x y z")])
    index = OverlapIndex(ts, n=2, parts=("input",))
    here = index.scan(["x y"])
    there = pickle.loads(pickle.dumps(index.scan(["y z", "x y"])))  # e.g. returned by a worker process
    assert (here + there).ngram_counts(ts.key, "q", "input", 2) == {("x", "y"): 2, ("y", "z"): 1}
    with pytest.raises(ValueError, match="same OverlapIndex"):
        here + OverlapIndex(ts, n=3, parts=("input",)).scan(["x y z"])


def test_counts_of_different_indexes_are_not_equal_even_with_the_same_gram_ids():
    # gram ids are positions in each index's vocabulary: "x y" here and "a b" there are both (0, 1)
    one = OverlapIndex(TestSet("t", "test", [Instance("q", "x y")]), n=2, parts=("input",))
    other = OverlapIndex(TestSet("u", "test", [Instance("q", "a b")]), n=2, parts=("input",))
    a, b = one.scan(["x y"]), other.scan(["a b"])
    assert a._counts == b._counts and a.stats == b.stats
    assert a != b
    assert a == one.scan(["x y"])


_CHILD = """
import pickle, sys
import train_test_overlap.index as mod

def refuse(*args, **kwargs):
    raise AssertionError("the index tables were rebuilt in the worker")

mod._Engine.build = classmethod(refuse)
mod._token_hashes = refuse
mod.OverlapIndex._build = refuse
with open(sys.argv[1], "rb") as f:
    index, docs = pickle.load(f)
with open(sys.argv[2], "wb") as f:
    pickle.dump((hash("a token"), index.scan_documents(docs, batch_tokens=5)), f)
"""


def test_a_pickled_index_scans_in_a_fresh_process_as_is_without_rebuilding(tmp_path):
    import os
    import pickle
    import subprocess
    import sys

    sets, docs, _ = _random_problem(4)
    index = OverlapIndex(sets, n=(2, 3))
    (tmp_path / "in.pkl").write_bytes(pickle.dumps((index, docs)))
    seed = "1" if os.environ.get("PYTHONHASHSEED") != "1" else "2"
    subprocess.run([sys.executable, "-c", _CHILD, str(tmp_path / "in.pkl"), str(tmp_path / "out.pkl")],
                   env={**os.environ, "PYTHONHASHSEED": seed}, check=True, timeout=60)
    child_hash, shard = pickle.loads((tmp_path / "out.pkl").read_bytes())
    assert child_hash != hash("a token")  # the child's str hashes differ from this process's
    assert index.finish(shard) == index.scan(docs)
    assert shard.counts[3].sum() > 0


def test_a_vocabulary_beyond_16_bit_ids_counts_its_last_tokens():
    words = [f"w{k}" for k in range(70_000)]
    ts = TestSet("t", "test", [Instance("q", " ".join(words), [])])
    index = OverlapIndex(ts, n=3, parts=("input",))
    assert index.ngram_ids(3).dtype == np.uint32
    counts = index.scan(["x w69997 w69998 w69999 y", "w1 w2 w3"])
    assert counts.ngram_counts(ts.key, "q", "input", 3) == {("w69997", "w69998", "w69999"): 1, ("w1", "w2", "w3"): 1}


def test_ngram_ids_is_read_only_so_a_caller_cannot_corrupt_later_scans():
    from train_test_overlap import Instance, OverlapIndex, TestSet

    ts = TestSet("toy", "test", [Instance("q1", "a b c d e", ["f"])])
    index = OverlapIndex(ts, n=3)
    grams = index.ngram_ids(3)
    with pytest.raises(ValueError, match="read-only"):
        grams[0] = grams[1]  # used to rewrite the index's table: 'a b c' then matched nothing, silently
    assert index.scan(["a b c"]).ngram_counts(ts.key, "q1", "input", 3) == {("a", "b", "c"): 1}
    assert grams.tolist() == [[1, 2, 3], [2, 3, 4], [3, 4, 5], [4, 5, 6]]


def test_file_partitions_refuses_a_bad_count_and_a_file_listed_twice(tmp_path):
    from train_test_overlap.index import file_partitions

    paths = []
    for k in range(3):
        paths.append(tmp_path / f"f{k}.txt")
        paths[-1].write_text("x" * (k + 1))
    # 0, -1, True and 2.7 used to be clamped or truncated to some partition count without a word
    for bad in (0, -1, True, 2.7, "2"):
        with pytest.raises(ValueError, match="npartitions"):
            file_partitions(paths, npartitions=bad)
    # a file given twice (also through another spelling of its path) would be scanned twice
    for dup in (paths + [paths[0]], paths + [tmp_path / "." / "f1.txt"]):
        with pytest.raises(ValueError, match="twice"):
            file_partitions(dup)
    assert file_partitions([]) == []  # no files: no partition (never a group without files)
    empty = tmp_path / "empty.txt"
    empty.write_text("")
    assert file_partitions([empty], npartitions=4) == [[str(empty)]]


def test_finish_refuses_negative_or_non_integer_shard_counts():
    ts = TestSet("toy", "test", [Instance("q1", "a b c d e", ["f"])])
    index = OverlapIndex(ts, n=3)
    shard = index.scan_documents(["x y z"])
    assert index.finish(shard).overlapping_ids(ts.key, "input", 3) == []
    # a negative count (e.g. shards subtracted, or an overflowed cast) used to read as an overlap
    for bad in (np.array([-5, 0, 0, 0]), np.array([0.5, 0, 0, 0]), np.array([1, 0, 0, 0], dtype=object)):
        with pytest.raises(ValueError, match="non-negative integers"):
            index.finish(ShardCounts({3: bad}, index_key=index.key))
    assert index.finish(ShardCounts({3: np.array([2, 0, 0, 0], dtype=np.uint32)})).overlapping_ids(
        ts.key, "input", 3) == ["q1"]


def test_file_partitions_is_importable_where_the_readme_names_it():
    import train_test_overlap
    from train_test_overlap.index import file_partitions

    assert train_test_overlap.file_partitions is file_partitions and "file_partitions" in train_test_overlap.__all__
