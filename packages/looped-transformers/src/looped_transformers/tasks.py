"""Task suites: dynamic programming (direct answer), in-context regression and char-level language modelling.

Dynamic-programming problems are written as token sequences in the CoT_benchmark direct-answer form,
``a b c | d e f <sep> 7 <eos>``, with exact labels from the textbook recurrences; the model is scored on the
answer token after ``<sep>``. In-context regression follows Garg et al. (2022): prompts
``x_1, y_1, ..., x_k, y_k`` read in linearly, the error at each prompt length normalised by the dimension.
The language-modelling corpus is the Python standard library's own source (offline, ASCII).
"""

from __future__ import annotations

import bisect
import math
import sysconfig
from abc import ABC, abstractmethod
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch
from icml25_shared.random import RandomStateLike, check_random_state
from icml25_shared.validation import Interval, check_param

__all__ = [
    "DP_TASKS",
    "TASKS",
    "CharLMTask",
    "DPTask",
    "DecisionTreeTask",
    "InContextTask",
    "RegressionBatch",
    "RegressionTask",
    "ReluNetTask",
    "TokenBatch",
    "edit_distance",
    "knapsack",
    "lcs_length",
    "lis_length",
    "make_task",
    "ngram_baselines",
    "ngram_tables",
    "regression_baselines",
    "stdlib_corpus",
    "subset_sum",
    "xgboost_baseline",
]

SPECIALS = ("<pad>", "<sep>", "|", "<eos>")
LETTERS = tuple("abcdefghijklmnopqrstuvwxyz")
DP_TASKS = ("ed", "lis", "lcs", "knapsack", "partial_sum")
"""Names of the dynamic-programming tasks (:class:`DPTask`)."""
REGRESSION_TASKS = ("linear_regression", "sparse_linear_regression", "noisy_linear_regression", "decision_tree",
                    "relu_2nn_regression")
TASKS = (*DP_TASKS, *REGRESSION_TASKS, "charlm")
"""Every task name :func:`make_task` accepts."""


def edit_distance(a: str, b: str, *, insert_delete: int = 2, substitute: int = 3) -> int:
    """Weighted Levenshtein distance (insertions and deletions cost 2, substitutions 3 by default).

    Parameters
    ----------
    a, b : str
        The two strings.
    insert_delete : int, default 2
        Cost of inserting or deleting one character.
    substitute : int, default 3
        Cost of replacing one character.

    Returns
    -------
    int
        The minimum total cost of turning ``a`` into ``b``.

    Examples
    --------
    >>> edit_distance("abc", "abd"), edit_distance("ab", "abc")
    (3, 2)
    """
    prev = [insert_delete * j for j in range(len(b) + 1)]
    for i, ca in enumerate(a, 1):
        cur = [insert_delete * i]
        for j, cb in enumerate(b, 1):
            cur.append(min(prev[j] + insert_delete, cur[j - 1] + insert_delete,
                           prev[j - 1] + (0 if ca == cb else substitute)))
        prev = cur
    return prev[-1]


def lcs_length(a: str, b: str) -> int:
    """Length of the longest common subsequence.

    Parameters
    ----------
    a, b : str
        The two strings.

    Returns
    -------
    int
        The LCS length.

    Examples
    --------
    >>> lcs_length("abcde", "ace")
    3
    """
    prev = [0] * (len(b) + 1)
    for ca in a:
        cur = [0]
        for j, cb in enumerate(b, 1):
            cur.append(prev[j - 1] + 1 if ca == cb else max(prev[j], cur[j - 1]))
        prev = cur
    return prev[-1]


def lis_length(seq: list[int]) -> int:
    """Length of the longest strictly increasing subsequence (patience sorting).

    Parameters
    ----------
    seq : list of int
        The sequence.

    Returns
    -------
    int
        The LIS length.

    Examples
    --------
    >>> lis_length([3, 1, 2, 2, 5, 4])
    3
    """
    tails: list[int] = []
    for x in seq:
        i = bisect.bisect_left(tails, x)
        tails[i:i + 1] = [x]
    return len(tails)


def knapsack(weights: list[int], values: list[int], capacity: int) -> int:
    """Best total value of a 0/1 knapsack.

    Parameters
    ----------
    weights, values : list of int
        Item weights (positive) and values.
    capacity : int
        Weight limit.

    Returns
    -------
    int
        The maximum value of a subset whose weight is at most ``capacity``.

    Examples
    --------
    >>> knapsack([2, 3, 4], [3, 4, 6], 5)
    7
    """
    best = [0] * (capacity + 1)
    for w, v in zip(weights, values, strict=True):
        for c in range(capacity, w - 1, -1):
            best[c] = max(best[c], best[c - w] + v)
    return best[capacity]


