r"""Text and visibility metrics computed as the official WMarkGPT evaluation computes them.

Per item, the reference and the answer are cleaned with ``str.strip('<\\s>')``, which removes the
characters ``<``, ``\``, ``s`` and ``>`` at both ends: a trailing ``</s>`` becomes ``</`` (the slash is
not in the set) and a leading or trailing letter ``s`` goes too. Then

* BLEU-1 is nltk's ``sentence_bleu([reference.split()], answer.split(), weights=(1,))``;
* ROUGE-L is the F value of ``rouge.Rouge().get_scores(answer, reference)`` (the ``rouge`` 1.0.1
  package: summary-level LCS over sentences split on ".", case-sensitive); Google's ``rouge-score``
  ``rougeL`` (one sentence, lower-cased, alphanumeric tokens) gives other values on punctuated text and
  is offered beside it as ``rouge_l(..., variant="rouge-score")``;
* a blank answer (empty after cleaning) scores 0 on BLEU-1 and ROUGE-L and is counted;
* the LLM score is a 0-4 relevance rating from a judge (reported times 25), with 2.5 when the judge
  fails, as the official script does; this module counts those fallbacks;
* ACC compares the labelled visibility with the predicted one, either as the official substring test
  (``label in prediction``, so the label "visible" matches the prediction "invisible") or exactly
  (after ``strip`` and lower-casing).

Visibility scores are compared with the ground-truth scores by Spearman (SRCC) and Pearson (PLCC)
correlation.
"""

from __future__ import annotations

import logging
import math
import re
import textwrap
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np
from numpy.typing import ArrayLike

__all__ = [
    "JUDGE_FALLBACK",
    "JUDGE_PROMPT",
    "JUDGE_SYSTEM_PROMPT",
    "ROUGE_L_VARIANTS",
    "CorrelationResult",
    "EvaluationResult",
    "ItemScores",
    "LLMJudge",
    "RubricJudge",
    "bleu1",
    "clean_text",
    "correlation",
    "evaluate_answers",
    "rouge_l",
    "visibility_accuracy",
]

log = logging.getLogger(__name__)

JUDGE_FALLBACK = 2.5
"""The score the official script records when the LLM judge call fails (mid-scale of 0-4)."""

JUDGE_PROMPT = (
    "Evaluate the relevance between the following description and ground truth on a scale from 0 to 4.\n"
    "Higher scores indicate better relevance. Return only the numeric score.\n"
    'Description: "{candidate}"\nGround Truth: "{reference}" '
)
"""The judge's user prompt, with ``{candidate}`` and ``{reference}`` fields (the official wording)."""

JUDGE_SYSTEM_PROMPT = "You are a helpful watermark discriminator."
"""The judge's system prompt (the official ``gpt_api.py``)."""

ROUGE_L_VARIANTS = ("rouge", "rouge-score")
"""``rouge_l`` variants: the official ``rouge`` 1.0.1 value and Google rouge-score's ``rougeL``."""

_STRIP_CHARS = "<\\s>"


def clean_text(text: str) -> str:
    r"""Strip the characters ``<``, ``\``, ``s`` and ``>`` from both ends, as the official script does.

    Parameters
    ----------
    text : str
        A reference or a model answer.

    Returns
    -------
    str
        ``text.strip('<\\s>')``.

    Raises
    ------
    TypeError
        When ``text`` is not a str.

    Examples
    --------
    >>> clean_text("The watermark visibility is: invisible.</s>")  # the slash stays
    'The watermark visibility is: invisible.</'
    >>> clean_text("shadows")  # the quirk: a letter s at either end goes too
    'hadow'
    """
    if not isinstance(text, str):
        raise TypeError(f"text must be a str, got {type(text).__name__}")
    return text.strip(_STRIP_CHARS)


