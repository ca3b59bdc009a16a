"""``CorpusSketch``: a Bloom filter of a corpus's n-grams that a developer can publish instead of the data.

The filter holds every n-gram of the corpus under one tokenizer. Anyone can then ask which test
n-grams it (probably) contains: an n-gram of the corpus is always reported (no false negatives), an
absent one is reported with probability about ``fp_rate``. Bits are a packed numpy array of
``m = ceil(-capacity ln p / ln(2)^2)`` bits with ``k = max(1, round(m / capacity * ln 2))`` probes from
double hashing (``h1 + i * h2 mod m``) of the 128-bit xxHash3 of the n-gram's tokens joined by U+001F.
Shards are sketched separately and OR-merged; the result is bitwise the one-pass filter. A sketch saves
with its parameters (n, tokenizer name, m, k, seed) and refuses queries under other ones.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

import numpy as np
from icml25_shared.validation import Interval, check_params

from train_test_overlap.data import TestSet, iter_documents
from train_test_overlap.tokenizers import _NAMED, Tokenizer, corpus_tokenize, get_tokenizer

__all__ = ["CorpusSketch"]

_SEP = "\x1f"
_MASKS = (np.uint8(1) << np.arange(8, dtype=np.uint8)).astype(np.uint8)


def _xxh():
    try:
        import xxhash
    except ImportError as exc:  # pragma: no cover - depends on the install
        raise ImportError("CorpusSketch needs xxhash: pip install 'train-test-overlap[sketch]'") from exc
    return xxhash.xxh3_128_digest


class CorpusSketch:
    """Bloom filter of the n-grams of a corpus.

    Parameters
    ----------
    n : int, default 13
        n-gram length.
    tokenizer : str or Tokenizer, default "helm-default"
        Its name is stored with a saved sketch; a sketch built with a function or a transformers
        tokenizer is loaded back with ``load(path, tokenizer=...)``.
    capacity : int, default 10_000_000
        Distinct n-grams the filter is sized for; beyond it the false-positive rate grows.
    fp_rate : float, default 1e-3
        Target false-positive rate at ``capacity`` items, in (0, 1).
    seed : int, default 0
        Hash seed (part of the sketch's identity: sketches merge only with equal seeds).

    Attributes
    ----------
    m, k : int
        Bits and probes per item.
    bits : numpy.ndarray of uint8, shape (ceil(m / 8),)
        The packed filter.
    documents : int
        Documents added.
    """

    def __init__(self, *, n: int = 13, tokenizer: str | Tokenizer = "helm-default", capacity: int = 10_000_000,
                 fp_rate: float = 1e-3, seed: int = 0) -> None:
        check_params({"n": n, "capacity": capacity, "fp_rate": fp_rate, "seed": seed},
                     {"n": [Interval(int, 1, None)], "capacity": [Interval(int, 1, None)],
                      "fp_rate": [Interval(float, 0, 1, closed="neither")],
                      "seed": [Interval(int, 0, 2**64, closed="left")]},  # the xxhash seed
                     owner="CorpusSketch")
        self.n = int(n)
        self.tokenizer = get_tokenizer(tokenizer)
        self.capacity = int(capacity)
        self.fp_rate = float(fp_rate)
        self.seed = int(seed)
        self.m = int(math.ceil(-self.capacity * math.log(self.fp_rate) / math.log(2) ** 2))
        self.k = max(1, round(self.m / self.capacity * math.log(2)))
        self.bits = np.zeros((self.m + 7) // 8, dtype=np.uint8)
        self.documents = 0
        self._hash = _xxh()

    # -- hashing --------------------------------------------------------------------------------------
    def _positions(self, grams: Sequence[str]) -> np.ndarray:
        h = self._hash
        seed = self.seed
        raw = np.frombuffer(b"".join([h(g.encode("utf-8", "surrogatepass"), seed) for g in grams]), dtype=">u8")
        both = raw.reshape(-1, 2).astype(np.uint64)
        lo, hi = both[:, 0], both[:, 1] | np.uint64(1)
        m = np.uint64(self.m)
        i = np.arange(self.k, dtype=np.uint64)
        return ((lo[:, None] % m + (i[None, :] * (hi[:, None] % m)) % m) % m).astype(np.uint64)

    def _grams(self, tokens: list[str]) -> list[str]:
        n = self.n
        return [_SEP.join(tokens[j:j + n]) for j in range(len(tokens) - n + 1)]

    # -- building -------------------------------------------------------------------------------------
    def add_documents(self, documents: Iterable[str], *, batch: int = 1 << 16) -> CorpusSketch:
        """Add every n-gram of the documents.

        Parameters
        ----------
        documents : iterable of str
        batch : int, default 65536
            n-grams hashed per numpy step.

        Returns
        -------
        CorpusSketch
            ``self``.
        """
        buf: list[str] = []
        tok = corpus_tokenize(self.tokenizer)
        for doc in documents:
            if not isinstance(doc, str):
                raise TypeError(f"document {self.documents} is {type(doc).__name__}, not str")
            buf.extend(self._grams(tok(doc)))
            self.documents += 1
            if len(buf) >= batch:
                self._set(buf)
                buf = []
        if buf:
            self._set(buf)
        return self

    def add_corpus(self, corpus: Any, **read: Any) -> CorpusSketch:
        """Add a corpus read with :func:`~train_test_overlap.iter_documents` (``read`` passed on)."""
        return self.add_documents(iter_documents(corpus, **read))

    def _set(self, grams: Sequence[str]) -> None:
        pos = self._positions(grams).ravel()
        np.bitwise_or.at(self.bits, (pos >> np.uint64(3)).astype(np.intp), _MASKS[(pos & np.uint64(7)).astype(np.intp)])

    def _params(self) -> dict[str, Any]:
        return {"n": self.n, "tokenizer": self.tokenizer.name, "capacity": self.capacity, "fp_rate": self.fp_rate,
                "seed": self.seed, "m": self.m, "k": self.k, "hash": "xxh3_128, double hashing", "format": 1}

    def __or__(self, other: CorpusSketch) -> CorpusSketch:
        if not isinstance(other, CorpusSketch):
            return NotImplemented
        if self._params() != other._params():
            raise ValueError(f"sketches differ in parameters: {self._params()} vs {other._params()}")
        out = CorpusSketch(n=self.n, tokenizer=self.tokenizer, capacity=self.capacity, fp_rate=self.fp_rate, seed=self.seed)
        out.bits = self.bits | other.bits
        out.documents = self.documents + other.documents
        return out

    # -- querying -------------------------------------------------------------------------------------
    def _check(self, n: int | None, tokenizer: Any) -> None:
        if n is not None and n != self.n:
            raise ValueError(f"this sketch holds {self.n}-grams; a query with n={n} cannot be answered")
        if tokenizer is not None and get_tokenizer(tokenizer).name != self.tokenizer.name:
            raise ValueError(f"this sketch was built with tokenizer {self.tokenizer.name!r}; a query with "
                             f"{get_tokenizer(tokenizer).name!r} cannot be answered")

    def contains(self, grams: Sequence[Sequence[str]], *, n: int | None = None, tokenizer: Any = None) -> np.ndarray:
        """Whether each n-gram (a sequence of tokens) is (probably) in the corpus.

        Parameters
        ----------
        grams : sequence of sequences of str
            Each of length ``self.n``.
        n, tokenizer : optional
            What the caller assumes; a mismatch raises instead of answering a different question.

        Returns
        -------
        numpy.ndarray of bool
        """
        self._check(n, tokenizer)
        if isinstance(grams, str) or any(isinstance(g, str) for g in grams):
            raise TypeError("each n-gram must be a sequence of tokens, not a str (a str would be read as a "
                            "sequence of characters); tokenize it first, e.g. sketch.tokenizer.tokenize(text)")
        if not len(grams):
            return np.zeros(0, dtype=bool)
        joined = [_SEP.join(g) for g in grams]
        bad = next((g for g in grams if len(g) != self.n), None)
        if bad is not None:
            raise ValueError(f"n-gram {tuple(bad)!r} has {len(bad)} tokens; this sketch holds {self.n}-grams")
        pos = self._positions(joined)
        bit = (self.bits[(pos >> np.uint64(3)).astype(np.intp)] >> (pos & np.uint64(7)).astype(np.uint8)) & 1
        return np.asarray(bit.all(axis=1))

    def overlap(self, test_sets: TestSet | Sequence[TestSet], *, part: str = "input", n: int | None = None,
                tokenizer: Any = None) -> dict[tuple[str, str], dict[str, float]]:
        """Per instance, the fraction of its n-grams the sketch reports (HELM's unweighted Jaccard, approximately).

        Parameters
        ----------
        test_sets : TestSet or sequence of TestSet
        part : {"input", "references"}, default "input"
            References are joined by spaces, as in HELM's metrics.
        n, tokenizer : optional
            Checked against the sketch.

        Returns
        -------
        dict
            ``{(name, split): {instance id: fraction}}``; nan for an instance with fewer than n tokens.
            A fraction is an upper bound of the exact one (false positives only add).
        """
        self._check(n, tokenizer)
        if part not in ("input", "references"):
            raise ValueError(f"part must be 'input' or 'references', got {part!r}")
        sets = (test_sets,) if isinstance(test_sets, TestSet) else tuple(test_sets)
        out: dict[tuple[str, str], dict[str, float]] = {}
        for ts in sets:
            res = {}
            for inst in ts.instances:
                text = inst.input if part == "input" else " ".join(inst.references)
                tokens = self.tokenizer.tokenize(text)
                grams = [tokens[j:j + self.n] for j in range(len(tokens) - self.n + 1)]
                res[inst.id] = float(self.contains(grams).mean()) if grams else math.nan
            out[ts.key] = res
        return out

    def localise(self, test_sets: TestSet | Sequence[TestSet], corpus: Any, *, part: str = "input", **read: Any) -> Any:
        """Exact counts for the instances the sketch flags: one exact scan restricted to them.

        Whoever holds the corpus runs this after a sketch query: only instances with a reported n-gram
        are indexed, so false positives are removed and the overlapping n-grams get their exact counts.

        Parameters
        ----------
        test_sets : TestSet or sequence of TestSet
        corpus : path-like, list of Path, or iterable of str
            The corpus the sketch was built from (``read`` is passed to the reader).
        part : {"input", "references"}, default "input"

        Returns
        -------
        OverlapCounts
            Of an index over the flagged instances only (test sets keep their names; a test set with no
            flagged instance is left out). None when nothing is flagged.
        """
        from train_test_overlap.data import Instance
        from train_test_overlap.index import OverlapIndex

        sets = (test_sets,) if isinstance(test_sets, TestSet) else tuple(test_sets)
        flags = self.overlap(sets, part=part)
        kept = []
        for ts in sets:
            chosen = [inst for inst in ts.instances if flags[ts.key][inst.id] > 0]
            if chosen:
                kept.append(TestSet(ts.name, ts.split, [Instance(i.id, i.input, i.references) for i in chosen], spec=ts.spec))
        if not kept:
            return None
        return OverlapIndex(kept, n=self.n, tokenizer=self.tokenizer, parts=(part,)).scan(corpus, **read)

    def fill_ratio(self) -> float:
        """Fraction of bits set (the expected false-positive rate is about ``fill_ratio ** k``)."""
        return float(np.unpackbits(self.bits)[: self.m].mean())

    # -- persistence ----------------------------------------------------------------------------------
    def save(self, path: str | Path) -> Path:
        """Write the sketch (bits and parameters) to ``path`` (``.npz``)."""
        path = Path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        meta = {**self._params(), "documents": self.documents}
        with open(path, "wb") as f:
            np.savez_compressed(f, bits=self.bits, meta=np.frombuffer(json.dumps(meta).encode(), dtype=np.uint8))
        return path

    @classmethod
    def load(cls, path: str | Path, *, tokenizer: str | Tokenizer | Any = None) -> CorpusSketch:
        """Read a sketch written by :meth:`save`.

        Parameters
        ----------
        path : path-like
            The ``.npz`` file.
        tokenizer : str, Tokenizer or callable, optional
            Needed when the sketch was built with a tokenizer that is not a named one (a function, a
            transformers tokenizer): only its name is stored. Its name must equal the stored name.

        Returns
        -------
        CorpusSketch
        """
        with np.load(path) as z:
            meta = json.loads(bytes(z["meta"]).decode())
            bits = z["bits"]
        if meta.get("format") != 1:
            raise ValueError(f"{path}: not a CorpusSketch file of format 1")
        stored = meta["tokenizer"]
        if tokenizer is None:
            if stored not in _NAMED:
                raise ValueError(f"{path} was built with tokenizer {stored!r}, which is not a named one "
                                 f"({sorted(_NAMED)}); pass tokenizer= with the same tokenizer")
            tokenizer = stored
        elif get_tokenizer(tokenizer).name != stored:
            raise ValueError(f"{path} was saved with tokenizer {stored!r}; the tokenizer passed is "
                             f"{get_tokenizer(tokenizer).name!r}")
        sketch = cls(n=meta["n"], tokenizer=tokenizer, capacity=meta["capacity"], fp_rate=meta["fp_rate"],
                     seed=meta["seed"])
        if (sketch.m, sketch.k) != (meta["m"], meta["k"]) or bits.shape != sketch.bits.shape:
            raise ValueError(f"{path}: stored m, k or bit count disagree with its parameters")
        sketch.bits = bits
        sketch.documents = meta["documents"]
        return sketch
