"""The n-gram index of test sets and the single streaming pass over a training corpus.

The index maps every n-gram of every instance part (``input``, ``references``, ``intersect``) to the
parts that contain it, as HELM's ``create_ngram_index`` does. A scan counts, for each indexed n-gram,
how many times it occurs in the corpus; HELM's per-part overlap sets and per-part n-gram counts are
views of these counts (every part that contains an n-gram gets that n-gram's corpus count).

Engine: tokens are mapped to integer ids of the test-set vocabulary (a corpus token outside it maps to
0 and can be part of no indexed n-gram); a batch of documents becomes one id array with a 0 between
documents; every window of ``n`` ids gets a 64-bit polynomial hash of fixed per-id values (splitmix64 of
the id) computed with numpy; windows whose hash is an indexed hash are compared with the indexed n-grams
id by id (so a hash collision never counts). Ids and hashes depend only on the test sets, never on the
process (Python's salted ``str`` hash is not used), so a pickled index scans in another process as it
is, without rebuilding its tables. Memory is the index plus one batch of documents (``batch_tokens`` ids).
"""

from __future__ import annotations

import hashlib
import numbers
import os
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from itertools import repeat
from typing import Any

import numpy as np
from icml25_shared.validation import Interval, check_param

from train_test_overlap.data import TestSet, corpus_files, iter_documents
from train_test_overlap.tokenizers import Tokenizer, corpus_tokenize, get_tokenizer

__all__ = ["PARTITION_BYTES", "PARTS", "CorpusStats", "OverlapCounts", "OverlapIndex", "Scanner", "ShardCounts", "file_partitions"]

PARTS = ("input", "references", "intersect")
"""Instance parts that can be indexed; ``intersect`` is HELM's join of the input's end with each reference's start."""

_MULT = np.uint64(0x9E3779B97F4A7C15)
_BITS = 22  # prefilter bitmap: 4 Mi booleans per n


def _token_hashes(size: int) -> np.ndarray:
    """Fixed 64-bit value of every token id ``0 .. size - 1`` (splitmix64 of ``id + 1``; id 0 gives 0).

    They depend on the id only, so every process derives the same window hashes.
    """
    z = (np.arange(size, dtype=np.uint64) + np.uint64(1)) * _MULT
    z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
    z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    z ^= z >> np.uint64(31)
    if size:
        z[0] = 0
    return z


def _window_hashes(ids: np.ndarray, n: int) -> np.ndarray:
    """64-bit polynomial hash of every length-``n`` window of a uint64 array (wrap-around arithmetic)."""
    m = ids.size - n + 1
    h = ids[:m].copy()
    for k in range(1, n):
        h *= _MULT
        h += ids[k:k + m]
    return h


def check_n(n: Any, owner: str = "OverlapIndex") -> tuple[int, ...]:
    """Validate ``n`` (an int or a sequence of ints >= 1) and return a sorted tuple without duplicates.

    A value of another type (a float, a bool, a string) is a TypeError; an int below 1 or an empty list a
    ValueError; the message names ``owner`` and ``n``.
    """
    what = "an int >= 1 or a non-empty list of them"
    check_param("n", n, [Interval(int, None, None), list, tuple], owner=owner)
    values = [n] if isinstance(n, numbers.Integral) else list(n)
    for v in values:
        check_param("n", v, [Interval(int, None, None)], owner=owner)
    if not values or any(v < 1 for v in values):
        raise ValueError(f"{owner}: n must be {what}; got {n!r}")
    return tuple(sorted({int(v) for v in values}))


@dataclass(frozen=True)
class CorpusStats:
    """What a scan read.

    Attributes
    ----------
    documents : int
        Documents read (empty ones included).
    tokens : int
        Tokens under the index's tokenizer (HELM's empty-string edge tokens included).
    bytes : int
        UTF-8 bytes of the documents' text.
    """

    documents: int = 0
    tokens: int = 0
    bytes: int = 0

    def __add__(self, other: CorpusStats) -> CorpusStats:
        return CorpusStats(self.documents + other.documents, self.tokens + other.tokens, self.bytes + other.bytes)