def subset_sum(numbers: list[int], target: int) -> int:
    """1 when some subset of ``numbers`` sums to ``target``, else 0.

    Parameters
    ----------
    numbers : list of int
        Positive integers.
    target : int
        The sum to reach.

    Returns
    -------
    int
        1 or 0.

    Examples
    --------
    >>> subset_sum([3, 5, 9], 14), subset_sum([3, 5, 9], 13)
    (1, 0)
    """
    reach = 1
    for x in numbers:
        reach |= reach << x
    return int(reach >> target & 1)


@dataclass(frozen=True)
class TokenBatch:
    """Token sequences with their targets.

    Attributes
    ----------
    input_ids : LongTensor, shape (n, length)
        Right-padded with ``<pad>`` (id 0).
    labels : LongTensor, shape (n, length)
        The token at answer positions, -100 elsewhere (shifted inside the model, as transformers' LMs).
    answers : list of int
        The exact answer of each problem (DP tasks; empty for the LM).
    """

    input_ids: torch.Tensor
    labels: torch.Tensor
    answers: list[int]


def _check_length(name: str, low: int, high: int) -> None:
    if isinstance(low, bool) or isinstance(high, bool) or not (isinstance(low, int) and isinstance(high, int)):
        raise ValueError(f"{name} must be ints, got {low!r}, {high!r}")
    if not 1 <= low <= high:
        raise ValueError(f"{name} must satisfy 1 <= min <= max, got {low}, {high}")


