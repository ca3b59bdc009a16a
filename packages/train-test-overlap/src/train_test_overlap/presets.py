"""Developers' contamination rules as presets, all evaluated from one streaming pass over a corpus.

Each preset fixes a unit (word n-grams under a tokenizer, or character substrings), a per-instance score
and the thresholds that label an instance ``clean``, ``dirty`` or ``ambiguous``. The rules are written
from the developers' technical reports as summarised in the package's notes; ``verified`` says whether a
rule's constants were checked against a primary source or code here, and an unverified preset logs a
warning when it is requested. Scores and thresholds are compared exactly (as fractions of integer
counts), so a rule's boundary is where the report puts it: PaLM's 70% of 8-grams labels 7 of 10
8-grams dirty and 69 of 100 clean.

Scores:

- ``binary``: 1 if any n-gram of the instance occurs in the corpus;
- ``jaccard``: fraction of the instance's n-grams (with repeats) that occur in the corpus;
- ``token``: fraction of the instance's tokens covered by an n-gram that occurs in the corpus;
- ``substring``: 1 if any sampled character substring of the normalised instance occurs in a
  normalised document (GPT-4's rule).
"""

from __future__ import annotations

import dataclasses
import logging
import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any

import numpy as np
from icml25_shared.random import RandomStateLike, check_random_state

from train_test_overlap.data import TestSet, iter_documents
from train_test_overlap.index import CorpusStats, OverlapCounts, OverlapIndex

__all__ = ["PRESETS", "Preset", "PresetResult", "SubstringIndex", "evaluate_presets", "get_preset", "label_scores"]

log = logging.getLogger(__name__)

LABELS = ("clean", "dirty", "ambiguous")


@dataclass(frozen=True)
class Preset:
    """One developer's contamination rule.

    Attributes
    ----------
    name : str
        Registry key (``"gpt3"``, ``"palm"``, ...).
    developer : str
    measure : {"binary", "jaccard", "token", "substring"}
        The per-instance score (see the module docstring).
    tokenizer : str or None
        Tokenizer of the n-gram rules (None for ``substring``).
    n : int or None
        n-gram length (None for ``substring``).
    dirty_at : float
        Dirty when the score is ``>= dirty_at`` (``> dirty_at`` when ``dirty_strict``).
    dirty_strict : bool
    clean_below : float or None
        Clean when the score is ``< clean_below``; None: clean whenever not dirty. Between the two
        thresholds an instance is ``ambiguous``.
    statistic : str
        What the developer reports from the labels.
    rule : str
        The rule in words.
    source : str
        Where the rule comes from.
    verified : bool
        Whether its constants were checked against the source or reference code.
    substring_length, substrings : int
        ``substring`` rules: characters per sampled substring and substrings per instance.
    """

    name: str
    developer: str
    measure: str
    tokenizer: str | None
    n: int | None
    dirty_at: float
    dirty_strict: bool = False
    clean_below: float | None = None
    statistic: str = ""
    rule: str = ""
    source: str = ""
    verified: bool = False
    substring_length: int = 50
    substrings: int = 3

    def __post_init__(self) -> None:
        if self.measure not in ("binary", "jaccard", "token", "substring"):
            raise ValueError(f"measure must be binary, jaccard, token or substring, got {self.measure!r}")
        if not 0.0 <= self.dirty_at <= 1.0 or (self.clean_below is not None and not 0.0 <= self.clean_below <= self.dirty_at):
            raise ValueError(f"thresholds must satisfy 0 <= clean_below <= dirty_at <= 1, got {self.clean_below}, {self.dirty_at}")
        if self.measure != "substring" and (self.n is None or self.n < 1 or self.tokenizer is None):
            raise ValueError(f"preset {self.name!r}: an n-gram rule needs a tokenizer and n >= 1")

    def label(self, hits: int, total: int) -> str:
        """Label an instance from its score ``hits / total`` (exact comparison).

        Parameters
        ----------
        hits, total : int
            Overlapping units and all units (n-grams, tokens, or 0/1 for binary scores). ``total == 0``
            (an instance too short for any unit) is clean: nothing of it can overlap.

        Returns
        -------
        str
            ``"clean"``, ``"dirty"`` or ``"ambiguous"``.
        """
        if total == 0:
            return "clean"
        score = Fraction(hits, total)
        dirty = Fraction(str(self.dirty_at))
        if (score > dirty) if self.dirty_strict else (score >= dirty):
            return "dirty"
        if self.clean_below is None or score < Fraction(str(self.clean_below)):
            return "clean"
        return "ambiguous"


