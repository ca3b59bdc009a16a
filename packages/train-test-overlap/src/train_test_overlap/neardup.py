"""Near-duplicates of test instances in a corpus with MinHash and locality-sensitive hashing (datasketch).

Exact n-gram rules miss copies that were reformatted or lightly edited. Here each instance input and
each corpus unit (a document, or a paragraph when ``paragraphs=True``) becomes a set of word
``k``-shingles under a tokenizer; a MinHash of ``num_perm`` permutations estimates the Jaccard
similarity of two sets (standard error about ``sqrt(J (1 - J) / num_perm)``), and MinHashLSH with a
threshold returns the instances whose similarity to a unit probably exceeds it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from train_test_overlap.data import TestSet, iter_documents
from train_test_overlap.tokenizers import Tokenizer, get_tokenizer

__all__ = ["NearDuplicate", "minhash", "near_duplicates", "shingles"]


def _datasketch():
    try:
        import datasketch
    except ImportError as exc:  # pragma: no cover - depends on the install
        raise ImportError("near-duplicate search needs datasketch: pip install 'train-test-overlap[minhash]'") from exc
    return datasketch


def shingles(text: str, *, k: int = 5, tokenizer: str | Tokenizer = "helm-default") -> set[str]:
    """The set of word ``k``-shingles of a text (the whole token sequence when it is shorter than ``k``).

    Parameters
    ----------
    text : str
    k : int, default 5
    tokenizer : str or Tokenizer, default "helm-default"

    Returns
    -------
    set of str
        Shingles as tokens joined by single spaces; empty for a text without tokens.
    """
    if k < 1:
        raise ValueError(f"k must be >= 1, got {k!r}")
    tokens = [t for t in get_tokenizer(tokenizer).tokenize(text) if t]
    if not tokens:
        return set()
    if len(tokens) < k:
        return {" ".join(tokens)}
    return {" ".join(tokens[i:i + k]) for i in range(len(tokens) - k + 1)}


def minhash(items: set[str], *, num_perm: int = 256, seed: int = 1) -> Any:
    """A ``datasketch.MinHash`` of a set of strings.

    Parameters
    ----------
    items : set of str
    num_perm : int, default 256
    seed : int, default 1
        Permutation seed; two MinHashes compare only with equal ``num_perm`` and ``seed``.

    Returns
    -------
    datasketch.MinHash
    """
    ds = _datasketch()
    mh = ds.MinHash(num_perm=num_perm, seed=seed)
    if items:
        mh.update_batch([s.encode("utf-8", "surrogatepass") for s in items])
    return mh


@dataclass(frozen=True)
class NearDuplicate:
    """A corpus unit that is probably a near-duplicate of a test instance.

    Attributes
    ----------
    test_set, split, instance_id : str
    unit : int
        Position of the document (or paragraph, counted over the whole corpus) in reading order.
    estimated_jaccard : float
        MinHash estimate of the shingle-set Jaccard similarity.
    """

    test_set: str
    split: str
    instance_id: str
    unit: int
    estimated_jaccard: float


def near_duplicates(test_sets: TestSet | Sequence[TestSet], corpus: Any, *, threshold: float = 0.6, num_perm: int = 256,
                    k: int = 5, tokenizer: str | Tokenizer = "helm-default", seed: int = 1, paragraphs: bool = False,
                    verify: bool = True, **read: Any) -> list[NearDuplicate]:
    """Find corpus units whose shingle sets are probably at least ``threshold``-similar to an instance input.

    Parameters
    ----------
    test_sets : TestSet or sequence of TestSet
    corpus : path-like, list of Path, or iterable of str
        See :func:`~train_test_overlap.iter_documents` (``read`` is passed on).
    threshold : float, default 0.6
        LSH threshold in (0, 1).
    num_perm : int, default 256
    k : int, default 5
        Words per shingle.
    tokenizer : str or Tokenizer, default "helm-default"
    seed : int, default 1
        MinHash permutation seed.
    paragraphs : bool, default False
        Split documents on blank lines and compare paragraphs.
    verify : bool, default True
        Keep only LSH candidates whose MinHash estimate is at least ``threshold``.

    Returns
    -------
    list of NearDuplicate
        In reading order of the units.
    """
    if not 0.0 < threshold < 1.0:
        raise ValueError(f"threshold must lie in (0, 1), got {threshold!r}")
    ds = _datasketch()
    sets = (test_sets,) if isinstance(test_sets, TestSet) else tuple(test_sets)
    tok = get_tokenizer(tokenizer)
    lsh = ds.MinHashLSH(threshold=threshold, num_perm=num_perm)
    hashes = {}
    for s, ts in enumerate(sets):
        for i, inst in enumerate(ts.instances):
            sh = shingles(inst.input, k=k, tokenizer=tok)
            if sh:
                key = f"{s}:{i}"
                hashes[key] = minhash(sh, num_perm=num_perm, seed=seed)
                lsh.insert(key, hashes[key])
    found = []
    unit = -1
    for doc in iter_documents(corpus, **read):
        for text in (doc.split("\n\n") if paragraphs else [doc]):
            unit += 1
            sh = shingles(text, k=k, tokenizer=tok)
            if not sh:
                continue
            mh = minhash(sh, num_perm=num_perm, seed=seed)
            for key in sorted(lsh.query(mh), key=lambda x: tuple(map(int, x.split(":")))):
                est = float(mh.jaccard(hashes[key]))
                if verify and est < threshold:
                    continue
                s, i = map(int, key.split(":"))
                ts = sets[s]
                found.append(NearDuplicate(ts.name, ts.split, ts.instances[i].id, unit, est))
    return found