class DPTask:
    """A dynamic-programming task in the direct-answer token format.

    Parameters
    ----------
    name : {"ed", "lis", "lcs", "knapsack", "partial_sum"}
        ``ed``: edit distance (insert/delete 2, substitute 3) of two strings; ``lcs``: LCS length of two
        strings; ``lis``: LIS length of a number sequence; ``knapsack``: ``w... | v... | C``; ``partial_sum``:
        ``x... | target``, answer 1 when a subset reaches the target.
    min_length, max_length : int, default 4, 12
        Length range of the (first) sequence.
    alphabet : int, default 8
        Letters available to string tasks (a prompt uses 3 to ``alphabet`` of them).
    number_range : int, default 30
        Numbers drawn in ``[0, number_range)`` (``lis``) or ``[1, number_range)`` (``partial_sum``).
    max_item : int, default 9
        Largest weight and value of a knapsack item.

    Attributes
    ----------
    vocab : tuple of str
        ``<pad> <sep> | <eos>``, the 26 letters, then the numbers ``0 .. max_number``.
    vocab_size : int
        ``len(vocab)``.
    max_sequence_length : int
        Longest prompt plus answer plus ``<eos>``.
    """

    def __init__(self, name: str, *, min_length: int = 4, max_length: int = 12, alphabet: int = 8,
                 number_range: int = 30, max_item: int = 9) -> None:
        if name not in DP_TASKS:
            raise ValueError(f"unknown task {name!r}; accepted: {', '.join(TASKS)}")
        _check_length("min_length, max_length", min_length, max_length)
        if not 3 <= alphabet <= 26:
            raise ValueError(f"alphabet must lie in [3, 26], got {alphabet!r}")
        if number_range < 2 or max_item < 1:
            raise ValueError(f"number_range must be >= 2 and max_item >= 1, got {number_range}, {max_item}")
        self.name, self.min_length, self.max_length = name, min_length, max_length
        self.alphabet, self.number_range, self.max_item = alphabet, number_range, max_item
        n = max_length
        max_number = {"ed": 4 * n, "lcs": n, "lis": max(n, number_range - 1),
                      "knapsack": max(n * max_item, 1), "partial_sum": n * (number_range - 1)}[name]
        self.vocab = (*SPECIALS, *LETTERS, *(str(i) for i in range(max_number + 1)))
        self.vocab_size = len(self.vocab)
        self._index = {tok: i for i, tok in enumerate(self.vocab)}
        prompt = {"ed": 2 * n + 4, "lcs": 2 * n + 4, "lis": n, "knapsack": 2 * n + 3, "partial_sum": n + 2}[name]
        self.max_sequence_length = prompt + 3

    def check_vocab(self, vocab_size: int) -> None:
        """Raise when a model with ``vocab_size`` tokens cannot represent this task.

        Parameters
        ----------
        vocab_size : int
            The model's vocabulary size.

        Raises
        ------
        ValueError
            When the task's tokens do not fit.
        """
        if vocab_size < self.vocab_size:
            raise ValueError(f"task {self.name!r} uses {self.vocab_size} tokens (numbers up to "
                             f"{self.vocab[-1]}) but the model's vocab_size is {vocab_size}")

    def encode(self, tokens: list[str]) -> list[int]:
        """Token strings to ids.

        Parameters
        ----------
        tokens : list of str
            Tokens of :attr:`vocab`.

        Returns
        -------
        list of int
            Their ids.
        """
        try:
            return [self._index[t] for t in tokens]
        except KeyError as err:
            raise ValueError(f"token {err.args[0]!r} is outside task {self.name!r}'s vocabulary") from None

    def _strings(self, rng: np.random.Generator) -> tuple[str, str]:
        using = int(rng.integers(3, self.alphabet + 1))
        letters = [LETTERS[i] for i in rng.choice(self.alphabet, size=using, replace=False)]
        n1 = int(rng.integers(self.min_length, self.max_length + 1))
        a = [letters[i] for i in rng.integers(0, using, size=n1)]
        if rng.random() < 0.4:  # an unrelated second string of similar length
            n2 = int(rng.integers(max(self.min_length, n1 - 3), min(self.max_length, n1 + 3) + 1))
            b = [letters[i] for i in rng.integers(0, using, size=n2)]
        else:  # a few random edits of the first
            b = a[:]
            for _ in range(int(rng.integers(1, n1 + 1))):
                op, p = int(rng.integers(3)), int(rng.integers(len(b) + 1))
                if op == 0 and len(b) > self.min_length and p < len(b):
                    del b[p]
                elif op == 1 and p < len(b):
                    b[p] = letters[int(rng.integers(using))]
                elif op == 2 and len(b) < self.max_length:
                    b.insert(p, letters[int(rng.integers(using))])
        return "".join(a), "".join(b)

    def problem(self, rng: np.random.Generator) -> tuple[list[str], int]:
        """One random problem: its prompt tokens (ending in ``<sep>``) and its exact answer.

        Parameters
        ----------
        rng : numpy Generator
            Source of the problem.

        Returns
        -------
        tuple
            ``(tokens, answer)``.
        """
        n = int(rng.integers(self.min_length, self.max_length + 1))
        if self.name in ("ed", "lcs"):
            a, b = self._strings(rng)
            answer = edit_distance(a, b) if self.name == "ed" else lcs_length(a, b)
            tokens = [*a, "|", *b]
        elif self.name == "lis":
            seq = [int(x) for x in rng.integers(0, self.number_range, size=n)]
            answer, tokens = lis_length(seq), [str(x) for x in seq]
        elif self.name == "knapsack":
            w = [int(x) for x in rng.integers(1, self.max_item + 1, size=n)]
            v = [int(x) for x in rng.integers(1, self.max_item + 1, size=n)]
            cap = int(rng.integers(1, sum(w) + 1))
            answer, tokens = knapsack(w, v, cap), [*map(str, w), "|", *map(str, v), "|", str(cap)]
        else:
            xs = [int(x) for x in rng.integers(1, self.number_range, size=n)]
            target = int(rng.integers(1, sum(xs) + 1))
            answer, tokens = subset_sum(xs, target), [*map(str, xs), "|", str(target)]
        return [*tokens, "<sep>"], answer

    def sample(self, n: int, random_state: RandomStateLike = None) -> TokenBatch:
        """``n`` random problems as a right-padded batch.

        Parameters
        ----------
        n : int
            Batch size.
        random_state : None, int or numpy Generator
            Source of the problems.

        Returns
        -------
        TokenBatch
            Ids, labels (the answer token only) and the exact answers.
        """
        rng = check_random_state(random_state)
        rows, answers, answer_pos = [], [], []
        for _ in range(n):
            tokens, answer = self.problem(rng)
            ids = self.encode([*tokens, str(answer), "<eos>"])
            rows.append(ids)
            answers.append(answer)
            answer_pos.append(len(tokens))
        length = max(len(r) for r in rows)
        input_ids = torch.zeros(n, length, dtype=torch.long)
        labels = torch.full((n, length), -100, dtype=torch.long)
        for i, (row, p) in enumerate(zip(rows, answer_pos, strict=True)):
            input_ids[i, :len(row)] = torch.tensor(row)
            labels[i, p] = row[p]
        return TokenBatch(input_ids, labels, answers)


_STDLIB_CACHE: dict[int, str] = {}


def stdlib_corpus(n_chars: int = 1_000_000) -> str:
    """The first ``n_chars`` characters of the Python standard library's ``.py`` files, ASCII only.

    The top-level modules are read in sorted name order and joined with newlines;
    non-ASCII characters become ``?``.

    Parameters
    ----------
    n_chars : int, default 1_000_000
        Length of the corpus.

    Returns
    -------
    str
        The corpus.

    Raises
    ------
    ValueError
        When the standard library's source is shorter than ``n_chars`` or cannot be found.
    """
    if n_chars in _STDLIB_CACHE:
        return _STDLIB_CACHE[n_chars]
    root = Path(sysconfig.get_paths()["stdlib"])
    parts, total = [], 0
    for path in sorted(root.glob("*.py")):
        try:
            text = path.read_text(encoding="utf-8", errors="replace")
        except OSError:
            continue
        text = text.encode("ascii", errors="replace").decode("ascii")
        parts.append(text)
        total += len(text) + 1
        if total >= n_chars:
            break
    corpus = "\n".join(parts)[:n_chars]
    if len(corpus) < n_chars:
        raise ValueError(f"the standard library at {root} has {len(corpus)} characters of source, fewer than "
                         f"n_chars={n_chars}")
    _STDLIB_CACHE[n_chars] = corpus
    return corpus


