"""HELM's per-instance overlap metrics (``compute_metrics_from_ngrams``) from scan counts.

For one n and one part (``input``, or ``references`` joined by spaces) of an instance, with ``c(g)`` the
corpus count of n-gram ``g`` (0 unless ``g`` is an n-gram of that part) and a frequency filter ``f``
(an n-gram counts only when ``c(g) <= f``):

- binary: 1 if some n-gram of the part counts, else 0;
- jaccard: the fraction of the part's n-grams (with repeats) that count; weighted: the sum of ``1/c(g)``
  over those n-grams divided by the number of n-grams;
- token: the fraction of the part's tokens covered by a counted n-gram (an n-gram at position ``i``
  covers tokens ``i .. i+n-1``); weighted: each covered token weighs ``1/w``, with ``w`` the smallest
  count in its contiguous run of counted n-grams, exactly as HELM's loop carries it.

A part with fewer than ``n`` tokens has no n-gram: HELM divides by zero there; this package returns
``nan`` for jaccard and token and 0 for binary.
"""

from __future__ import annotations

import math
import numbers
from dataclasses import asdict, dataclass
from typing import Any

from train_test_overlap.index import OverlapCounts

__all__ = ["InstanceMetrics", "helm_metric_records", "metrics", "part_metrics"]

METRIC_PARTS = ("input", "references")


@dataclass(frozen=True)
class InstanceMetrics:
    """HELM's overlap scores of one instance part (binary, Jaccard and token; the last two also weighted).

    Attributes
    ----------
    test_set, split, instance_id, part : str
    n : int
    frequency_filter : int or None
    num_ngrams : int
        n-grams of the part (0 when it has fewer than n tokens).
    binary : int
    jaccard, weighted_jaccard, token, weighted_token : float
    """

    test_set: str
    split: str
    instance_id: str
    part: str
    n: int
    frequency_filter: int | None
    num_ngrams: int
    binary: int
    jaccard: float
    weighted_jaccard: float
    token: float
    weighted_token: float

    def as_dict(self) -> dict[str, Any]:
        """The fields as a dict."""
        return asdict(self)


def part_metrics(grams: list[tuple[Any, ...]], count: Any, n: int, frequency_filter: int | None) -> tuple[int, float, float, float, float]:
    """The five scores of one sequence of n-grams.

    Parameters
    ----------
    grams : list of tuple
        The part's n-grams in order (``len(tokens) - n + 1`` of them).
    count : callable
        ``count(gram) -> int``, the corpus count (0 when absent).
    n : int
    frequency_filter : int or None

    Returns
    -------
    tuple
        ``(binary, jaccard, weighted_jaccard, token, weighted_token)``.
    """
    if not grams:
        return 0, math.nan, math.nan, math.nan, math.nan
    f = frequency_filter
    hits = 0
    wsum = 0.0
    binary = 0
    budget = 0
    weight = 0
    covered = 0
    tsum = 0.0
    for g in grams:
        c = count(g)
        if c != 0 and (f is None or c <= f):
            hits += 1
            wsum += 1 / c
            binary = 1
        # token coverage: HELM's state machine (a run of counted n-grams carries its smallest count)
        if (f is None or c <= f or (weight != 0 and weight <= f)) and c != 0:
            budget = n
            weight = min(c, weight) if weight > 0 else c
        if budget > 0:
            budget -= 1
            covered += 1
            tsum += 1 / weight
        else:
            weight = 0
    for _ in range(n - 1):
        if budget > 0:
            budget -= 1
            covered += 1
            tsum += 1 / weight
    total = len(grams)
    tokens = total + n - 1
    return binary, hits / total, wsum / total, covered / tokens, tsum / tokens


def _check_filter(frequency_filter: Any) -> int | None:
    if frequency_filter is None:
        return None
    if isinstance(frequency_filter, bool) or not isinstance(frequency_filter, numbers.Integral) or frequency_filter < 1:
        raise ValueError(f"frequency_filter must be None or an int >= 1 (HELM uses 10), got {frequency_filter!r}")
    return int(frequency_filter)