PRESETS: dict[str, Preset] = {p.name: p for p in [
    Preset("helm", "Stanford CRFM (HELM)", "binary", "helm-default", 13, 1.0,
           statistic="fraction of instances whose input shares a 13-gram with the corpus",
           rule="HELM data_overlap: lower-case, split on whitespace and punctuation; any overlapping 13-gram of the input",
           source="stanford-crfm/helm scripts/data_overlap (compute_data_overlap_metrics.py, 003a3c0a)", verified=True),
    Preset("gpt3", "OpenAI", "binary", "janitor", 13, 1.0,
           statistic="accuracy on the clean subset vs all instances",
           rule="dirty if any 13-gram (lower-cased, punctuation deleted, whitespace split) occurs in the corpus",
           source="Brown et al. 2020 (GPT-3), appendix C; n-gram normalisation of lm-evaluation-harness's Janitor "
                  "(checked against its code, 98c1880f); GPT-3 lowered n for short benchmarks, not modelled", verified=False),
    Preset("gpt4", "OpenAI", "substring", None, None, 1.0,
           statistic="accuracy on the non-contaminated subset vs all instances",
           rule="3 random 50-character substrings of the example (whole example if shorter) after removing spaces "
                "and symbols; dirty if any occurs in a training document processed the same way",
           source="OpenAI 2023 (GPT-4 technical report), appendix C", verified=False),
    Preset("palm", "Google", "jaccard", "helm-default", 8, 0.70,
           statistic="accuracy on the clean subset vs all instances",
           rule="contaminated if at least 70% of the example's 8-grams occur at least once in the training corpus",
           source="Chowdhery et al. 2022 (PaLM), section 8", verified=False),
    Preset("llama2", "Meta", "token", "helm-default", 10, 0.80, dirty_strict=True, clean_below=0.20,
           statistic="accuracy on clean / not-clean / not-dirty / dirty subsets",
           rule="a token is contaminated when it lies in a >= 10-token n-gram shared with the corpus; clean if < 20% "
                "of the tokens are contaminated, dirty if > 80% (the 4-token mismatch allowance is not modelled)",
           source="Touvron et al. 2023 (Llama 2), appendix A.6", verified=False),
    Preset("llama3", "Meta", "token", "helm-default", 8, 0.50,
           statistic="estimated performance gain: accuracy on all instances minus accuracy on the clean subset",
           rule="contaminated if a fraction T of the example's tokens lie in an 8-gram that occurs in the corpus; T is "
                "chosen per benchmark (0.5 here: pass dirty_at=)",
           source="Llama Team 2024 (The Llama 3 Herd of Models), section 5.1.4", verified=False),
    Preset("marin", "Marin community", "jaccard", "janitor", 13, 0.50,
           statistic="fraction of flagged instances",
           rule="13-word n-grams; flag when at least half of the example's 13-grams occur in the corpus",
           source="marin-community/marin decontamination pipeline, per the package notes", verified=False),
]}
"""The developers' overlap methodologies by name (``helm``, ``gpt3``, ...), each a :class:`Preset`."""


def get_preset(name: str | Preset, **changes: Any) -> Preset:
    """A registered preset, optionally with changed fields (e.g. ``get_preset("llama3", dirty_at=0.3)``).

    Parameters
    ----------
    name : str or Preset
        A key of :data:`PRESETS` or a Preset.
    **changes
        Fields to replace.

    Returns
    -------
    Preset

    Raises
    ------
    ValueError
        For an unknown name (the accepted names are listed).
    """
    if isinstance(name, Preset):
        preset = name
    else:
        if name not in PRESETS:
            raise ValueError(f"unknown preset {name!r}; accepted: {sorted(PRESETS)}")
        preset = PRESETS[name]
    if changes:
        preset = dataclasses.replace(preset, **changes)
    if not preset.verified:
        log.warning("preset %r: its constants are reconstructed from the report (%s), not verified against it",
                    preset.name, preset.source)
    return preset


def _normalise_chars(text: str) -> str:
    return "".join(ch for ch in text if ch.isalnum())