def bleu1(candidate: str, reference: str) -> float:
    """Sentence BLEU-1 of ``candidate`` against one ``reference`` on whitespace tokens (nltk, no smoothing).

    Parameters
    ----------
    candidate, reference : str
        Already cleaned texts (see :func:`clean_text`).

    Returns
    -------
    float
        BLEU-1 in [0, 1]: clipped unigram precision times the brevity penalty.
    """
    from nltk.translate.bleu_score import sentence_bleu

    _check_str(candidate, "candidate")
    _check_str(reference, "reference")
    return float(sentence_bleu([reference.split()], candidate.split(), weights=(1,)))


def rouge_l(candidate: str, reference: str, *, variant: str = "rouge") -> float:
    """ROUGE-L F value of ``candidate`` against ``reference``.

    Parameters
    ----------
    candidate, reference : str
        Already cleaned, non-empty texts.
    variant : {"rouge", "rouge-score"}, default "rouge"
        ``"rouge"``: the ``rouge`` 1.0.1 package the official evaluation uses,
        ``Rouge().get_scores(candidate, reference)[0]['rouge-l']['f']`` (summary-level union LCS over
        sentences split on ".", case-sensitive, whitespace tokens). ``"rouge-score"``: Google
        rouge-score's ``rougeL`` F measure without stemming (one LCS over the whole text, lower-cased,
        tokens are runs of ``[a-z0-9]``), the value most other papers report. They differ by up to
        about 0.4 on punctuated text.

    Returns
    -------
    float
        The F value in [0, 1].

    Raises
    ------
    ValueError
        When either text is empty or only whitespace (the ``rouge`` package cannot score it), or
        ``variant`` is unknown.

    Examples
    --------
    >>> round(rouge_l("A faint logo. It is top-left.", "a faint logo, top-left"), 4)
    0.4
    >>> round(rouge_l("A faint logo. It is top-left.", "a faint logo, top-left", variant="rouge-score"), 4)
    0.8333
    """
    from icml25_shared.validation import Options, check_param

    check_param("variant", variant, [Options(str, set(ROUGE_L_VARIANTS))], owner="rouge_l")
    _check_str(candidate, "candidate")
    _check_str(reference, "reference")
    for name, text in (("candidate", candidate), ("reference", reference)):
        if not text.strip():
            raise ValueError(f"{name} is empty after cleaning; ROUGE-L is undefined for an empty text")
    if variant == "rouge-score":
        return _rouge_score_l(candidate, reference)
    from rouge import Rouge

    return float(Rouge().get_scores(candidate, reference)[0]["rouge-l"]["f"])


def _rouge_score_l(candidate: str, reference: str) -> float:
    """rouge-score's ``rougeL`` F measure (``RougeScorer(["rougeL"]).score(reference, candidate)``)."""
    pred = re.sub(r"[^a-z0-9]+", " ", candidate.lower()).split()
    ref = re.sub(r"[^a-z0-9]+", " ", reference.lower()).split()
    if not pred or not ref:
        return 0.0
    lcs = _lcs_length(ref, pred)
    precision, recall = lcs / len(pred), lcs / len(ref)
    return 0.0 if precision + recall == 0 else 2 * precision * recall / (precision + recall)


def _lcs_length(a: Sequence[str], b: Sequence[str]) -> int:
    previous = [0] * (len(b) + 1)
    for x in a:
        current = [0]
        for j, y in enumerate(b):
            current.append(previous[j] + 1 if x == y else max(previous[j + 1], current[j]))
        previous = current
    return previous[-1]


