"""Task suites: dynamic programming (direct answer), in-context regression and char-level language modelling.

Dynamic-programming problems are written as token sequences in the CoT_benchmark direct-answer form,
``a b c | d e f <sep> 7 <eos>``, with exact labels from the textbook recurrences; the model is scored on the
answer token after ``<sep>``. In-context regression follows Garg et al. (2022): prompts
``x_1, y_1, ..., x_k, y_k`` read in linearly, the error at each prompt length normalised by the dimension.
The language-modelling corpus is the Python standard library's own source (offline, ASCII).
"""

from __future__ import annotations

import bisect
import sysconfig
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch
from icml25_shared.random import RandomStateLike, check_random_state

__all__ = [
    "DP_TASKS",
    "TASKS",
    "CharLMTask",
    "DPTask",
    "RegressionBatch",
    "RegressionTask",
    "TokenBatch",
    "edit_distance",
    "knapsack",
    "lcs_length",
    "lis_length",
    "make_task",
    "regression_baselines",
    "stdlib_corpus",
    "subset_sum",
]

SPECIALS = ("<pad>", "<sep>", "|", "<eos>")
LETTERS = tuple("abcdefghijklmnopqrstuvwxyz")
DP_TASKS = ("ed", "lis", "lcs", "knapsack", "partial_sum")
REGRESSION_TASKS = ("linear_regression", "sparse_linear_regression", "noisy_linear_regression")
TASKS = (*DP_TASKS, *REGRESSION_TASKS, "charlm")


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


@dataclass(frozen=True)
class RegressionBatch:
    """In-context regression prompts.

    Attributes
    ----------
    xs : Tensor, shape (n, points, dims)
        Inputs.
    ys : Tensor, shape (n, points)
        Targets.
    """

    xs: torch.Tensor
    ys: torch.Tensor


class RegressionTask:
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
        if sparsity is not None and not 1 <= sparsity <= n_dims:
            raise ValueError(f"sparsity must lie in [1, n_dims={n_dims}], got {sparsity}")
        if noise_std < 0:
            raise ValueError(f"noise_std must be >= 0, got {noise_std}")
        self.n_dims, self.n_points, self.sparsity, self.noise_std = n_dims, n_points, sparsity, noise_std
        self.name = ("sparse_linear_regression" if sparsity else
                     "noisy_linear_regression" if noise_std else "linear_regression")

    def sample(self, n: int, random_state: RandomStateLike = None) -> RegressionBatch:
        """``n`` prompts, each with its own weight vector.

        Parameters
        ----------
        n : int
            Prompts.
        random_state : None, int or numpy Generator
            Source of ``x``, ``w`` and the noise.

        Returns
        -------
        RegressionBatch
            ``xs`` and ``ys`` in float32.
        """
        rng = check_random_state(random_state)
        xs = rng.standard_normal((n, self.n_points, self.n_dims))
        w = rng.standard_normal((n, self.n_dims))
        if self.sparsity is not None:
            keep = np.argsort(rng.random((n, self.n_dims)), axis=1)[:, : self.sparsity]
            mask = np.zeros_like(w)
            np.put_along_axis(mask, keep, 1.0, axis=1)
            w = w * mask
        ys = np.einsum("npd,nd->np", xs, w)
        if self.noise_std:
            ys = ys + self.noise_std * rng.standard_normal(ys.shape)
        return RegressionBatch(torch.tensor(xs, dtype=torch.float32), torch.tensor(ys, dtype=torch.float32))


def regression_baselines(batch: RegressionBatch, *, ridge: float = 0.1, k_neighbours: int = 3) -> dict[str, np.ndarray]:
    """Normalised squared error of the classical in-context predictors at every prompt length.

    The prediction for point ``i`` uses points ``0 .. i-1`` only (0 for ``i = 0``); errors are divided by
    the dimension, as in Garg et al.

    Parameters
    ----------
    batch : RegressionBatch
        The prompts.
    ridge : float, default 0.1
        Penalty of the ridge predictor.
    k_neighbours : int, default 3
        Neighbours of the k-NN predictor (fewer when fewer points are seen).

    Returns
    -------
    dict of str to ndarray, shape (points,)
        ``least_squares`` (minimum-norm), ``ridge``, ``knn`` and ``averaging`` (``w = mean(y_j x_j)``).
    """
    xs, ys = batch.xs.double().numpy(), batch.ys.double().numpy()
    n, p, d = xs.shape
    preds = {name: np.zeros((n, p)) for name in ("least_squares", "ridge", "knn", "averaging")}
    for i in range(1, p):
        x, y, q = xs[:, :i], ys[:, :i], xs[:, i]
        w_ls = np.einsum("nde,ne->nd", np.linalg.pinv(x), y)
        preds["least_squares"][:, i] = np.einsum("nd,nd->n", w_ls, q)
        gram = np.einsum("nid,nie->nde", x, x) + ridge * np.eye(d)
        w_r = np.linalg.solve(gram, np.einsum("nid,ni->nd", x, y)[..., None])[..., 0]
        preds["ridge"][:, i] = np.einsum("nd,nd->n", w_r, q)
        dist = ((x - q[:, None]) ** 2).sum(-1)
        k = min(k_neighbours, i)
        nearest = np.argsort(dist, axis=1)[:, :k]
        preds["knn"][:, i] = np.take_along_axis(y, nearest, axis=1).mean(1)
        preds["averaging"][:, i] = np.einsum("nd,nd->n", (x * y[..., None]).mean(1), q)
    return {name: ((pred - ys) ** 2).mean(0) / d for name, pred in preds.items()}


def make_task(name: str, **kwargs: Any) -> DPTask | RegressionTask | CharLMTask:
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
    raise ValueError(f"unknown task {name!r}; accepted: {', '.join(TASKS)}")