class SubstringIndex:
    """GPT-4's rule: sampled character substrings of each instance, matched in normalised documents.

    Parameters
    ----------
    test_sets : sequence of TestSet
    length : int, default 50
        Characters per substring (the whole normalised input when shorter).
    samples : int, default 3
        Substrings per instance (start positions drawn without replacement when possible).
    random_state : None, int or Generator, default 0
        Draws the start positions.

    Notes
    -----
    Normalisation keeps the characters for which ``str.isalnum`` is true ("spaces and symbols removed");
    case is kept. Matching uses an Aho-Corasick automaton (``pyahocorasick``, extra ``gpt4``).
    """

    def __init__(self, test_sets: Sequence[TestSet], *, length: int = 50, samples: int = 3,
                 random_state: RandomStateLike = 0) -> None:
        try:
            import ahocorasick
        except ImportError as exc:  # pragma: no cover - depends on the install
            raise ImportError("the gpt4 substring rule needs pyahocorasick: pip install 'train-test-overlap[gpt4]'") from exc
        if length < 1 or samples < 1:
            raise ValueError(f"length and samples must be >= 1, got {length}, {samples}")
        rng = check_random_state(random_state)
        self.test_sets = tuple(test_sets)
        self.substrings: dict[tuple[int, int], list[str]] = {}
        automaton = ahocorasick.Automaton()
        holders: dict[str, list[tuple[int, int]]] = {}
        for s, ts in enumerate(self.test_sets):
            for i, inst in enumerate(ts.instances):
                text = _normalise_chars(inst.input)
                if len(text) <= length:
                    subs = [text] if text else []
                else:
                    starts = rng.choice(len(text) - length + 1, size=min(samples, len(text) - length + 1), replace=False)
                    subs = [text[k:k + length] for k in sorted(starts.tolist())]
                self.substrings[(s, i)] = subs
                for sub in subs:
                    holders.setdefault(sub, []).append((s, i))
        for sub, who in holders.items():
            automaton.add_word(sub, who)
        self._automaton = automaton if holders else None
        if holders:
            automaton.make_automaton()
        self.hits: dict[tuple[int, int], int] = {}

    def add(self, doc: str) -> None:
        """Match one document."""
        if self._automaton is None:
            return
        for _, who in self._automaton.iter(_normalise_chars(doc)):
            for key in who:
                self.hits[key] = self.hits.get(key, 0) + 1


@dataclass
class PresetResult:
    """Labels of one preset on one test set.

    Attributes
    ----------
    preset : Preset
    test_set : str
    split : str
    labels : dict of str to str
        Instance id -> ``clean`` / ``dirty`` / ``ambiguous``.
    scores : dict of str to float
        Instance id -> the preset's score (nan for an instance with no unit).
    fractions : dict of str to float
        Share of instances with each label.
    metric_by_label : dict of str to float
        With ``scores`` given: mean evaluation score on all instances (``"all"``) and on each label's subset.
    """

    preset: Preset
    test_set: str
    split: str
    labels: dict[str, str]
    scores: dict[str, float]
    fractions: dict[str, float] = field(default_factory=dict)
    metric_by_label: dict[str, float] = field(default_factory=dict)

    @property
    def clean_delta(self) -> float:
        """Mean evaluation score on the clean subset minus on all instances (nan without scores or clean ones)."""
        return self.metric_by_label.get("clean", math.nan) - self.metric_by_label.get("all", math.nan)


def _unit_counts(preset: Preset, counts: OverlapCounts, s: int, i: int) -> tuple[int, int]:
    index = counts.index
    n = preset.n
    assert n is not None
    inst = index.test_sets[s].instances[i]
    ids = index.token_ids(index.tokenizer.tokenize(inst.input))
    per = counts.entry_counts(n, index.entry(s, i, "input"))
    hit = [1 if per.get(tuple(ids[j:j + n]), 0) else 0 for j in range(len(ids) - n + 1)]
    if not hit:
        return 0, 0
    if preset.measure == "binary":
        return int(any(hit)), 1
    if preset.measure == "jaccard":
        return sum(hit), len(hit)
    covered = np.zeros(len(ids), dtype=bool)
    for j, h in enumerate(hit):
        if h:
            covered[j:j + n] = True
    return int(covered.sum()), len(ids)


def _check_finite_scores(scores: Mapping[tuple[str, str], Mapping[str, float]]) -> None:
    """Raise ``ValueError`` for an evaluation score that is not a finite number (NaN would spread to every mean)."""
    for key, per_id in scores.items():
        for i, v in per_id.items():
            if not math.isfinite(float(v)):
                raise ValueError(f"score of {i!r} in {tuple(key)} is not finite ({v!r}); drop or fix that instance")


def label_scores(preset: Preset, hits: int, total: int) -> tuple[str, float]:
    """The label and score of one instance (score nan when ``total == 0``)."""
    return preset.label(hits, total), (hits / total if total else math.nan)