@dataclass
class ShardCounts:
    """Partial result of one shard: corpus count of every indexed n-gram, and what was read.

    Shards are merged with ``+`` (counts add as numpy arrays), in any order: the merged result equals a
    single pass.

    Attributes
    ----------
    counts : dict of int to numpy.ndarray
        ``n -> int64 array``: occurrences of each indexed n-gram, in the order of
        :meth:`OverlapIndex.ngram_ids` ``(n)``. An empty dict is the empty accumulator.
    stats : CorpusStats
        Documents, tokens and bytes read.
    index_key : str or None
        Fingerprint of the index that produced the counts (:attr:`OverlapIndex.key`); counts are
        positions in that index's n-gram table, so shards of different indexes are refused. None for an
        empty accumulator.
    """

    counts: dict[int, np.ndarray]
    stats: CorpusStats = field(default_factory=CorpusStats)
    index_key: str | None = None

    def __add__(self, other: ShardCounts) -> ShardCounts:
        if self.index_key is not None and other.index_key is not None and self.index_key != other.index_key:
            raise ValueError("these shard counts come from another OverlapIndex (other test sets, order, n, "
                             "tokenizer or parts): their token ids do not match; scan every shard with one index "
                             "(or copies of it)")
        merged = dict(self.counts)
        for n, c in other.counts.items():
            mine = merged.get(n)
            if mine is None:
                merged[n] = c
            elif mine.shape != c.shape:
                raise ValueError(f"shard counts for n={n} have {mine.shape[0]} and {c.shape[0]} n-grams: they come "
                                 "from different indexes")
            else:
                merged[n] = mine + c
        return ShardCounts(merged, self.stats + other.stats, self.index_key or other.index_key)


class _Engine:
    """What a scan needs, and nothing else: vocabulary, n-gram table as arrays, sorted hash keys, prefilter.

    Every array depends on the test sets only (token ids in order of first appearance, fixed per-id
    hashes), so the pickled engine is valid in any process; only the prefilter bitmap, a function of the
    keys, is left out of the pickle and redrawn from them (a few milliseconds).
    """

    def __init__(self, *, n: tuple[int, ...], vocab: dict[str, int], tokenizer: Tokenizer, key: str,
                 grams: dict[int, np.ndarray], keys: dict[int, np.ndarray], rows: dict[int, np.ndarray],
                 token_hash: np.ndarray) -> None:
        self.n, self.vocab, self.tokenizer, self.key = n, vocab, tokenizer, key
        # grams[n]: indexed n-grams (ids) in the index's table order; keys[n]: their window hashes, sorted;
        # rows[n][j]: the row of grams[n] whose hash is keys[n][j]
        self.grams, self.keys, self.rows, self.token_hash = grams, keys, rows, token_hash
        self._derive()

    @classmethod
    def build(cls, index: OverlapIndex) -> _Engine:
        token_hash = _token_hashes(len(index._vocab) + 1)
        grams, keys, rows = {}, {}, {}
        id_type = np.min_scalar_type(len(index._vocab))  # uint16 for a vocabulary under 65536 tokens: half the bytes to ship
        for n, t in index._table.items():
            g = np.array(list(t), dtype=id_type).reshape(len(t), n)
            k = np.zeros(len(t), dtype=np.uint64)
            for j in range(n):
                k *= _MULT
                k += token_hash[g[:, j]]
            order = np.argsort(k, kind="stable")
            grams[n], keys[n], rows[n] = g, k[order], order.astype(np.int32 if len(t) < 2**31 else np.int64)
        return cls(n=index.n, vocab=index._vocab, tokenizer=index.tokenizer, key=index.key, grams=grams, keys=keys,
                   rows=rows, token_hash=token_hash)

    def _derive(self) -> None:
        self.bits: dict[int, np.ndarray] = {}
        self.max_dup: dict[int, int] = {}
        for n, k in self.keys.items():
            bits = np.zeros(1 << _BITS, dtype=bool)
            bits[k >> np.uint64(64 - _BITS)] = True
            self.bits[n] = bits
            # most keys are unique; a key shared by several n-grams (a 64-bit collision) is checked against each
            self.max_dup[n] = int(np.unique(k, return_counts=True)[1].max()) if k.size else 0

    def __getstate__(self) -> dict[str, Any]:
        state = self.__dict__.copy()
        del state["bits"], state["max_dup"]
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self._derive()

    def empty(self) -> dict[int, np.ndarray]:
        return {n: np.zeros(len(self.keys[n]), dtype=np.int64) for n in self.n}

    def count_batch(self, id_list: list[int], counts: dict[int, np.ndarray]) -> None:
        ids = np.array(id_list, dtype=np.int64)
        h1 = self.token_hash[ids]
        shift = np.uint64(64 - _BITS)
        for n in self.n:
            if ids.size < n:
                continue
            h = _window_hashes(h1, n)
            cand = np.flatnonzero(self.bits[n][h >> shift])
            if cand.size == 0:
                continue
            keys, grams, rows = self.keys[n], self.grams[n], self.rows[n]
            hc = h[cand]
            pos = np.searchsorted(keys, hc)
            windows = ids[cand[:, None] + np.arange(n)]
            matched = []
            active = np.arange(cand.size)
            for step in range(self.max_dup[n]):
                p = pos[active] + step
                inside = p < keys.size
                active, p = active[inside], p[inside]
                same = keys[p] == hc[active]
                active, p = active[same], p[same]
                if active.size == 0:
                    break
                r = rows[p]
                exact = (windows[active] == grams[r]).all(axis=1)  # a hash collision never counts
                matched.append(r[exact])
                active = active[~exact]
            if matched:
                hits = np.concatenate(matched)
                if hits.size:
                    counts[n] += np.bincount(hits, minlength=keys.size)

    def scan_documents(self, documents: Iterable[str], batch_tokens: int) -> ShardCounts:
        scanner = Scanner(self, batch_tokens)
        for doc in documents:
            scanner.add(doc)
        return scanner.result()