def visibility_accuracy(labels: Sequence[str], predictions: Sequence[str], *,
                        mode: Literal["substring", "exact"] = "substring") -> float:
    """Share of items whose predicted visibility matches the label.

    Parameters
    ----------
    labels, predictions : sequence of str
        Same length, at least one item.
    mode : {"substring", "exact"}, default "substring"
        ``"substring"``: ``label in prediction`` (the official test; "visible" matches "invisible").
        ``"exact"``: ``label.strip().lower() == prediction.strip().lower()``.

    Returns
    -------
    float
        The accuracy in [0, 1].

    Raises
    ------
    ValueError
        When the lengths differ, the inputs are empty, a label is empty (in substring mode it would match
        every prediction), or ``mode`` is unknown.
    TypeError
        When a label or prediction is not a str.

    Examples
    --------
    >>> visibility_accuracy(["visible", "faint"], ["invisible", "faint"])
    1.0
    >>> visibility_accuracy(["visible", "faint"], ["invisible", "faint"], mode="exact")
    0.5
    """
    if mode not in ("substring", "exact"):
        raise ValueError(f"mode must be 'substring' or 'exact', got {mode!r}")
    labels, predictions = list(labels), list(predictions)
    if len(labels) != len(predictions):
        raise ValueError(f"labels has {len(labels)} items but predictions has {len(predictions)}")
    if not labels:
        raise ValueError("labels and predictions are empty")
    for i, (lab, pred) in enumerate(zip(labels, predictions, strict=True)):
        if not isinstance(lab, str) or not isinstance(pred, str):
            raise TypeError(f"item {i}: label and prediction must be str, got {type(lab).__name__} and "
                            f"{type(pred).__name__}")
        if not lab.strip():
            raise ValueError(f"item {i}: the visibility label is empty (it would match every prediction)")
    if mode == "substring":
        hits = [lab in pred for lab, pred in zip(labels, predictions, strict=True)]
    else:
        hits = [lab.strip().lower() == pred.strip().lower() for lab, pred in zip(labels, predictions, strict=True)]
    return float(np.mean(hits))


@dataclass(frozen=True)
class CorrelationResult:
    """Rank and linear correlation of predicted visibility scores with the ground truth.

    Attributes
    ----------
    srcc : float
        Spearman rank correlation (scipy ``spearmanr``).
    plcc : float
        Plain Pearson correlation (scipy ``pearsonr``, no logistic fit).
    n : int
        Number of items.
    """

    srcc: float
    plcc: float
    n: int


def correlation(predicted: ArrayLike, target: ArrayLike) -> CorrelationResult:
    """SRCC and PLCC of ``predicted`` against ``target``.

    Parameters
    ----------
    predicted, target : sequence of float
        Same length, at least three finite values each, neither constant.

    Returns
    -------
    CorrelationResult
        ``srcc``, ``plcc`` and ``n``.

    Raises
    ------
    ValueError
        On a length mismatch, fewer than three items, a non-finite value, or a constant input.
    """
    from scipy.stats import pearsonr, spearmanr

    x = np.asarray(predicted, dtype=np.float64).ravel()
    y = np.asarray(target, dtype=np.float64).ravel()
    if x.shape != y.shape:
        raise ValueError(f"predicted has {x.size} values but target has {y.size}")
    if x.size < 3:
        raise ValueError(f"correlation needs at least 3 items, got {x.size}")
    if not (np.all(np.isfinite(x)) and np.all(np.isfinite(y))):
        raise ValueError("predicted or target contains NaN or infinity")
    if np.ptp(x) == 0 or np.ptp(y) == 0:
        raise ValueError("correlation is undefined for a constant input")
    return CorrelationResult(float(spearmanr(x, y)[0]), float(pearsonr(x, y)[0]), int(x.size))


