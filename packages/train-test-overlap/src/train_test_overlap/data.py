"""Test sets (instances with an input and references) and streamed training corpora."""

from __future__ import annotations

import gzip
import io
import json
import os
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

__all__ = ["Instance", "TestSet", "iter_documents", "load_helm_scenarios"]


@dataclass(frozen=True)
class Instance:
    """One test example.

    Attributes
    ----------
    id : str
        Unique within its test set (HELM's instance id, e.g. ``"id123"``).
    input : str
        The prompt text.
    references : tuple of str
        The reference answers (a list is converted; a bare string is refused, as it would be read as one
        reference per character by HELM's code).
    """

    id: str
    input: str
    references: Sequence[str] = ()  # stored as a tuple

    def __post_init__(self) -> None:
        if not isinstance(self.id, str) or not self.id:
            raise ValueError(f"Instance.id must be a non-empty str, got {self.id!r}")
        if not isinstance(self.input, str):
            raise TypeError(f"Instance {self.id!r}: input must be str, got {type(self.input).__name__}")
        if isinstance(self.references, str):
            raise TypeError(f"Instance {self.id!r}: references must be a list of str, got a single str "
                            f"({self.references[:30]!r}); wrap it in a list")
        refs = tuple(self.references)
        for ref in refs:
            if not isinstance(ref, str):
                raise TypeError(f"Instance {self.id!r}: every reference must be str, got {type(ref).__name__}")
        object.__setattr__(self, "references", refs)


@dataclass(frozen=True)
class TestSet:
    """A named split of a benchmark.

    Attributes
    ----------
    name : str
        The benchmark's name (for HELM scenarios: the scenario class name).
    split : str
        ``"test"``, ``"valid"``, ...
    instances : tuple of Instance
        Instance ids must be unique within the test set.
    spec : dict, optional
        HELM's ``scenario_spec`` (``class_name`` and ``args``), kept for the HELM export.
    """

    __test__ = False  # not a pytest class

    name: str
    split: str
    instances: Sequence[Instance]  # stored as a tuple
    spec: dict[str, Any] | None = field(default=None, compare=False)

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or not self.name:
            raise ValueError(f"TestSet.name must be a non-empty str, got {self.name!r}")
        instances = tuple(self.instances)
        seen: set[str] = set()
        for inst in instances:
            if not isinstance(inst, Instance):
                raise TypeError(f"test set {self.name!r}: instances must be Instance objects, got {type(inst).__name__}")
            if inst.id in seen:
                raise ValueError(f"test set {self.name!r} split {self.split!r}: instance id {inst.id!r} occurs twice; "
                                 "ids must be unique (HELM would silently merge the two instances)")
            seen.add(inst.id)
        object.__setattr__(self, "instances", instances)

    @property
    def key(self) -> tuple[str, str]:
        """``(name, split)``, unique among the test sets of one index."""
        return (self.name, self.split)

    def helm_key(self) -> dict[str, Any]:
        """HELM's ``light_scenario_key`` of this test set."""
        spec = self.spec if self.spec is not None else {"class_name": self.name, "args": {}}
        return {"scenario_spec": spec, "split": self.split}


def load_helm_scenarios(path: str | os.PathLike[str]) -> list[TestSet]:
    """Read HELM light-scenario JSONL (one scenario per line) into test sets.

    Parameters
    ----------
    path : path-like
        Each line: ``{"scenario_key": {"scenario_spec": {"class_name": ..., "args": {...}}, "split": ...},
        "instances": [{"id": ..., "input": ..., "references": [...]}, ...]}``.

    Returns
    -------
    list of TestSet
        In file order; ``name`` is the class name followed by the sorted args (so that two specs of one
        class stay distinct).

    Raises
    ------
    ValueError
        For a line that is not such a record (the message names the file and line).
    """
    sets = []
    with open(path, encoding="utf-8") as f:
        for lineno, line in enumerate(f, 1):
            if not line.strip():
                continue
            try:
                record = json.loads(line)
                key = record["scenario_key"]
                spec = key["scenario_spec"]
                args = spec.get("args", {}) or {}
                name = spec["class_name"] + "".join(f",{k}={args[k]}" for k in sorted(args))
                instances = [Instance(d["id"], d["input"], d["references"]) for d in record["instances"]]
                sets.append(TestSet(name, key["split"], instances, spec={"class_name": spec["class_name"], "args": args}))
            except (KeyError, TypeError, json.JSONDecodeError) as exc:
                raise ValueError(f"{path}:{lineno}: not a HELM light scenario record ({type(exc).__name__}: {exc})") from exc
    return sets


