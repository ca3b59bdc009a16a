"""Parquet corpora: read in record batches, the same documents and counts as JSONL, clear errors."""

import json

import pytest

from train_test_overlap import Instance, OverlapIndex, TestSet, iter_documents

pa = pytest.importorskip("pyarrow")
pq = pytest.importorskip("pyarrow.parquet")

DOCS = ["Alpha beta gamma delta.", "", "café — beta gamma delta", "line with\nnewline", "x y beta gamma delta z"]


def test_parquet_reads_the_same_documents_and_counts_as_jsonl(tmp_path):
    table = pa.table({"id": list(range(len(DOCS))), "content": DOCS})
    pq.write_table(table, tmp_path / "c.parquet", row_group_size=2)  # several row groups / batches
    (tmp_path / "c.jsonl").write_text("".join(json.dumps({"content": d}) + "\n" for d in DOCS), encoding="utf-8")
    assert list(iter_documents(tmp_path / "c.parquet", text_field="content")) == DOCS
    ts = TestSet("t", "test", [Instance("q", "beta gamma delta", []), Instance("r", "omega psi chi", [])])
    index = OverlapIndex(ts, n=2)
    by_parquet = index.scan(tmp_path / "c.parquet", text_field="content")
    assert by_parquet == index.scan(tmp_path / "c.jsonl", text_field="content")
    assert by_parquet.ngram_counts(ts, "q", "input", 2) == {("beta", "gamma"): 3, ("gamma", "delta"): 3}
    assert by_parquet.stats.documents == len(DOCS)


def test_parquet_large_string_and_null_values(tmp_path):
    table = pa.table({"text": pa.array(["a b c", None, "b c d"], type=pa.large_string())})
    pq.write_table(table, tmp_path / "c.parquet")
    assert list(iter_documents(tmp_path / "c.parquet")) == ["a b c", "", "b c d"]


def test_parquet_without_the_column_or_with_a_non_string_column_is_refused(tmp_path):
    pq.write_table(pa.table({"body": ["a b"], "n": [3]}), tmp_path / "c.parquet")
    with pytest.raises(ValueError, match=r"c\.parquet: no column 'text' \(columns: \['body', 'n'\]\)"):
        list(iter_documents(tmp_path / "c.parquet"))
    with pytest.raises(ValueError, match="column 'n' is int64, not a string column"):
        list(iter_documents(tmp_path / "c.parquet", text_field="n"))


def test_a_folder_of_parquet_shards_scans_like_the_documents(tmp_path):
    for k in range(3):
        pq.write_table(pa.table({"text": DOCS[k::3]}), tmp_path / f"shard{k}.parquet")
    ts = TestSet("t", "test", [Instance("q", "beta gamma delta", [])])
    index = OverlapIndex(ts, n=2)
    assert index.scan(tmp_path) == index.scan(DOCS)


def test_parquet_dictionary_encoded_string_column_is_read(tmp_path):
    # pandas categorical columns are stored as dictionary<string>: the same documents, not a refusal
    docs = ["a b c", None, "b c d", "a b c"]
    pq.write_table(pa.table({"text": pa.array(docs).dictionary_encode()}), tmp_path / "c.parquet", row_group_size=2)
    assert list(iter_documents(tmp_path / "c.parquet")) == ["a b c", "", "b c d", "a b c"]
    pq.write_table(pa.table({"text": pa.array([1, 2]).dictionary_encode()}), tmp_path / "d.parquet")
    with pytest.raises(ValueError, match="not a string column"):
        list(iter_documents(tmp_path / "d.parquet"))


def test_a_spark_or_dask_parquet_folder_skips_its_underscore_metadata_files(tmp_path):
    # _SUCCESS and _common_metadata / _metadata sit beside the shards; the metadata used to be read as a
    # binary text file (an error, or junk documents under errors="replace")
    table = pa.table({"text": ["a b c", "d e f"]})
    pq.write_table(table, tmp_path / "part-0.parquet")
    pq.write_metadata(table.schema, tmp_path / "_common_metadata")
    (tmp_path / "_SUCCESS").write_bytes(b"")
    assert list(iter_documents(tmp_path)) == ["a b c", "d e f"]
    assert list(iter_documents(tmp_path, errors="replace")) == ["a b c", "d e f"]