def evaluate_presets(test_sets: TestSet | Sequence[TestSet], corpus: Any, presets: Iterable[str | Preset] = ("helm", "gpt3"), *,
                     scores: Mapping[tuple[str, str], Mapping[str, float]] | None = None, random_state: RandomStateLike = 0,
                     text_field: str = "text", errors: str = "strict", lines: bool = True,
                     progress: bool = False) -> tuple[list[PresetResult], dict[str, CorpusStats]]:
    """Label every instance under every preset, reading the corpus once.

    One :class:`~train_test_overlap.OverlapIndex` is built per distinct tokenizer (with every n its
    presets need) and one :class:`SubstringIndex` per substring length and count asked for; each document is
    read once and given to all of them.

    Parameters
    ----------
    test_sets : TestSet or sequence of TestSet
    corpus : path-like, list of Path, or iterable of str
        See :func:`~train_test_overlap.iter_documents`.
    presets : iterable of str or Preset, default ("helm", "gpt3")
    scores : mapping, optional
        ``{(name, split): {instance id: evaluation score}}``: adds the mean score per label. Every key must
        be a scanned test set's ``(name, split)`` (a test set without scores is allowed).
    random_state : None, int or Generator, default 0
        Substring sampling of the gpt4 rule.
    text_field, errors, lines, progress
        Corpus reading options.

    Returns
    -------
    results : list of PresetResult
        One per preset and test set.
    stats : dict of str to CorpusStats
        What was read, per tokenizer name.
    """
    sets = (test_sets,) if isinstance(test_sets, TestSet) else tuple(test_sets)
    if scores is not None:
        _check_finite_scores(scores)
        unknown = [key for key in scores if tuple(key) not in {ts.key for ts in sets}]
        if unknown:
            raise ValueError(f"scores name test sets that were not scanned: {unknown[:5]}; scanned (name, split): "
                             f"{[ts.key for ts in sets]}")
    chosen = [get_preset(p) for p in presets]
    by_tok: dict[str, set[int]] = {}
    for p in chosen:
        if p.measure != "substring":
            by_tok.setdefault(p.tokenizer, set()).add(p.n)  # type: ignore[arg-type]
    indexes = {tok: OverlapIndex(sets, n=sorted(ns), tokenizer=tok, parts=("input",)) for tok, ns in by_tok.items()}
    scanners = {tok: idx.scanner() for tok, idx in indexes.items()}
    # one substring index per (length, samples): two substring rules never share another's sampling
    subs: dict[tuple[int, int], SubstringIndex] = {}
    for p in chosen:
        shape = (p.substring_length, p.substrings)
        if p.measure == "substring" and shape not in subs:
            subs[shape] = SubstringIndex(sets, length=shape[0], samples=shape[1], random_state=random_state)
    docs = iter_documents(corpus, text_field=text_field, errors=errors, lines=lines)
    if progress:
        from tqdm.auto import tqdm

        docs = tqdm(docs, desc="scan", unit="doc")
    for doc in docs:
        for sc in scanners.values():
            sc.add(doc)
        for sub in subs.values():
            sub.add(doc)
    counts = {tok: indexes[tok].finish(sc.result()) for tok, sc in scanners.items()}
    results = []
    for p in chosen:
        for s, ts in enumerate(sets):
            labels, values = {}, {}
            for i, inst in enumerate(ts.instances):
                if p.measure == "substring":
                    sub = subs[(p.substring_length, p.substrings)]
                    has = bool(sub.substrings[(s, i)])
                    hits, total = (int((s, i) in sub.hits), 1) if has else (0, 0)
                else:
                    hits, total = _unit_counts(p, counts[p.tokenizer], s, i)  # type: ignore[index]
                labels[inst.id], values[inst.id] = label_scores(p, hits, total)
            k = len(ts.instances)
            res = PresetResult(p, ts.name, ts.split, labels, values,
                               fractions={lab: (sum(v == lab for v in labels.values()) / k if k else math.nan) for lab in LABELS})
            if scores is not None and ts.key in scores:
                ev = scores[ts.key]
                missing = [inst.id for inst in ts.instances if inst.id not in ev]
                if missing:
                    raise ValueError(f"scores for {ts.key} lack {len(missing)} instance ids, e.g. {missing[:3]}")
                res.metric_by_label["all"] = float(np.mean([ev[i.id] for i in ts.instances])) if k else math.nan
                for lab in LABELS:
                    sel = [ev[i] for i, v in labels.items() if v == lab]
                    res.metric_by_label[lab] = float(np.mean(sel)) if sel else math.nan
            results.append(res)
    return results, {tok: c.stats for tok, c in counts.items()}