_JSONL = (".jsonl", ".json", ".ndjson")
_TEXT = (".txt", ".text")


def _open_text(path: Path, errors: str) -> io.TextIOBase:
    suffixes = path.suffixes
    if suffixes and suffixes[-1] == ".gz":
        return gzip.open(path, "rt", encoding="utf-8", errors=errors)
    if suffixes and suffixes[-1] == ".zst":
        try:
            import zstandard
        except ImportError as exc:  # pragma: no cover - depends on the install
            raise ImportError(f"reading {path} needs zstandard: pip install 'train-test-overlap[zstd]'") from exc
        raw = open(path, "rb")  # noqa: SIM115 - closed with the wrapper
        return io.TextIOWrapper(zstandard.ZstdDecompressor().stream_reader(raw, closefd=True), encoding="utf-8", errors=errors)
    return open(path, encoding="utf-8", errors=errors)  # noqa: SIM115


def _kind(path: Path) -> str:
    suffixes = [s for s in path.suffixes if s not in (".gz", ".zst")]
    last = suffixes[-1] if suffixes else ""
    if last in _JSONL:
        return "jsonl"
    if last in _TEXT or last == "":
        return "text"
    if last == ".parquet":
        return "parquet"
    raise ValueError(f"{path}: unknown corpus format {last!r}; accepted: .jsonl/.json/.ndjson, .txt/.text "
                     "(each optionally .gz or .zst), .parquet")


def _iter_file(path: Path, text_field: str, errors: str, lines: bool) -> Iterator[str]:
    kind = _kind(path)
    if kind == "parquet":
        try:
            import pyarrow.parquet as pq
        except ImportError as exc:  # pragma: no cover - depends on the install
            raise ImportError(f"reading {path} needs pyarrow: pip install 'train-test-overlap[parquet]'") from exc
        import pyarrow as pa

        parquet = pq.ParquetFile(path)
        schema = parquet.schema_arrow
        if text_field not in schema.names:
            raise ValueError(f"{path}: no column {text_field!r} (columns: {schema.names}); pass text_field=")
        kind_of = schema.field(text_field).type
        values_of = kind_of.value_type if pa.types.is_dictionary(kind_of) else kind_of  # pandas categoricals
        if not (pa.types.is_string(values_of) or pa.types.is_large_string(values_of)
                or getattr(pa.types, "is_string_view", lambda _: False)(values_of)):
            raise ValueError(f"{path}: column {text_field!r} is {kind_of}, not a string column")
        for batch in parquet.iter_batches(columns=[text_field]):
            yield from (t if t is not None else "" for t in batch.column(0).to_pylist())  # null: empty document
        return
    try:
        with _open_text(path, errors) as f:
            if kind == "text":
                if lines:
                    for line in f:
                        yield line.rstrip("\n")
                else:
                    yield f.read()
                return
            for lineno, line in enumerate(f, 1):
                if not line.strip():
                    continue
                try:
                    record = json.loads(line)
                except json.JSONDecodeError as exc:
                    raise ValueError(f"{path}:{lineno}: not JSON ({exc.msg})") from exc
                if not isinstance(record, dict) or text_field not in record:
                    raise ValueError(f"{path}:{lineno}: record has no {text_field!r} field "
                                     f"(fields: {sorted(record) if isinstance(record, dict) else type(record).__name__}); "
                                     "pass text_field=")
                text = record[text_field]
                if not isinstance(text, str):
                    raise ValueError(f"{path}:{lineno}: field {text_field!r} is {type(text).__name__}, not str")
                yield text
    except UnicodeDecodeError as exc:
        raise ValueError(f"{path}: bytes that are not UTF-8 at offset {exc.start} ({exc.reason}); "
                         "pass errors='replace' to read them as U+FFFD") from exc