class CharLMTask:
    """Character-level language modelling on :func:`stdlib_corpus` (128 ASCII tokens).

    Parameters
    ----------
    seq_len : int, default 64
        Window length.
    n_chars : int, default 400_000
        Corpus length; the last ``val_fraction`` is held out.
    val_fraction : float, default 0.1
        Held-out share.
    """

    name = "charlm"
    vocab_size = 128

    def __init__(self, *, seq_len: int = 64, n_chars: int = 400_000, val_fraction: float = 0.1) -> None:
        if not 0.0 < val_fraction < 1.0:
            raise ValueError(f"val_fraction must lie in (0, 1), got {val_fraction!r}")
        if seq_len < 2:
            raise ValueError(f"seq_len must be >= 2, got {seq_len!r}")
        data = torch.tensor(np.frombuffer(stdlib_corpus(n_chars).encode("ascii"), dtype=np.uint8).astype(np.int64))
        cut = int(len(data) * (1.0 - val_fraction))
        self.seq_len, self.train_data, self.val_data = seq_len, data[:cut], data[cut:]
        self.max_sequence_length = seq_len

    def check_vocab(self, vocab_size: int) -> None:
        """Raise when ``vocab_size < 128``.

        Parameters
        ----------
        vocab_size : int
            The model's vocabulary size.
        """
        if vocab_size < self.vocab_size:
            raise ValueError(f"task 'charlm' uses 128 ASCII tokens but the model's vocab_size is {vocab_size}")

    def sample(self, n: int, random_state: RandomStateLike = None, *, split: str = "train") -> TokenBatch:
        """``n`` random windows of the train or validation text.

        Parameters
        ----------
        n : int
            Batch size.
        random_state : None, int or numpy Generator
            Source of the window starts.
        split : {"train", "val"}, default "train"
            Which part of the corpus.

        Returns
        -------
        TokenBatch
            Windows as ids; every position is a target.
        """
        if split not in ("train", "val"):
            raise ValueError(f"split must be 'train' or 'val', got {split!r}")
        data = self.train_data if split == "train" else self.val_data
        starts = check_random_state(random_state).integers(0, len(data) - self.seq_len, size=n)
        ids = torch.stack([data[s:s + self.seq_len] for s in starts.tolist()])
        return TokenBatch(ids, ids.clone(), [])

    def val_batches(self, n: int, random_state: RandomStateLike = None, *, batch_size: int = 64) -> list[TokenBatch]:
        """The ``n`` validation windows ``train.lm_loss`` scores (the same draws: batch by batch from one stream).

        Parameters
        ----------
        n : int
            Windows in all.
        random_state : None, int or numpy Generator
            Source of the window starts.
        batch_size : int, default 64
            Windows per batch.

        Returns
        -------
        list of TokenBatch
        """
        check_param("n", n, [Interval(int, 1, None, closed="left")], owner="CharLMTask.val_batches")
        check_param("batch_size", batch_size, [Interval(int, 1, None, closed="left")], owner="CharLMTask.val_batches")
        rng = check_random_state(random_state)
        return [self.sample(min(batch_size, n - start), rng, split="val") for start in range(0, n, batch_size)]


#: Dirichlet concentrations the n-gram tables choose from, on a held-out tenth of the training text.
NGRAM_CONCENTRATIONS = (0.01, 0.03, 0.1, 0.3, 1.0, 3.0, 10.0, 30.0, 100.0)
NGRAM_NAMES = ("unigram", "bigram", "order-2")


def _ngram_fit(ids: np.ndarray, vocab: int, concentrations: tuple[float, ...]) -> list[np.ndarray]:
    """Probability tables ``P0[c]``, ``P1[b, c]``, ``P2[a, b, c]`` up to ``len(concentrations)``.

    ``P0`` is add-one; each higher order is its counts interpolated with the order below under a Dirichlet
    prior: ``(n(ctx, c) + k P_lower(c | shorter ctx)) / (n(ctx) + k)``.
    """
    tables = [(np.bincount(ids, minlength=vocab) + 1.0) / (len(ids) + vocab)]
    for order, k in enumerate(concentrations, start=1):
        index = np.zeros(len(ids) - order, dtype=np.int64)
        for j in range(order + 1):
            index = index * vocab + ids[j:len(ids) - order + j]
        counts = np.bincount(index, minlength=vocab ** (order + 1)).reshape((vocab,) * (order + 1)).astype(float)
        lower = tables[-1] if order == 1 else np.broadcast_to(tables[-1], (vocab,) * (order + 1))
        tables.append((counts + k * lower) / (counts.sum(-1, keepdims=True) + k))
    return tables


