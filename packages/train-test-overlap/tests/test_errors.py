"""Inputs that would give a silently wrong answer raise, naming what was wrong and what is accepted."""

import gzip

import pytest

from train_test_overlap import Instance, OverlapIndex, TestSet, get_tokenizer, iter_documents, metrics

TS = TestSet("t", "test", [Instance("q", "a b c", ["d"])])


@pytest.mark.parametrize(("n", "error"), [(0, ValueError), (-1, ValueError), (2.5, TypeError), (True, TypeError),
                                        ([], ValueError), ([3, 0], ValueError), ("5", TypeError), ([3, "5"], TypeError)])
def test_bad_n(n, error):
    with pytest.raises(error, match="OverlapIndex: n must be"):
        OverlapIndex(TS, n=n)


def test_unknown_tokenizer_lists_accepted():
    with pytest.raises(ValueError, match="accepted names: \\['helm-default', 'janitor', 'whitespace'\\]"):
        get_tokenizer("bpe")


def test_callable_tokenizer_must_return_list_of_str():
    index = OverlapIndex(TS, n=1, tokenizer=lambda s: s.split())
    assert index.tokenizer.name.endswith("<lambda>")
    with pytest.raises(TypeError, match="list of str"):
        OverlapIndex(TS, n=1, tokenizer=lambda s: [len(s)])


def test_bare_string_references_and_bad_ids():
    with pytest.raises(TypeError, match="single str"):
        Instance("q", "a", "answer")
    with pytest.raises(ValueError, match="non-empty str"):
        Instance("", "a", [])
    with pytest.raises(ValueError, match="occurs twice"):
        TestSet("t", "test", [Instance("q", "a"), Instance("q", "b")])
    with pytest.raises(ValueError, match="share name and split"):
        OverlapIndex([TS, TestSet("t", "test", [])], n=1)


def test_unknown_part_and_unindexed_n_and_bad_filter():
    with pytest.raises(ValueError, match="parts must be"):
        OverlapIndex(TS, n=1, parts=("inputs",))
    counts = OverlapIndex(TS, n=2).scan(["a b"])
    with pytest.raises(ValueError, match="n=13 was not indexed"):
        metrics(counts, n=13)
    with pytest.raises(ValueError, match="frequency_filter"):
        metrics(counts, n=2, frequency_filter=0)
    with pytest.raises(ValueError, match="part 'references' is not indexed"):
        metrics(OverlapIndex(TS, n=2, parts=("input",)).scan(["a b"]), n=2)


def test_jsonl_record_without_text_field_names_file_and_line(tmp_path):
    path = tmp_path / "c.jsonl"
    path.write_text('{"text": "a b"}\n{"content": "c"}\n', encoding="utf-8")
    with pytest.raises(ValueError, match=r"c\.jsonl:2: record has no 'text' field \(fields: \['content'\]\)"):
        list(iter_documents(path))


def test_undecodable_bytes_raise_or_replace(tmp_path):
    path = tmp_path / "c.txt.gz"
    with gzip.open(path, "wb") as f:
        f.write(b"good line\nbad \xff byte\n")
    with pytest.raises(ValueError, match="not UTF-8.*errors='replace'"):
        list(iter_documents(path))
    assert list(iter_documents(path, errors="replace")) == ["good line", "bad \ufffd byte"]
    with pytest.raises(ValueError, match="errors must be"):
        list(iter_documents(path, errors="ignore"))


def test_missing_path_and_unknown_suffix(tmp_path):
    with pytest.raises(FileNotFoundError, match="does not exist"):
        OverlapIndex(TS, n=1).scan(str(tmp_path / "nope.jsonl"))
    (tmp_path / "c.csv").write_text("x", encoding="utf-8")
    with pytest.raises(ValueError, match="unknown corpus format '.csv'"):
        list(iter_documents(tmp_path / "c.csv"))


def test_non_string_document_and_backend():
    with pytest.raises(TypeError, match="document 1 is int"):
        OverlapIndex(TS, n=1).scan(["a", 3])
    with pytest.raises(ValueError, match="backend must be"):
        OverlapIndex(TS, n=1).scan(["a"], backend="spark")


def test_a_corpus_folder_without_files_is_an_error_not_a_clean_result(tmp_path):
    (tmp_path / "shards").mkdir()
    (tmp_path / "shards" / ".part-0.crc").write_text("x", encoding="utf-8")  # hidden files are skipped
    for corpus in (tmp_path / "shards", str(tmp_path / "shards")):
        with pytest.raises(ValueError, match="no corpus files under"):
            OverlapIndex(TS, n=2).scan(corpus)
    (tmp_path / "shards" / "part-0.txt").write_text("", encoding="utf-8")  # an empty file is a corpus of 0 documents
    assert OverlapIndex(TS, n=2).scan(tmp_path / "shards").stats.documents == 0


def test_a_list_of_file_names_as_str_is_refused_not_scanned_as_text(tmp_path):
    (tmp_path / "a.txt").write_text("a b c\n", encoding="utf-8")
    (tmp_path / "b.txt").write_text("a b c\n", encoding="utf-8")
    names = [str(tmp_path / "a.txt"), str(tmp_path / "b.txt")]
    with pytest.raises(ValueError, match="pass pathlib.Path objects"):
        OverlapIndex(TS, n=2).scan(names)
    from pathlib import Path

    counts = OverlapIndex(TS, n=2).scan([Path(p) for p in names])
    assert counts.ngram_counts(TS.key, "q", "input", 2) == {("a", "b"): 2, ("b", "c"): 2}
    # documents that are not file names are read as documents
    assert list(iter_documents(["a.txt is a name", "a b c"])) == ["a.txt is a name", "a b c"]


def test_a_corpus_file_listed_twice_is_refused_not_counted_twice(tmp_path):
    # a folder and a file inside it (or one file twice) used to double every count of that file
    from train_test_overlap.data import corpus_files

    (tmp_path / "shards").mkdir()
    (tmp_path / "shards" / "a.txt").write_text("alpha beta\n", encoding="utf-8")
    (tmp_path / "shards" / "b.txt").write_text("gamma delta\n", encoding="utf-8")
    with pytest.raises(ValueError, match=r"a\.txt is listed twice"):
        corpus_files([tmp_path / "shards", tmp_path / "shards" / "a.txt"])
    with pytest.raises(ValueError, match="listed twice"):
        list(iter_documents([tmp_path / "shards" / "b.txt", tmp_path / "shards" / ".." / "shards" / "b.txt"]))
    assert len(corpus_files([tmp_path / "shards"])) == 2


def test_planted_corpus_takes_a_float_size_and_refuses_bad_sizes_by_name():
    from train_test_overlap.experiments import planted_corpus

    # a size written 3e4 (a float) used to fail inside numpy ("a must be a sequence or an integer")
    ts, truth, docs = planted_corpus(n_instances=5, target_bytes=3e4, random_state=0)
    same = planted_corpus(n_instances=5, target_bytes=30_000, random_state=0)
    assert list(docs) == list(same[2]) and truth == same[1]
    for bad in (float("nan"), float("inf"), -1, True, "3e6"):
        with pytest.raises(ValueError, match="target_bytes"):
            planted_corpus(n_instances=5, target_bytes=bad)
    for bad in (0, 2.0, True):
        with pytest.raises(ValueError, match="n_instances"):
            planted_corpus(n_instances=bad, target_bytes=1000)
    with pytest.raises(ValueError, match="vocab_size"):
        planted_corpus(n_instances=5, target_bytes=1000, vocab_size=0)