def corpus_files(source: str | os.PathLike[str] | Sequence[str | os.PathLike[str]]) -> list[Path]:
    """The files of a corpus: a file, the files under a folder (sorted, recursive), or a list of either.

    Parameters
    ----------
    source : path-like or sequence of path-like
        Files or folders.

    Returns
    -------
    list of Path
        Sorted within each folder; hidden files (names starting with ``.``) and, as Spark, Hadoop and
        pyarrow do, names starting with ``_`` (``_SUCCESS``, ``_metadata``) are skipped inside folders.

    Raises
    ------
    FileNotFoundError
        For a path that does not exist.
    ValueError
        For a folder without any (non-hidden) file, or a file reached twice (e.g. a folder and a file in it).
    """
    items = [source] if isinstance(source, (str, os.PathLike)) else list(source)
    files: list[Path] = []
    for item in items:
        path = Path(item)
        if path.is_dir():
            found = sorted(p for p in path.rglob("*") if p.is_file() and not p.name.startswith((".", "_")))
            if not found:
                raise ValueError(f"no corpus files under {path} (hidden and _-prefixed files are skipped); an empty corpus "
                                 "would report every instance as clean")
            files.extend(found)
        elif path.is_file():
            files.append(path)
        else:
            raise FileNotFoundError(f"corpus path {path} does not exist")
    seen: dict[Path, Path] = {}
    for f in files:
        real = f.resolve()
        if real in seen:
            raise ValueError(f"corpus file {f} is listed twice (also as {seen[real]}); it would be counted twice")
        seen[real] = f
    return files


def iter_documents(source: str | os.PathLike[str] | Sequence[Any] | Iterable[str], *, text_field: str = "text",
                   errors: str = "strict", lines: bool = True) -> Iterator[str]:
    """Stream the documents of a corpus, one string at a time.

    Parameters
    ----------
    source : path-like, list of Path, or iterable of str
        A file or folder of shards (a ``str`` is always a path), a list of ``pathlib.Path`` files/folders,
        or any other iterable of the documents themselves (a list of str that all name existing files is
        refused: pass them as ``Path`` objects). Files:
        JSONL (``.jsonl``, ``.json``, ``.ndjson``: one JSON object per line, the text in ``text_field``),
        text (``.txt`` or no suffix), either compressed with ``.gz`` or ``.zst``, and Parquet (read in
        record batches, one string column, dictionary-encoded or not; a null value is an empty document).
    text_field : str, default "text"
        JSONL field / Parquet column that holds the document.
    errors : {"strict", "replace"}, default "strict"
        Undecodable bytes raise (naming the file) or are read as U+FFFD.
    lines : bool, default True
        Text files: one document per line (HELM's ``raw`` format, newline stripped) or the whole file as one.

    Yields
    ------
    str
        One document.

    Raises
    ------
    ValueError
        A JSONL record without ``text_field`` or not JSON (file and line named), a Parquet file without a
        string column ``text_field``, undecodable bytes under ``errors="strict"``, an unknown suffix.
    """
    if errors not in ("strict", "replace"):
        raise ValueError(f"errors must be 'strict' or 'replace', got {errors!r}")
    if isinstance(source, (str, os.PathLike)) or (isinstance(source, (list, tuple)) and source
                                                  and all(isinstance(s, os.PathLike) for s in source)):
        for path in corpus_files(source):
            yield from _iter_file(path, text_field, errors, lines)
        return
    if isinstance(source, (list, tuple)) and source and all(isinstance(s, str) and os.path.isfile(s) for s in source):
        raise ValueError(f"the corpus is a list of {len(source)} str that all name existing files (e.g. {source[0]!r}); "
                         "a list of str is read as the documents themselves: pass pathlib.Path objects to read the files")
    for i, doc in enumerate(source):
        if not isinstance(doc, str):
            raise TypeError(f"document {i} is {type(doc).__name__}, not str")
        yield doc