def _ngram_nll(tables: list[np.ndarray], windows: np.ndarray) -> float:
    """Mean nats per target of ``windows`` (targets at positions 1.., context cut at the window start)."""
    order = len(tables) - 1
    total, count = 0.0, 0
    for t in range(1, windows.shape[1]):
        m = min(order, t)
        probs = tables[m][tuple(windows[:, t - m + j] for j in range(m)) + (windows[:, t],)]
        total += float(-np.log(probs).sum())
        count += len(windows)
    return total / count


def ngram_tables(ids: Any, *, order: int, vocab_size: int = 128,
                 concentrations: tuple[float, ...] = NGRAM_CONCENTRATIONS) -> list[np.ndarray]:
    """Character n-gram tables fitted to ``ids``, each order's smoothing chosen on held-out text.

    ``P0`` is the add-one unigram; ``P1[b, c]`` and ``P2[a, b, c]`` interpolate their counts with the order
    below, ``(n(ctx, c) + k P_lower) / (n(ctx) + k)``; ``k`` of each order is the concentration with the lowest
    loss on the last tenth of ``ids`` when fitted on the first nine tenths, then the tables are refitted on
    all of ``ids``.

    Parameters
    ----------
    ids : array-like of int, shape (n,)
        Training text as token ids in ``[0, vocab_size)``.
    order : {0, 1, 2}
        Context length of the highest table.
    vocab_size : int, default 128
        Alphabet size.
    concentrations : tuple of float
        Candidates for each order's ``k``.

    Returns
    -------
    list of ndarray
        ``[P0, P1, ...]`` up to ``order``; each sums to 1 over its last axis.

    Examples
    --------
    >>> import numpy as np
    >>> tables = ngram_tables(np.array([0, 1, 2] * 50), order=2, vocab_size=3)
    >>> round(float(tables[2][0, 1, 2]), 2)
    1.0
    """
    check_param("order", order, [Interval(int, 0, 2, closed="both")], owner="ngram_tables")
    check_param("vocab_size", vocab_size, [Interval(int, 1, 256, closed="both")], owner="ngram_tables")
    if isinstance(concentrations, (str, bytes)) or not hasattr(concentrations, "__len__") or not concentrations:
        raise ValueError(f"ngram_tables: concentrations must be a non-empty sequence of positive floats, "
                         f"got {concentrations!r}")
    for k in concentrations:
        check_param("concentrations", k, [Interval(float, 0, None, closed="neither")], owner="ngram_tables")
    raw = np.asarray(ids)
    if raw.ndim != 1 or not (np.issubdtype(raw.dtype, np.integer) or raw.dtype == bool):
        raise TypeError(f"ngram_tables: ids must be a 1-D array of integer token ids, got dtype {raw.dtype} "
                        f"and shape {raw.shape}")
    data = raw.astype(np.int64)
    if data.size < 10 * (order + 1) or data.min() < 0 or data.max() >= vocab_size:
        where = f"in [{data.min()}, {data.max()}]" if data.size else "(empty)"
        raise ValueError(f"ngram_tables: ids must hold at least {10 * (order + 1)} values in [0, {vocab_size}), "
                         f"got {data.size} values {where}")
    cut = int(0.9 * len(data))
    chosen: tuple[float, ...] = ()
    for _ in range(order):
        best = min(concentrations, key=lambda k: _ngram_nll(_ngram_fit(data[:cut], vocab_size, (*chosen, k)),
                                                            data[cut:][None, :]))
        chosen = (*chosen, best)
    return _ngram_fit(data, vocab_size, chosen)


def ngram_baselines(task: CharLMTask, *, n: int = 256, random_state: RandomStateLike = None,
                    batch_size: int = 64) -> dict[str, float]:
    """Loss of unigram, bigram and order-2 character tables on the windows ``train.lm_loss`` scores.

    The tables (:func:`ngram_tables`) are fitted on the training split; the windows are those of
    ``train.lm_loss(model, task, n=n, random_state=random_state, batch_size=batch_size)``, with the same
    targets (positions 1 .. ``seq_len - 1``; the context is cut at the window start, as the model's is).

    Parameters
    ----------
    task : CharLMTask
        The task.
    n : int, default 256
        Validation windows.
    random_state : None, int or numpy Generator
        Source of the window starts.
    batch_size : int, default 64
        Windows per batch (the draws depend on it, as in ``lm_loss``).

    Returns
    -------
    dict of str to float
        Nats per character of ``unigram``, ``bigram`` and ``order-2``.
    """
    check_param("n", n, [Interval(int, 1, None, closed="left")], owner="ngram_baselines")
    check_param("batch_size", batch_size, [Interval(int, 1, None, closed="left")], owner="ngram_baselines")
    windows = torch.cat([b.input_ids for b in task.val_batches(n, random_state, batch_size=batch_size)]).numpy()
    tables = ngram_tables(task.train_data.numpy(), order=2, vocab_size=task.vocab_size)
    return {name: _ngram_nll(tables[:order + 1], windows) for order, name in enumerate(NGRAM_NAMES)}