class OverlapIndex:
    """n-gram index of test sets, scanned against a training corpus in one streaming pass.

    Parameters
    ----------
    test_sets : TestSet or sequence of TestSet
        The benchmarks; ``(name, split)`` must be unique.
    n : int or sequence of int, default (5, 9, 13)
        n-gram lengths (HELM's default).
    tokenizer : str, Tokenizer or callable, default "helm-default"
        See :func:`~train_test_overlap.get_tokenizer`. The same tokenizer reads the corpus.
    parts : sequence of str, default ("input", "references", "intersect")
        Which instance parts to index. ``intersect`` is HELM's join: the last ``n - 1`` input tokens
        followed by the first ``n - 1`` tokens of each reference (for ``n = 1`` HELM's slice keeps the
        whole input, and this package does the same).

    Attributes
    ----------
    test_sets : tuple of TestSet
    n : tuple of int
    tokenizer : Tokenizer
    parts : tuple of str
    num_ngrams : dict of int to int
        Distinct indexed n-grams per n.
    key : str
        Fingerprint of the configuration (tokenizer name, n, parts, test sets in order): equal for copies
        of the index in other processes; shard counts are only merged under one key.

    Examples
    --------
    >>> from train_test_overlap import Instance, OverlapIndex, TestSet
    >>> ts = TestSet("toy", "test", [Instance("q1", "a b c d e", ["f"])])
    >>> counts = OverlapIndex(ts, n=3).scan(["x a b c y", "a b c"])
    >>> counts.ngram_counts(ts.key, "q1", "input", 3)
    {('a', 'b', 'c'): 2}
    """

    def __init__(self, test_sets: TestSet | Sequence[TestSet], *, n: int | Sequence[int] = (5, 9, 13),
                 tokenizer: str | Tokenizer | Any = "helm-default", parts: Sequence[str] = PARTS) -> None:
        sets = (test_sets,) if isinstance(test_sets, TestSet) else tuple(test_sets)
        if not sets:
            raise ValueError("test_sets is empty; pass at least one TestSet")
        keys: set[tuple[str, str]] = set()
        for ts in sets:
            if not isinstance(ts, TestSet):
                raise TypeError(f"test_sets must hold TestSet objects, got {type(ts).__name__}")
            if ts.key in keys:
                raise ValueError(f"two test sets share name and split {ts.key}; make them unique")
            keys.add(ts.key)
        parts = tuple(parts) if not isinstance(parts, str) else (parts,)
        if not parts or any(p not in PARTS for p in parts) or len(set(parts)) != len(parts):
            raise ValueError(f"parts must be distinct names among {PARTS}, got {parts!r}")
        self.test_sets = sets
        self.n = check_n(n)
        self.tokenizer = get_tokenizer(tokenizer)
        self.parts = parts
        self._build()
        digest = hashlib.sha256(repr((self.tokenizer.name, self.n, self.parts)).encode())
        for ts in sets:
            digest.update(repr((ts.name, ts.split, [(i.id, i.input, i.references) for i in ts.instances])).encode(
                "utf-8", "surrogatepass"))
        self.key = digest.hexdigest()[:32]
        self._engine = _Engine.build(self)

    # -- construction -------------------------------------------------------------------------------------
    def _build(self) -> None:
        vocab: dict[str, int] = {}
        self._entries: list[tuple[int, int, str]] = []  # (test set, instance, part)
        self._entry_of: dict[tuple[int, int, str], int] = {}
        table: dict[int, dict[tuple[int, ...], list[int]]] = {n: {} for n in self.n}
        tok = self.tokenizer.tokenize

        def ids_of(tokens: list[str]) -> list[int]:
            return [vocab.setdefault(t, len(vocab) + 1) for t in tokens]

        def add(n: int, ids: list[int], entry: int) -> None:
            t = table[n]
            for i in range(len(ids) - n + 1):
                gram = tuple(ids[i:i + n])
                holders = t.get(gram)
                if holders is None:
                    t[gram] = [entry]
                elif holders[-1] != entry:
                    holders.append(entry)

        for s, ts in enumerate(self.test_sets):
            for i, inst in enumerate(ts.instances):
                for part in self.parts:
                    self._entry_of[(s, i, part)] = len(self._entries)
                    self._entries.append((s, i, part))
                input_ids = ids_of(tok(inst.input))
                ref_ids = [ids_of(tok(r)) for r in inst.references]
                for n in self.n:
                    if "input" in self.parts:
                        add(n, input_ids, self._entry_of[(s, i, "input")])
                    if "references" in self.parts:
                        for r in ref_ids:
                            add(n, r, self._entry_of[(s, i, "references")])
                    if "intersect" in self.parts:
                        end = input_ids[-(n - 1):]  # HELM's slice: the whole input when n == 1
                        for r in ref_ids:
                            add(n, end + r[:n - 1], self._entry_of[(s, i, "intersect")])
        self._vocab = vocab
        self._table = table
        self.num_ngrams = {n: len(t) for n, t in table.items()}
        self._inverse: list[str] | None = None

    def ngram_ids(self, n: int) -> np.ndarray:
        """The indexed n-grams of length ``n`` as rows of token ids, in the order of :attr:`ShardCounts.counts`.

        Parameters
        ----------
        n : int
            One of the index's n.

        Returns
        -------
        numpy.ndarray
            ``(num_ngrams[n], n)`` read-only array of unsigned ints (the smallest type that holds the
            vocabulary's ids; a view of the scan table, so it cannot be changed); :meth:`tokens_of` turns
            a row into tokens.
        """
        if n not in self.n:
            raise ValueError(f"n={n!r} was not indexed; indexed n: {self.n}")
        view = self._engine.grams[n].view()
        view.flags.writeable = False
        return view

    # -- scanning -----------------------------------------------------------------------------------------
    def scan_documents(self, documents: Iterable[str], *, batch_tokens: int = 1 << 18,
                       progress: bool = False) -> ShardCounts:
        """Count the indexed n-grams in documents: the per-shard function.

        Use it as the body of a Spark ``mapPartitions`` (or any map step) and merge the shards' results
        with ``+``; :meth:`finish` turns the merged result into :class:`OverlapCounts`.

        Parameters
        ----------
        documents : iterable of str
            The shard's documents.
        batch_tokens : int, default 262144
            Token ids processed per numpy batch (memory: about 40 bytes per token).
        progress : bool, default False
            Show a tqdm bar over documents.

        Returns
        -------
        ShardCounts
            Counts and corpus statistics of this shard.
        """
        if progress:
            from tqdm.auto import tqdm

            documents = tqdm(documents, desc="scan", unit="doc")
        scanner = self.scanner(batch_tokens=batch_tokens)
        for doc in documents:
            scanner.add(doc)
        return scanner.result()

    def scanner(self, *, batch_tokens: int = 1 << 18) -> Scanner:
        """A push-style consumer of documents: ``add(doc)`` for each, then ``result()``.

        It lets several indexes share one read of a corpus.

        Parameters
        ----------
        batch_tokens : int, default 262144
            Token ids per numpy batch.

        Returns
        -------
        Scanner
        """
        return Scanner(self, batch_tokens)

    def finish(self, shard: ShardCounts) -> OverlapCounts:
        """Wrap merged shard counts as :class:`OverlapCounts` of this index.

        Parameters
        ----------
        shard : ShardCounts
            The sum of the shards' results.

        Returns
        -------
        OverlapCounts

        Raises
        ------
        ValueError
            For counts produced by another index (their token ids would be read as this index's), and
            for counts that are not non-negative integers.
        """
        if shard.index_key is not None and shard.index_key != self.key:
            raise ValueError("these shard counts come from another OverlapIndex (other test sets, order, n, "
                             "tokenizer or parts): their token ids do not match this index's")
        counts: dict[int, dict[tuple[int, ...], int]] = {}
        for n in self.n:
            c = shard.counts.get(n)
            grams = self._engine.grams[n]
            if c is None:
                counts[n] = {}
                continue
            if c.shape != (grams.shape[0],):
                raise ValueError(f"shard counts for n={n} have shape {c.shape}, this index has {grams.shape[0]} "
                                 "n-grams: they come from another index")
            if not (isinstance(c, np.ndarray) and c.dtype.kind in "iu") or (c.size and c.min() < 0):
                raise ValueError(f"shard counts for n={n} must be non-negative integers (an int array), got "
                                 f"{getattr(c, 'dtype', type(c).__name__)} with minimum {np.min(c) if len(c) else None}")
            hit = np.flatnonzero(c)
            counts[n] = dict(zip(map(tuple, grams[hit].tolist()), c[hit].tolist(), strict=True))
        return OverlapCounts(self, counts, shard.stats)

    def scan(self, corpus: Any, *, backend: str = "local", text_field: str = "text", errors: str = "strict",
             lines: bool = True, batch_tokens: int = 1 << 18, progress: bool = False,
             scheduler: Any = None, npartitions: int | None = None) -> OverlapCounts:
        """Read the corpus once and count every indexed n-gram.

        Parameters
        ----------
        corpus : path-like, list of Path, or iterable of str
            See :func:`~train_test_overlap.iter_documents`.
        backend : {"local", "dask"}, default "local"
            ``"dask"`` maps shards (groups of files, or ``npartitions`` slices of in-memory documents) with
            ``dask.bag`` and sums the partial counts; pass ``scheduler`` (``"sync"``, ``"threads"``,
            ``"processes"`` or a ``distributed.Client``).
        text_field, errors, lines
            Passed to :func:`~train_test_overlap.iter_documents`.
        batch_tokens : int, default 262144
            Token ids per numpy batch.
        progress : bool, default False
            tqdm bar over documents (local backend).
        scheduler : optional
            Dask scheduler (dask backend only).
        npartitions : int, optional
            Dask partitions: for in-memory documents, default one per 1000 documents; for files, groups of
            files balanced by size (:func:`file_partitions`), default one per ``PARTITION_BYTES`` (32 MiB)
            on disk, at most one per file.

        Returns
        -------
        OverlapCounts
            The same counts for every backend, shard order and partitioning.
        """
        if isinstance(batch_tokens, bool) or not isinstance(batch_tokens, numbers.Integral) or batch_tokens < 1:
            raise ValueError(f"batch_tokens must be a positive int, got {batch_tokens!r}")
        if backend == "local":
            docs = iter_documents(corpus, text_field=text_field, errors=errors, lines=lines)
            return self.finish(self.scan_documents(docs, batch_tokens=batch_tokens, progress=progress))
        if backend != "dask":
            raise ValueError(f"backend must be 'local' or 'dask', got {backend!r}")
        _check_npartitions(npartitions)
        try:
            import dask.bag as db
        except ImportError as exc:  # pragma: no cover - depends on the install
            raise ImportError("backend='dask' needs dask: pip install 'train-test-overlap[dask]'") from exc
        from dask import delayed

        opts = {"text_field": text_field, "errors": errors, "lines": lines}
        # One graph key for the scan tables (vocabulary, n-gram arrays, hash keys; not the test sets):
        # each worker receives and unpickles them once, as they are, not once per shard.
        engine = delayed(self._engine, name=f"overlap-engine-{self.key}", traverse=False)
        if isinstance(corpus, (str, os.PathLike)) or (isinstance(corpus, (list, tuple)) and corpus
                                                      and all(isinstance(c, os.PathLike) for c in corpus)):
            groups = file_partitions(corpus_files(corpus), npartitions)
            bag = db.from_sequence(groups, npartitions=len(groups))
            parts = bag.map_partitions(_scan_files, engine, opts, batch_tokens)
        else:
            docs = list(iter_documents(corpus))
            bag = db.from_sequence(docs, npartitions=npartitions or max(1, len(docs) // 1000))
            parts = bag.map_partitions(_scan_docs, engine, batch_tokens)
        shards = parts.compute(scheduler=scheduler) if scheduler is not None else parts.compute()
        total = ShardCounts(self._engine.empty(), index_key=self.key)
        for shard in shards:
            total = total + shard
        return self.finish(total)

    # -- helpers used by OverlapCounts and metrics --------------------------------------------------------
    def token_ids(self, tokens: list[str]) -> list[int]:
        """Ids of tokens in the index vocabulary (0 for a token the test sets never contain)."""
        get = self._vocab.get
        return [get(t, 0) for t in tokens]

    def tokens_of(self, gram: tuple[int, ...]) -> tuple[str, ...]:
        """The tokens of an n-gram of ids."""
        if self._inverse is None:
            inverse = [""] * (len(self._vocab) + 1)
            for t, i in self._vocab.items():
                inverse[i] = t
            self._inverse = inverse
        return tuple(self._inverse[i] for i in gram)

    def set_index(self, key: tuple[str, str] | TestSet) -> int:
        """Position of a test set given its ``(name, split)`` key or the object."""
        wanted = key.key if isinstance(key, TestSet) else tuple(key)
        for s, ts in enumerate(self.test_sets):
            if ts.key == wanted:
                return s
        raise KeyError(f"no test set {key}; known: {[ts.key for ts in self.test_sets]}")

    def entry(self, s: int, i: int, part: str) -> int:
        """Entry id of part ``part`` of instance ``i`` of test set ``s``."""
        try:
            return self._entry_of[(s, i, part)]
        except KeyError:
            raise ValueError(f"part {part!r} is not indexed; indexed parts: {self.parts}") from None


class Scanner:
    """Accumulates the counts of one index over documents pushed one at a time.

    Parameters
    ----------
    index : OverlapIndex
    batch_tokens : int
        Token ids per numpy batch.
    """

    def __init__(self, index: OverlapIndex | _Engine, batch_tokens: int = 1 << 18) -> None:
        engine = index if isinstance(index, _Engine) else index._engine
        self.index = index
        self.batch_tokens = batch_tokens
        self._engine = engine
        self._counts = engine.empty()
        self._ids: list[int] = []
        self._get = engine.vocab.get
        self._tok = corpus_tokenize(engine.tokenizer)
        self._docs = self._tokens = self._bytes = 0

    def add(self, doc: str) -> None:
        """Count one document."""
        if not isinstance(doc, str):
            raise TypeError(f"document {self._docs} is {type(doc).__name__}, not str")
        tokens = self._tok(doc)
        self._docs += 1
        self._tokens += len(tokens)
        self._bytes += len(doc.encode("utf-8", "surrogatepass"))
        self._ids.extend(map(self._get, tokens, repeat(0)))
        self._ids.append(0)  # document boundary: id 0 is in no indexed n-gram
        if len(self._ids) >= self.batch_tokens:
            self._flush()

    def _flush(self) -> None:
        if self._ids:
            self._engine.count_batch(self._ids, self._counts)
            self._ids = []

    def result(self) -> ShardCounts:
        """Flush the last batch and return the shard's counts so far.

        The result is a copy: documents added later do not change it.
        """
        self._flush()
        return ShardCounts({n: c.copy() for n, c in self._counts.items()},
                           CorpusStats(self._docs, self._tokens, self._bytes), self._engine.key)


PARTITION_BYTES = 32 * 2**20
"""Default bytes (on disk) per dask partition of a file corpus: small files are grouped, so that a task
costs far more than its scheduling."""


def _check_npartitions(npartitions: int | None) -> None:
    if npartitions is not None and (isinstance(npartitions, bool) or not isinstance(npartitions, numbers.Integral)
                                    or npartitions < 1):
        raise ValueError(f"npartitions must be a positive int or None, got {npartitions!r}")


def file_partitions(files: Sequence[str | os.PathLike[str]], npartitions: int | None = None) -> list[list[str]]:
    """Group corpus files into balanced partitions for a distributed scan.

    Files go, largest first, to the partition with the fewest bytes so far (ties: the lowest partition),
    so the grouping depends only on the files and their sizes.

    Parameters
    ----------
    files : sequence of path-like
    npartitions : int >= 1, optional
        Number of partitions, at most one per file; default ``ceil(total bytes / PARTITION_BYTES)``.

    Returns
    -------
    list of list of str
        Non-empty groups of file paths, each in the order the files were given (no group for no files).

    Raises
    ------
    ValueError
        For ``npartitions`` that is not a positive int, or a file listed twice (it would be scanned twice).

    Examples
    --------
    >>> import os, tempfile
    >>> d = tempfile.mkdtemp()
    >>> for name, size in [("a", 30), ("b", 10), ("c", 20)]:
    ...     with open(os.path.join(d, name), "w") as f:
    ...         _ = f.write("x" * size)
    >>> [[os.path.basename(f) for f in g] for g in file_partitions(
    ...     [os.path.join(d, n) for n in "abc"], npartitions=2)]
    [['a'], ['b', 'c']]
    """
    _check_npartitions(npartitions)
    paths = [os.fspath(f) for f in files]
    seen: dict[str, str] = {}
    for f in paths:
        real = os.path.realpath(f)
        if real in seen:
            raise ValueError(f"corpus file {f} is listed twice (also as {seen[real]}); it would be scanned twice")
        seen[real] = f
    if not paths:
        return []
    sizes = [os.path.getsize(f) for f in paths]
    if npartitions is None:
        npartitions = -(-sum(sizes) // PARTITION_BYTES)
    k = max(1, min(len(paths), int(npartitions)))
    load = [0] * k
    members: list[list[int]] = [[] for _ in range(k)]
    for i in sorted(range(len(paths)), key=lambda i: (-sizes[i], i)):
        j = min(range(k), key=lambda j: (load[j], j))
        load[j] += sizes[i]
        members[j].append(i)
    return [[paths[i] for i in sorted(m)] for m in members if m]


def _scan_files(groups: Iterable[list[str]], engine: _Engine, opts: dict[str, Any],
                batch_tokens: int) -> list[ShardCounts]:
    # one scanner per partition: its files stream through it, one count array goes back
    return [engine.scan_documents((doc for f in files for doc in iter_documents(f, **opts)), batch_tokens)
            for files in groups]


def _scan_docs(docs: Iterable[str], engine: _Engine, batch_tokens: int) -> list[ShardCounts]:
    return [engine.scan_documents(docs, batch_tokens)]


class OverlapCounts:
    """Result of a scan: the corpus count of every indexed n-gram, and views of it per test-set part.

    Attributes
    ----------
    index : OverlapIndex
        The index that was scanned (test sets, n, tokenizer, parts).
    stats : CorpusStats
        Documents, tokens and bytes read.
    """

    def __init__(self, index: OverlapIndex, counts: dict[int, dict[tuple[int, ...], int]], stats: CorpusStats) -> None:
        self.index = index
        self.stats = stats
        self._counts = {n: dict(counts.get(n, {})) for n in index.n}
        # entry -> {gram: count} for every entry with an overlapping n-gram, per n
        self._by_entry: dict[int, dict[int, dict[tuple[int, ...], int]]] = {}
        for n, c in self._counts.items():
            table = index._table[n]
            per = self._by_entry[n] = {}
            for gram, k in c.items():
                for e in table[gram]:
                    per.setdefault(e, {})[gram] = k

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, OverlapCounts):
            return NotImplemented
        # the same n-gram ids mean different n-grams under another index (test sets, tokenizer, parts)
        return self.index.key == other.index.key and self._counts == other._counts and self.stats == other.stats

    def __add__(self, other: OverlapCounts) -> OverlapCounts:
        if other.index.key != self.index.key:
            raise ValueError("only counts of the same OverlapIndex (or copies of it, equal key) can be added")
        merged = {n: dict(c) for n, c in self._counts.items()}
        for n, c in other._counts.items():
            target = merged.setdefault(n, {})
            for gram, k in c.items():
                target[gram] = target.get(gram, 0) + k
        return OverlapCounts(self.index, merged, self.stats + other.stats)

    def _check_n(self, n: int) -> None:
        if n not in self.index.n:
            raise ValueError(f"n={n!r} was not indexed; indexed n: {self.index.n}")

    def gram_count(self, n: int, gram: tuple[int, ...], entry: int) -> int:
        """Corpus count of an n-gram (ids) as seen by one entry: 0 unless the entry contains the n-gram."""
        per = self._by_entry[n].get(entry)
        return per.get(gram, 0) if per else 0

    def entry_counts(self, n: int, entry: int) -> dict[tuple[int, ...], int]:
        """Overlapping n-grams (ids) of one entry with their corpus counts."""
        return self._by_entry[n].get(entry, {})

    def ngram_counts(self, test_set: tuple[str, str] | TestSet, instance_id: str, part: str, n: int) -> dict[tuple[str, ...], int]:
        """Overlapping n-grams of one instance part with their corpus counts.

        Parameters
        ----------
        test_set : (name, split) or TestSet
        instance_id : str
        part : {"input", "references", "intersect"}
        n : int

        Returns
        -------
        dict of tuple of str to int
            Only n-grams that occur in the corpus.
        """
        self._check_n(n)
        s = self.index.set_index(test_set)
        ids = [inst.id for inst in self.index.test_sets[s].instances]
        if instance_id not in ids:
            raise KeyError(f"no instance {instance_id!r} in test set {self.index.test_sets[s].key}")
        e = self.index.entry(s, ids.index(instance_id), part)
        return {self.index.tokens_of(g): k for g, k in self.entry_counts(n, e).items()}

    def overlapping_ids(self, test_set: tuple[str, str] | TestSet, part: str, n: int) -> list[str]:
        """Sorted ids of the instances whose ``part`` shares at least one n-gram with the corpus."""
        self._check_n(n)
        s = self.index.set_index(test_set)
        out = []
        for i, inst in enumerate(self.index.test_sets[s].instances):
            if self._by_entry[n].get(self.index.entry(s, i, part)):
                out.append(inst.id)
        return sorted(out)

    def summary(self) -> list[dict[str, Any]]:
        """Per test set and n: instances, and how many (and what fraction) overlap in each indexed part."""
        rows = []
        for ts in self.index.test_sets:
            for n in self.index.n:
                row: dict[str, Any] = {"test_set": ts.name, "split": ts.split, "n": n, "num_instances": len(ts.instances)}
                for part in self.index.parts:
                    k = len(self.overlapping_ids(ts.key, part, n))
                    row[f"num_overlapping_{part}"] = k
                    row[f"overlapping_{part}_fraction"] = k / len(ts.instances) if ts.instances else float("nan")
                rows.append(row)
        return rows

    def to_helm_stats(self) -> list[dict[str, Any]]:
        """HELM's ``DataOverlapStats`` records (one per test set and n), as its script writes them.

        Returns
        -------
        list of dict
            ``data_overlap_stats_key``, ``num_instances`` and the sorted overlapping instance ids of each
            part (``instance_ids_with_overlapping_input`` / ``_reference`` / ``_intersection``); a part
            that was not indexed is left out.
        """
        names = {"input": "input", "references": "reference", "intersect": "intersection"}
        out = []
        for ts in self.index.test_sets:
            for n in self.index.n:
                rec: dict[str, Any] = {"data_overlap_stats_key": {"light_scenario_key": ts.helm_key(),
                                                                  "overlap_protocol_spec": {"n": n}},
                                       "num_instances": len(ts.instances)}
                for part in PARTS:
                    if part in self.index.parts:
                        rec[f"instance_ids_with_overlapping_{names[part]}"] = self.overlapping_ids(ts.key, part, n)
                out.append(rec)
        return out

    def to_helm_ngrams(self) -> list[dict[str, Any]]:
        """HELM's ``EntryOverlapNgrams`` records: every part with an overlap and its n-gram counts.

        Returns
        -------
        list of dict
            ``entry_data_overlap_key`` (``stats_key``, ``part``, ``instance_id``) and
            ``overlapping_ngram_counts`` as ``[[tokens...], count]`` pairs.
        """
        out = []
        for n in self.index.n:
            for e in sorted(self._by_entry[n]):
                s, i, part = self.index._entries[e]
                ts = self.index.test_sets[s]
                grams = self._by_entry[n][e]
                out.append({"entry_data_overlap_key": {
                    "stats_key": {"light_scenario_key": ts.helm_key(), "overlap_protocol_spec": {"n": n}},
                    "part": part, "instance_id": ts.instances[i].id},
                    "overlapping_ngram_counts": [[list(self.index.tokens_of(g)), k] for g, k in grams.items()]})
        return out
