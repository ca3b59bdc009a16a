"""A HELM-faithful reference: the data structures and loops of HELM's data_overlap scripts, in plain Python.

Index: ``{n: {n-gram tuple: set of (test set, instance id, part)}}``; scan: for every document, every n
and every n-gram window, a dict lookup, and for every hit one increment per holder part (HELM's
``--output-ngrams`` path); metrics: HELM's three loops per part. Used as the brute-force oracle of the
tests and as the baseline of the benchmark. Not part of the package.
"""

from __future__ import annotations

from collections import defaultdict
from typing import Any


def ngrams(tokens: list[str], n: int) -> list[tuple[str, ...]]:
    return [tuple(tokens[i:i + n]) for i in range(len(tokens) - n + 1)]


def build_index(test_sets: list[Any], n_values: list[int], tokenize: Any) -> dict[int, dict[tuple[str, ...], set]]:
    index: dict[int, dict[tuple[str, ...], set]] = {n: defaultdict(set) for n in n_values}
    for ts in test_sets:
        for inst in ts.instances:
            inp = tokenize(inst.input)
            for n in n_values:
                for g in ngrams(inp, n):
                    index[n][g].add((ts.key, inst.id, "input"))
                for ref in inst.references:
                    for g in ngrams(tokenize(ref), n):
                        index[n][g].add((ts.key, inst.id, "references"))
                for ref in inst.references:
                    for g in ngrams(inp[-(n - 1):] + tokenize(ref)[:n - 1], n):
                        index[n][g].add((ts.key, inst.id, "intersect"))
    return index


def scan(index: dict[int, dict[tuple[str, ...], set]], documents: Any, tokenize: Any) -> dict[tuple, dict[tuple[str, ...], int]]:
    """``{(n, test set key, instance id, part): {n-gram: corpus count}}``."""
    counts: dict[tuple, dict[tuple[str, ...], int]] = defaultdict(lambda: defaultdict(int))
    for doc in documents:
        tokens = tokenize(doc)
        for n, table in index.items():
            for g in ngrams(tokens, n):
                if g in table:
                    for key in table[g]:
                        counts[(n, *key)][g] += 1
    return counts


def metric_scores(tokens: list[str], gram_counts: dict[tuple[str, ...], int], n: int, f: int) -> tuple:
    """HELM's binary, jaccard (plain, weighted) and token (plain, weighted) for one part; f = 0: no filter."""
    binary = 0
    hits = 0
    wj = 0.0
    total = 0
    for g in ngrams(tokens, n):
        c = gram_counts.get(g, 0)
        if (f == 0 or c <= f) and c != 0:
            binary = 1
            hits += 1
            wj += 1 / c
        total += 1
    budget = weight = covered = 0
    wt = 0.0
    seen = 0
    for g in ngrams(tokens, n):
        c = gram_counts.get(g, 0)
        if f == 0 or c <= f or (weight != 0 and weight <= f):
            if c != 0:
                budget = n
                weight = min(c, weight) if weight > 0 else c
        if budget > 0:
            budget -= 1
            covered += 1
            wt += 1 / weight
        else:
            weight = 0
        seen += 1
    for _ in range(n - 1):
        if budget > 0:
            budget -= 1
            covered += 1
            wt += 1 / weight
        seen += 1
    return binary, hits / total, wj / total, covered / seen, wt / seen