@dataclass(frozen=True)
class RegressionBatch:
    """In-context regression prompts.

    Attributes
    ----------
    xs : Tensor, shape (n, points, dims)
        Inputs (coordinates beyond the active dimensions of a dimension curriculum are 0).
    ys : Tensor, shape (n, points)
        Targets.
    scale : float, optional
        Divisor of the squared error, so that predicting 0 scores about 1 (default: ``dims``).

    Raises
    ------
    ValueError
        When ``xs`` is not 3-dimensional, ``ys`` is not of shape ``xs.shape[:2]`` (it would broadcast in the
        errors) or ``scale`` is not a positive finite number.
    """

    xs: torch.Tensor
    ys: torch.Tensor
    scale: float | None = None

    def __post_init__(self) -> None:
        if self.xs.dim() != 3 or tuple(self.ys.shape) != tuple(self.xs.shape[:2]):
            raise ValueError(f"xs must have shape (n, points, dims) and ys (n, points); got {tuple(self.xs.shape)} "
                             f"and {tuple(self.ys.shape)}")
        if self.scale is not None and not (math.isfinite(self.scale) and self.scale > 0):
            raise ValueError(f"scale must be a positive finite number, got {self.scale!r}")

    @property
    def error_scale(self) -> float:
        """The divisor of squared errors: :attr:`scale`, or the dimension when it is unset."""
        return float(self.xs.shape[-1] if self.scale is None else self.scale)


def _check_size(name: str, value: Any, low: int, high: int | None = None) -> None:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < low or (
            high is not None and value > high):
        bound = f"[{low}, {high}]" if high is not None else f">= {low}"
        raise ValueError(f"{name} must be an int in {bound}, got {value!r}")