def metrics(counts: OverlapCounts, *, n: int = 13, frequency_filter: int | None = None,
            parts: tuple[str, ...] = METRIC_PARTS, only_overlapping: bool = False) -> list[InstanceMetrics]:
    """HELM's per-instance metrics for every instance of every test set.

    Parameters
    ----------
    counts : OverlapCounts
        A scan's result.
    n : int, default 13
        Must be one of the index's n.
    frequency_filter : int or None, default None
        Count only n-grams that occur at most this many times in the corpus (HELM's filter is 10).
    parts : tuple of str, default ("input", "references")
        References are joined by single spaces and tokenized again, as HELM does.
    only_overlapping : bool, default False
        Keep only parts with at least one overlapping n-gram before filtering (the entries HELM writes).

    Returns
    -------
    list of InstanceMetrics
        In test-set, instance, part order.
    """
    counts._check_n(n)
    f = _check_filter(frequency_filter)
    index = counts.index
    for p in parts:
        if p not in METRIC_PARTS:
            raise ValueError(f"metrics are defined for parts {METRIC_PARTS}, got {p!r}")
    tok = index.tokenizer.tokenize
    rows = []
    for s, ts in enumerate(index.test_sets):
        for i, inst in enumerate(ts.instances):
            for part in parts:
                e = index.entry(s, i, part)
                per = counts.entry_counts(n, e)
                if only_overlapping and not per:
                    continue
                text = inst.input if part == "input" else " ".join(inst.references)
                ids = index.token_ids(tok(text))
                grams = [tuple(ids[j:j + n]) for j in range(len(ids) - n + 1)]
                scores = part_metrics(grams, lambda g, per=per: per.get(g, 0), n, f)
                rows.append(InstanceMetrics(ts.name, ts.split, inst.id, part, n, f, len(grams), *scores))
    return rows


def helm_metric_records(counts: OverlapCounts, *, n: int = 13, frequency_filter: int = 10) -> list[dict[str, Any]]:
    """The records HELM's ``compute_metrics_from_ngrams.py`` writes for ``--N n``.

    Parameters
    ----------
    counts : OverlapCounts
    n : int, default 13
    frequency_filter : int, default 10
        HELM writes every entry without a filter and with this one.

    Returns
    -------
    list of dict
        ``entry_data_overlap_key`` and ``overlap_metric`` (``metric_score``, ``metric_protocol_spec`` with
        ``partial_overlap_spec`` 0 binary / 1 jaccard / 2 token and ``frequency_spec``), for every input
        and references part with an overlapping n-gram.
    """
    out = []
    filtered = {(m.test_set, m.split, m.instance_id, m.part): m
                for m in metrics(counts, n=n, frequency_filter=frequency_filter, only_overlapping=True)}
    plain = metrics(counts, n=n, only_overlapping=True)
    keys = {ts.key: ts for ts in counts.index.test_sets}
    for m in plain:
        ts = keys[(m.test_set, m.split)]
        key = {"stats_key": {"light_scenario_key": ts.helm_key(), "overlap_protocol_spec": {"n": n}},
               "part": m.part, "instance_id": m.instance_id}
        for row, fv in ((m, 0), (filtered[(m.test_set, m.split, m.instance_id, m.part)], frequency_filter)):
            for spec, weighting, score in ((0, False, row.binary), (1, False, row.jaccard), (1, True, row.weighted_jaccard),
                                           (2, False, row.token), (2, True, row.weighted_token)):
                out.append({"entry_data_overlap_key": key, "overlap_metric": {
                    "metric_score": score, "metric_protocol_spec": {"partial_overlap_spec": spec,
                                                                    "frequency_spec": {"filter_value": fv, "weighting": weighting}}}})
    return out