class LLMJudge:
    """The 0-4 relevance judge through an OpenAI-compatible chat client.

    Each call sends the official system prompt (:data:`JUDGE_SYSTEM_PROMPT`) and the official user
    prompt (:data:`JUDGE_PROMPT`, passed through ``textwrap.dedent`` as the official client does); the
    official model was ``"gpt-4"``.

    Parameters
    ----------
    client : object
        Anything with ``client.chat.completions.create(model=..., messages=[...], **kwargs)`` returning an
        object whose ``choices[0].message.content`` holds the reply (``openai.OpenAI(base_url=...)``
        and compatible servers).
    model : str
        The model name passed to the client.
    fallback : float or None, default 2.5
        The score recorded when the call fails or the reply is not a number in [0, 4] (the official
        behaviour); ``None`` re-raises instead.
    request_kwargs : mapping, optional
        Extra keyword arguments of ``create`` (e.g. ``temperature=0``).

    Attributes
    ----------
    n_fallbacks : int
        How many calls ended in the fallback so far.
    n_calls : int
        How many items were judged so far.
    """

    def __init__(self, client: Any, *, model: str, fallback: float | None = JUDGE_FALLBACK,
                 request_kwargs: Mapping[str, Any] | None = None) -> None:
        if not hasattr(client, "chat"):
            raise TypeError("client must be an OpenAI-compatible client with client.chat.completions.create")
        if not isinstance(model, str) or not model:
            raise ValueError("model must be a non-empty str")
        if fallback is not None and not 0.0 <= float(fallback) <= 4.0:
            raise ValueError(f"fallback must lie in [0, 4] or be None, got {fallback!r}")
        self.client = client
        self.model = model
        self.fallback = fallback
        self.request_kwargs = dict(request_kwargs or {})
        self.n_fallbacks = 0
        self.n_calls = 0

    def __call__(self, candidate: str, reference: str) -> float:
        """Rate ``candidate`` against ``reference`` on 0-4.

        Parameters
        ----------
        candidate, reference : str
            The cleaned answer and reference.

        Returns
        -------
        float
            The judge's score, or ``fallback`` when the call fails.
        """
        self.n_calls += 1
        prompt = textwrap.dedent(JUDGE_PROMPT.format(candidate=candidate, reference=reference))
        messages = [{"role": "system", "content": JUDGE_SYSTEM_PROMPT}, {"role": "user", "content": prompt}]
        try:
            reply = self.client.chat.completions.create(model=self.model, messages=messages, **self.request_kwargs)
            score = float(str(reply.choices[0].message.content).strip())
            if not 0.0 <= score <= 4.0:
                raise ValueError(f"judge score {score} outside [0, 4]")
        except Exception as exc:
            if self.fallback is None:
                raise
            self.n_fallbacks += 1
            log.warning("judge failed (%s); recording the fallback %s", exc, self.fallback)
            return float(self.fallback)
        return score


_VIS_RE = re.compile(r"visibility is:?\s*\[?\s*(invisible|faint|moderate|visible|obvious)", re.IGNORECASE)
_POSITIONS = ("top-left", "top-right", "bottom-left", "bottom-right", "center", "middle-left", "middle-right",
              "middle-top", "middle-bottom", "top", "bottom", "left", "right", "corner", "edge")


class RubricJudge:
    """An offline, deterministic stand-in for the LLM judge (a proxy, not the paper's metric).

    The 0-4 score adds 2 points when the visibility levels stated after "visibility is" agree, and up
    to 2 points for the overlap (Jaccard) of position words and of content words between the texts.

    Attributes
    ----------
    n_fallbacks : int
        Always 0 (the rubric never fails).
    n_calls : int
        How many items were judged so far.
    """

    is_proxy = True
    """Marks the score as a proxy of the LLM judge."""

    def __init__(self) -> None:
        self.n_fallbacks = 0
        self.n_calls = 0

    def __call__(self, candidate: str, reference: str) -> float:
        """Rate ``candidate`` against ``reference`` on 0-4 by the rubric.

        Parameters
        ----------
        candidate, reference : str
            The cleaned answer and reference.

        Returns
        -------
        float
            The rubric score in [0, 4].
        """
        self.n_calls += 1
        a, b = _VIS_RE.search(candidate), _VIS_RE.search(reference)
        vis = 2.0 if a and b and a.group(1).lower() == b.group(1).lower() else 0.0
        ca, cb = candidate.lower(), reference.lower()
        pa = {p for p in _POSITIONS if p in ca}
        pb = {p for p in _POSITIONS if p in cb}
        pos = len(pa & pb) / len(pa | pb) if pa | pb else 1.0
        wa = {w for w in re.findall(r"[a-z]+", ca) if len(w) > 3}
        wb = {w for w in re.findall(r"[a-z]+", cb) if len(w) > 3}
        words = len(wa & wb) / len(wa | wb) if wa | wb else 0.0
        return vis + pos + words