class InContextTask(ABC):
    """A family of functions learned in context (Garg et al., 2022): ``x ~ N(0, I)``, one function per prompt.

    Parameters
    ----------
    n_dims : int, default 5
        Input dimension (the model's read-in width).
    n_points : int, default 11
        Examples per prompt.

    Notes
    -----
    :meth:`sample` accepts a smaller number of active dimensions and points, as a curriculum uses them: the
    inputs keep ``n_dims`` coordinates, those beyond the active ones are 0, and the function only reads the
    active ones.
    """

    name = "in_context"

    def __init__(self, *, n_dims: int = 5, n_points: int = 11) -> None:
        _check_size("n_dims", n_dims, 1)
        _check_size("n_points", n_points, 1)
        self.n_dims, self.n_points = int(n_dims), int(n_points)

    @abstractmethod
    def _targets(self, xs: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        """``ys`` of shape ``(n, points)`` for inputs ``xs`` of shape ``(n, points, active dims)``."""

    def _scale(self, dims: int) -> float:
        return float(dims)

    def sample(self, n: int, random_state: RandomStateLike = None, *, n_dims: int | None = None,
               n_points: int | None = None) -> RegressionBatch:
        """``n`` prompts, each with its own function.

        Parameters
        ----------
        n : int
            Prompts.
        random_state : None, int or numpy Generator
            Source of the inputs and the functions.
        n_dims : int, optional
            Active dimensions (default all); the others are 0.
        n_points : int, optional
            Examples per prompt (default :attr:`n_points`).

        Returns
        -------
        RegressionBatch
            ``xs``, ``ys`` in float32 and the error scale.
        """
        d = self.n_dims if n_dims is None else n_dims
        p = self.n_points if n_points is None else n_points
        _check_size("n_dims", d, 1, self.n_dims)
        _check_size("n_points", p, 1, self.n_points)
        rng = check_random_state(random_state)
        xs = rng.standard_normal((n, p, self.n_dims))
        xs[:, :, d:] = 0.0
        ys = self._targets(xs[:, :, :d], rng)
        return RegressionBatch(torch.tensor(xs, dtype=torch.float32), torch.tensor(ys, dtype=torch.float32),
                               self._scale(d))


class RegressionTask(InContextTask):
    """In-context linear regression after Garg et al. (2022): ``y = <w, x> (+ noise)``, ``x, w ~ N(0, I)``.

    Parameters
    ----------
    n_dims : int, default 5
        Input dimension.
    n_points : int, default 11
        Examples per prompt.
    sparsity : int, optional
        Non-zero coordinates of ``w`` (sparse regression).
    noise_std : float, default 0.0
        Standard deviation of additive noise on ``y`` (noisy regression).
    """

    def __init__(self, *, n_dims: int = 5, n_points: int = 11, sparsity: int | None = None,
                 noise_std: float = 0.0) -> None:
        if n_dims < 1 or n_points < 1:
            raise ValueError(f"n_dims and n_points must be >= 1, got {n_dims}, {n_points}")
        super().__init__(n_dims=n_dims, n_points=n_points)
        if sparsity is not None and not 1 <= sparsity <= n_dims:
            raise ValueError(f"sparsity must lie in [1, n_dims={n_dims}], got {sparsity}")
        if noise_std < 0:
            raise ValueError(f"noise_std must be >= 0, got {noise_std}")
        self.sparsity, self.noise_std = sparsity, noise_std
        self.name = ("sparse_linear_regression" if sparsity else
                     "noisy_linear_regression" if noise_std else "linear_regression")

    def _targets(self, xs: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        n, d = xs.shape[0], xs.shape[-1]
        w = rng.standard_normal((n, self.n_dims))[:, :d]
        if self.sparsity is not None:
            keep = np.argsort(rng.random((n, self.n_dims)), axis=1)[:, : self.sparsity]
            mask = np.zeros((n, self.n_dims))
            np.put_along_axis(mask, keep, 1.0, axis=1)
            w = w * mask[:, :d]
        ys = np.einsum("npd,nd->np", xs, w)
        if self.noise_std:
            ys = ys + self.noise_std * rng.standard_normal(ys.shape)
        return ys


class DecisionTreeTask(InContextTask):
    """Depth-``depth`` decision trees learned in context (Garg et al.).

    Every internal node tests ``x_c > 0`` for a uniformly drawn active coordinate ``c``; leaf values are
    standard normal.

    Parameters
    ----------
    n_dims : int, default 5
        Input dimension.
    n_points : int, default 11
        Examples per prompt.
    depth : int, default 4
        Tests on the path from the root to a leaf.

    Notes
    -----
    The error is not divided by the dimension: leaf values have unit variance, so predicting 0 scores 1.

    Examples
    --------
    >>> batch = DecisionTreeTask(n_dims=3, n_points=6, depth=2).sample(4, random_state=0)
    >>> tuple(batch.xs.shape), tuple(batch.ys.shape), batch.error_scale
    ((4, 6, 3), (4, 6), 1.0)
    """

    name = "decision_tree"

    def __init__(self, *, n_dims: int = 5, n_points: int = 11, depth: int = 4) -> None:
        super().__init__(n_dims=n_dims, n_points=n_points)
        _check_size("depth", depth, 1, 16)
        self.depth = int(depth)

    def _targets(self, xs: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        n, p, d = xs.shape
        nodes = 2 ** (self.depth + 1) - 1
        coords = rng.integers(0, d, size=(n, nodes))
        values = rng.standard_normal((n, nodes))
        rows = np.arange(n)[:, None]
        node = np.zeros((n, p), dtype=np.int64)
        for _ in range(self.depth):
            c = coords[rows, node]
            right = np.take_along_axis(xs, c[..., None], axis=2)[..., 0] > 0
            node = 2 * node + 1 + right
        return values[rows, node]

    def _scale(self, dims: int) -> float:
        return 1.0


class ReluNetTask(InContextTask):
    """Two-layer ReLU networks learned in context (Garg et al.).

    ``y = sqrt(2 / hidden) * W2 relu(W1 x)`` with standard normal ``W1`` (``hidden x dims``) and ``W2``.

    Parameters
    ----------
    n_dims : int, default 5
        Input dimension.
    n_points : int, default 11
        Examples per prompt.
    hidden : int, default 100
        Hidden units.
    """

    name = "relu_2nn_regression"

    def __init__(self, *, n_dims: int = 5, n_points: int = 11, hidden: int = 100) -> None:
        super().__init__(n_dims=n_dims, n_points=n_points)
        _check_size("hidden", hidden, 1)
        self.hidden = int(hidden)

    def _targets(self, xs: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        n, _, d = xs.shape
        w1 = rng.standard_normal((n, d, self.hidden))
        w2 = rng.standard_normal((n, self.hidden))
        return np.einsum("nph,nh->np", np.maximum(np.einsum("npd,ndh->nph", xs, w1), 0.0), w2) * np.sqrt(
            2.0 / self.hidden)


def regression_baselines(batch: RegressionBatch, *, ridge: float = 0.1, k_neighbours: int = 3,
                         lasso: float | None = None) -> dict[str, np.ndarray]:
    """Normalised squared error of the classical in-context predictors at every prompt length.

    The prediction for point ``i`` uses points ``0 .. i-1`` only (0 for ``i = 0``); errors are divided by
    the batch's error scale (the dimension for linear regression), as in Garg et al.

    Parameters
    ----------
    batch : RegressionBatch
        The prompts.
    ridge : float, default 0.1
        Penalty of the ridge predictor.
    k_neighbours : int, default 3
        Neighbours of the k-NN predictor (fewer when fewer points are seen).
    lasso : float, optional
        Also score scikit-learn's ``Lasso(alpha=lasso, fit_intercept=False)`` fitted to every prefix of every
        prompt (one fit each; needs scikit-learn, in the ``peers`` extra).

    Returns
    -------
    dict of str to ndarray, shape (points,)
        ``least_squares`` (minimum-norm), ``ridge``, ``knn``, ``averaging`` (``w = mean(y_j x_j)``) and,
        when asked, ``lasso``.

    Raises
    ------
    ImportError
        When ``lasso`` is given and scikit-learn is not installed.
    ValueError
        When ``lasso`` is not positive.
    """
    xs, ys = batch.xs.double().numpy(), batch.ys.double().numpy()
    n, p, d = xs.shape
    names = ("least_squares", "ridge", "knn", "averaging") + (() if lasso is None else ("lasso",))
    if lasso is not None:
        if not lasso > 0:
            raise ValueError(f"lasso must be > 0, got {lasso!r}")
        try:
            from sklearn.linear_model import Lasso
        except ImportError as err:  # pragma: no cover - depends on the environment
            raise ImportError("the lasso baseline needs scikit-learn: pip install "
                              "'looped-transformers[peers]'") from err
    preds = {name: np.zeros((n, p)) for name in names}
    for i in range(1, p):
        x, y, q = xs[:, :i], ys[:, :i], xs[:, i]
        w_ls = np.einsum("nde,ne->nd", np.linalg.pinv(x), y)
        preds["least_squares"][:, i] = np.einsum("nd,nd->n", w_ls, q)
        gram = np.einsum("nid,nie->nde", x, x) + ridge * np.eye(d)
        w_r = np.linalg.solve(gram, np.einsum("nid,ni->nd", x, y)[..., None])[..., 0]
        preds["ridge"][:, i] = np.einsum("nd,nd->n", w_r, q)
        if lasso is not None:
            for k in range(n):
                fit = Lasso(alpha=lasso, fit_intercept=False, max_iter=100_000).fit(x[k], y[k])
                preds["lasso"][k, i] = float(fit.coef_ @ q[k])
        dist = ((x - q[:, None]) ** 2).sum(-1)
        k = min(k_neighbours, i)
        nearest = np.argsort(dist, axis=1)[:, :k]
        preds["knn"][:, i] = np.take_along_axis(y, nearest, axis=1).mean(1)
        preds["averaging"][:, i] = np.einsum("nd,nd->n", (x * y[..., None]).mean(1), q)
    return {name: ((pred - ys) ** 2).mean(0) / batch.error_scale for name, pred in preds.items()}


def xgboost_baseline(batch: RegressionBatch, **params: Any) -> np.ndarray:
    """Normalised squared error of gradient-boosted trees (XGBoost) fitted in context, at every prompt length.

    For prompt ``k`` and length ``i >= 1`` an ``xgboost.XGBRegressor`` is fitted on points ``0 .. i-1`` and
    predicts point ``i`` (0 at ``i = 0``); Garg et al.'s baseline for decision trees. Needs the ``xgboost``
    extra.

    Parameters
    ----------
    batch : RegressionBatch
        The prompts (each length of each prompt is one fit: keep batches small).
    **params
        Keyword arguments of ``XGBRegressor`` (default: XGBoost's defaults, one thread, ``random_state=0``).

    Returns
    -------
    ndarray, shape (points,)
        Mean over prompts of the squared error divided by the batch's error scale.

    Raises
    ------
    ImportError
        When ``xgboost`` is not installed.
    """
    try:
        from xgboost import XGBRegressor
    except ImportError as err:  # pragma: no cover - depends on the environment
        raise ImportError("xgboost_baseline needs xgboost: pip install 'looped-transformers[xgboost]'") from err
    xs, ys = batch.xs.double().numpy(), batch.ys.double().numpy()
    n, p, _ = xs.shape
    pred = np.zeros((n, p))
    options = {"n_jobs": 1, "random_state": 0, **params}
    for k in range(n):
        for i in range(1, p):
            model = XGBRegressor(**options).fit(xs[k, :i], ys[k, :i])
            pred[k, i] = float(model.predict(xs[k, i:i + 1])[0])
    return ((pred - ys) ** 2).mean(0) / batch.error_scale


def make_task(name: str, **kwargs: Any) -> DPTask | InContextTask | CharLMTask:
    """A task by name.

    Parameters
    ----------
    name : str
        One of :data:`TASKS`.
    **kwargs
        The task's own parameters.

    Returns
    -------
    DPTask, RegressionTask or CharLMTask
        The task.

    Examples
    --------
    >>> make_task("ed", max_length=6).vocab_size
    55
    """
    if name in DP_TASKS:
        return DPTask(name, **kwargs)
    if name == "charlm":
        return CharLMTask(**kwargs)
    if name == "sparse_linear_regression":
        return RegressionTask(**{"sparsity": 2, **kwargs})
    if name == "noisy_linear_regression":
        return RegressionTask(**{"noise_std": 0.5, **kwargs})
    if name == "linear_regression":
        return RegressionTask(**kwargs)
    if name == "decision_tree":
        return DecisionTreeTask(**kwargs)
    if name == "relu_2nn_regression":
        return ReluNetTask(**kwargs)
    raise ValueError(f"unknown task {name!r}; accepted: {', '.join(TASKS)}")