@dataclass(frozen=True)
class ItemScores:
    """The per-item scores of one answer.

    Attributes
    ----------
    bleu_1, rouge_l : float
        BLEU-1 and ROUGE-L F (the official ``rouge`` 1.0.1 value) of the cleaned answer against the
        cleaned reference; 0 for a blank answer.
    llm_score : float or None
        The judge's 0-4 score (None when no judge was given).
    label_visibility, predicted_visibility : str
        The labelled and the predicted visibility.
    rouge_l_rouge_score : float
        ROUGE-L F as rouge-score's ``rougeL`` computes it; 0 for a blank answer.
    blank : bool
        True when the answer was empty after cleaning.
    """

    bleu_1: float
    rouge_l: float
    llm_score: float | None
    label_visibility: str
    predicted_visibility: str
    rouge_l_rouge_score: float = 0.0
    blank: bool = False


@dataclass(frozen=True)
class EvaluationResult:
    """Corpus means of the per-item scores, as the official tables report them.

    Attributes
    ----------
    bleu_1, rouge_l : float
        Means of the per-item values (ROUGE-L: the official ``rouge`` 1.0.1 value).
    llm_score_x25 : float or None
        Mean judge score times 25 (0-100); None without a judge.
    acc_substring, acc_exact : float
        Visibility accuracy in the official substring mode and in exact mode.
    n : int
        Items scored.
    n_judge_fallbacks : int
        Items whose judge score is the 2.5 fallback.
    judge_is_proxy : bool
        True when the judge was the offline rubric rather than an LLM.
    items : dict of str to ItemScores
        Per-item scores keyed by image name.
    rouge_l_rouge_score : float
        Mean ROUGE-L as rouge-score's ``rougeL`` computes it (not the official value).
    n_blank_answers : int
        Answers empty after cleaning, scored 0 on BLEU-1 and both ROUGE-L values.
    """

    bleu_1: float
    rouge_l: float
    llm_score_x25: float | None
    acc_substring: float
    acc_exact: float
    n: int
    n_judge_fallbacks: int
    judge_is_proxy: bool
    items: dict[str, ItemScores] = field(repr=False)
    rouge_l_rouge_score: float = 0.0
    n_blank_answers: int = 0


def evaluate_answers(labels: Sequence[Mapping[str, Any]], answers: Sequence[Mapping[str, Any]], *,
                     judge: Callable[[str, str], float] | None = None) -> EvaluationResult:
    """Score model answers against labels in the official conversation layout.

    Parameters
    ----------
    labels, answers : sequence of mapping
        Records with ``image``, ``visibility`` and ``conversations`` (the second turn's ``value`` is the
        text), as in ``WQA-Real/test.json`` and the shipped answer files. Every labelled image needs
        exactly one answer.
    judge : callable, optional
        ``judge(candidate, reference) -> float`` on 0-4: an :class:`LLMJudge`, a :class:`RubricJudge`
        or any function. Without one, ``llm_score_x25`` is None.

    Returns
    -------
    EvaluationResult
        Means over the labelled images, in label order, with per-item scores. A blank answer (empty
        after cleaning) scores 0 on BLEU-1 and ROUGE-L, is still judged, and is counted in
        ``n_blank_answers`` (with a logged warning).

    Raises
    ------
    ValueError
        When a labelled image has no answer, an image repeats, a record lacks a field, the inputs
        are empty, a reference is blank, or the judge returns a score outside [0, 4].
    """
    lab = _index(labels, "labels")
    ans = _index(answers, "answers")
    missing = [name for name in lab if name not in ans]
    if missing:
        raise ValueError(f"{len(missing)} labelled images have no answer, e.g. {missing[:3]}")
    fallbacks_before = getattr(judge, "n_fallbacks", 0)
    items: dict[str, ItemScores] = {}
    n_fallback_values = 0
    for name, (ref_text, ref_vis) in lab.items():
        cand_text, cand_vis = ans[name]
        score = None if judge is None else float(judge(cand_text, ref_text))
        if score is not None and not (math.isfinite(score) and 0.0 <= score <= 4.0):
            raise ValueError(f"judge returned {score} for {name}; scores must lie in [0, 4]")
        n_fallback_values += score == JUDGE_FALLBACK
        if not ref_text.strip():
            raise ValueError(f"{name}: the reference is empty after cleaning; it cannot be scored")
        if cand_text.strip():
            items[name] = ItemScores(bleu1(cand_text, ref_text), rouge_l(cand_text, ref_text), score, ref_vis,
                                     cand_vis, rouge_l(cand_text, ref_text, variant="rouge-score"), False)
        else:
            items[name] = ItemScores(0.0, 0.0, score, ref_vis, cand_vis, 0.0, True)
    n_fallbacks = getattr(judge, "n_fallbacks", fallbacks_before) - fallbacks_before
    vals = list(items.values())
    n_blank = sum(v.blank for v in vals)
    if n_blank:
        log.warning("%d of %d answers are blank after cleaning; each scores 0 on BLEU-1 and ROUGE-L", n_blank,
                    len(vals))
    return EvaluationResult(
        bleu_1=float(np.mean([v.bleu_1 for v in vals])),
        rouge_l=float(np.mean([v.rouge_l for v in vals])),
        llm_score_x25=None if judge is None else float(np.mean([v.llm_score for v in vals])) * 25,
        acc_substring=visibility_accuracy([v.label_visibility for v in vals],
                                          [v.predicted_visibility for v in vals], mode="substring"),
        acc_exact=visibility_accuracy([v.label_visibility for v in vals], [v.predicted_visibility for v in vals],
                                      mode="exact"),
        n=len(vals), n_judge_fallbacks=int(n_fallbacks if hasattr(judge, "n_fallbacks") else n_fallback_values),
        judge_is_proxy=bool(getattr(judge, "is_proxy", False)), items=items,
        rouge_l_rouge_score=float(np.mean([v.rouge_l_rouge_score for v in vals])), n_blank_answers=n_blank)


def _index(records: Sequence[Mapping[str, Any]], what: str) -> dict[str, tuple[str, str]]:
    if isinstance(records, (str, bytes)) or not isinstance(records, Sequence):
        raise TypeError(f"{what} must be a list of records, got {type(records).__name__}")
    if not records:
        raise ValueError(f"{what} is empty")
    out: dict[str, tuple[str, str]] = {}
    for i, rec in enumerate(records):
        try:
            name, vis, text = rec["image"], rec["visibility"], rec["conversations"][1]["value"]
        except (KeyError, IndexError, TypeError) as exc:
            raise ValueError(f"{what}[{i}] lacks a field of the official layout "
                             f"(image, visibility, conversations[1].value): {exc!r}") from None
        if name in out:
            raise ValueError(f"{what}: image {name!r} appears twice")
        if not isinstance(vis, str):
            raise TypeError(f"{what}[{i}] ({name!r}): visibility must be a str, got {type(vis).__name__}")
        out[name] = (clean_text(text), vis)
    return out


def _check_str(value: Any, name: str) -> None:
    if not isinstance(value, str):
        raise TypeError(f"{name} must be a str, got {type(value).__name__}")
