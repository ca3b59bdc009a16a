"""Place one AI system on the four-tier model from its questionnaire answers.

The tier is the highest tier whose gate indicators, and those of every lower tier, are answered "yes"
(the conservative tier). Each tier's own gate is also judged alone (met, partial or unmet): a higher
tier whose own gate is met is reported beside the conservative tier, with an ``inconsistent_profile``
warning, and the conservative tier's public role and governance structure are then not asserted;
the Arnstein rung is the highest rung whose tier is at most that tier and whose criteria are met; each
dimension score is the mean answer value of the dimension's questions. All three are monotone: turning an
answer from no (or unknown, or partial) to yes never lowers them.
"""

from __future__ import annotations

import json
import math
import sys
from collections.abc import Mapping
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np
from icml25_shared.validation import Interval, check_param, check_params

from right_to_ai.data import DIMENSIONS, RightToAIData, load

__all__ = ["AnswerError", "Assessment", "AssessmentWarning", "DimensionScores", "GateStatus", "NextTransition",
           "SimilarCase",
           "assess", "normalize_answers", "similar_cases"]

_TRUE = {"yes", "y", "true"}
_FALSE = {"no", "n", "false"}


class AnswerError(ValueError):
    """An answer set that names an unknown question, gives an answer a question does not accept or misses one.

    Attributes
    ----------
    question : str or None
        The question concerned (None when several are).
    accepted : tuple of str
        The accepted question ids or answers.
    """

    def __init__(self, message: str, *, question: str | None = None, accepted: tuple[str, ...] = ()) -> None:
        super().__init__(message)
        self.question = question
        self.accepted = accepted


@dataclass(frozen=True)
class DimensionScores:
    """Scores of the three cross-tier dimensions, each in [0, 1].

    Attributes
    ----------
    agency, transparency, inclusivity : float
        Mean answer value (yes 1, partial 0.5, no and unknown 0) of the dimension's questions.
    """

    agency: float
    transparency: float
    inclusivity: float


@dataclass(frozen=True)
class NextTransition:
    """The way from the assessed tier to the next one.

    Attributes
    ----------
    from_tier, to_tier : int
        The tiers.
    to_tier_name : str
        Name of the next tier.
    mechanism : str
        The transition mechanism.
    actions : tuple of str
        Concrete steps.
    unmet : tuple of str
        The next tier's gate indicators that are not met.
    verified : bool
        Whether the transition entry was checked against the paper.
    source : str
        Where the entry comes from.
    """

    from_tier: int
    to_tier: int
    to_tier_name: str
    mechanism: str
    actions: tuple[str, ...]
    unmet: tuple[str, ...]
    verified: bool
    source: str


@dataclass(frozen=True)
class GateStatus:
    """One tier's own gate, judged alone (the lower tiers' gates left out).

    Attributes
    ----------
    tier : int
        The tier (2 to 4; tier 1 has no gate).
    tier_name : str
        Its name.
    state : str
        ``"met"`` (every indicator yes), ``"partial"`` (none no or unknown, some partial: neither met nor
        unmet) or ``"unmet"`` (some indicator no or unknown).
    met, partial, unmet : tuple of str
        The gate indicators in each state (``unmet`` holds no and unknown answers).
    """

    tier: int
    tier_name: str
    state: str
    met: tuple[str, ...]
    partial: tuple[str, ...]
    unmet: tuple[str, ...]

    def completion(self) -> str:
        """What would complete the gate ("" when it is met)."""
        todo = [f"{q} (now partial)" for q in self.partial] + list(self.unmet)
        return "" if not todo else f"answering yes to {', '.join(todo)} would meet the tier-{self.tier} gate"


@dataclass(frozen=True)
class AssessmentWarning:
    """A warning raised by an assessment.

    Attributes
    ----------
    code : str
        ``"inconsistent_profile"``, ``"partial_gate"``, ``"participation_washing"``,
        ``"high_risk_without_hybrid_control"``, ``"unknown_answers"``, ``"incomplete"`` or ``"unverified_data"``.
    message : str
        What is wrong and why it matters.
    questions : tuple of str
        The question ids behind it.
    """

    code: str
    message: str
    questions: tuple[str, ...]


@dataclass(frozen=True)
class Assessment:
    """Where one system sits on the four-tier model, and why.

    Attributes
    ----------
    tier : int
        1 to 4: the conservative tier, the highest tier whose gate and every lower tier's gate are met.
    tier_name : str
        The tier's name.
    arnstein_rung : int
        1 (manipulation) to 8 (citizen control).
    arnstein_rung_name, arnstein_band : str
        The rung's name and its band's name.
    dimension_scores : DimensionScores
        Agency, transparency and inclusivity in [0, 1].
    satisfied_indicators : tuple of str
        Question ids answered "yes", in questionnaire order.
    unmet_indicators : tuple of str
        Gate indicators of the tiers above ``tier`` that are not met, lowest tier first.
    next_transition : NextTransition or None
        The way to the next tier (None at tier 4).
    warnings : tuple of AssessmentWarning
        Participation-washing, high risk without hybrid control, unknown answers, incomplete answers,
        unverified data.
    explanations : tuple of str
        One line per conclusion, naming the questions behind it.
    incomplete : bool
        True when some answers were missing (``allow_missing=True``); they count as "unknown".
    missing : tuple of str
        The missing question ids.
    high_risk : bool
        Whether the system was assessed as working in a high-risk domain.
    answers : tuple of (str, str)
        The answers used, in questionnaire order (missing ones as "unknown").
    unverified : tuple of str
        Keys of the unverified data entries the assessment used.
    data_version : str
        The data version.
    citation : str
        The paper's citation.
    gates : tuple of GateStatus
        Each gated tier's own gate (met, partial or unmet), lowest tier first.
    higher_tiers_met : tuple of int
        Tiers above ``tier`` whose own gate is met although a lower gate is not: the answers contradict
        the conservative tier's public role and governance structure (an ``inconsistent_profile`` warning).
    highest_rung_met : int
        The highest Arnstein rung whose criteria and whose tier's own gate are met (equals
        ``arnstein_rung`` when the profile is consistent).
    """

    tier: int
    tier_name: str
    arnstein_rung: int
    arnstein_rung_name: str
    arnstein_band: str
    dimension_scores: DimensionScores
    satisfied_indicators: tuple[str, ...]
    unmet_indicators: tuple[str, ...]
    next_transition: NextTransition | None
    warnings: tuple[AssessmentWarning, ...]
    explanations: tuple[str, ...]
    incomplete: bool
    missing: tuple[str, ...]
    high_risk: bool
    answers: tuple[tuple[str, str], ...]
    unverified: tuple[str, ...]
    data_version: str
    citation: str
    gates: tuple[GateStatus, ...] = ()
    higher_tiers_met: tuple[int, ...] = ()
    highest_rung_met: int = 0

    @property
    def consistent(self) -> bool:
        """True when no tier above ``tier`` has its own gate met (the tier's role and structure hold)."""
        return not self.higher_tiers_met

    def warning_codes(self) -> tuple[str, ...]:
        """The codes of the warnings, in order.

        Returns
        -------
        tuple of str
            E.g. ``("participation_washing", "unverified_data")``.
        """
        return tuple(w.code for w in self.warnings)

    def to_dict(self) -> dict[str, Any]:
        """The assessment as plain JSON-ready data.

        Returns
        -------
        dict
            Nested dicts and lists; :meth:`from_dict` inverts it.
        """
        out = asdict(self)
        out["answers"] = dict(self.answers)
        return out

    def to_json(self) -> str:
        """The assessment as JSON text: sorted keys, two-space indent, a final newline.

        Returns
        -------
        str
            The same text for the same assessment, byte for byte.
        """
        return json.dumps(self.to_dict(), indent=2, sort_keys=True, ensure_ascii=False) + "\n"

    @classmethod
    def from_dict(cls, obj: Mapping[str, Any]) -> Assessment:
        """Rebuild an assessment from :meth:`to_dict` output.

        Parameters
        ----------
        obj : mapping
            The data.

        Returns
        -------
        Assessment
            Equal to the assessment that produced ``obj``.
        """
        nt = obj["next_transition"]
        return cls(
            tier=int(obj["tier"]), tier_name=obj["tier_name"], arnstein_rung=int(obj["arnstein_rung"]),
            arnstein_rung_name=obj["arnstein_rung_name"], arnstein_band=obj["arnstein_band"],
            dimension_scores=DimensionScores(**{d: float(obj["dimension_scores"][d]) for d in DIMENSIONS}),
            satisfied_indicators=tuple(obj["satisfied_indicators"]), unmet_indicators=tuple(obj["unmet_indicators"]),
            next_transition=None if nt is None else NextTransition(
                nt["from_tier"], nt["to_tier"], nt["to_tier_name"], nt["mechanism"], tuple(nt["actions"]),
                tuple(nt["unmet"]), nt["verified"], nt["source"]),
            warnings=tuple(AssessmentWarning(w["code"], w["message"], tuple(w["questions"])) for w in obj["warnings"]),
            explanations=tuple(obj["explanations"]), incomplete=bool(obj["incomplete"]), missing=tuple(obj["missing"]),
            high_risk=bool(obj["high_risk"]), answers=_ordered_answers(obj["answers"], obj["data_version"]),
            unverified=tuple(obj["unverified"]), data_version=obj["data_version"], citation=obj["citation"],
            gates=tuple(GateStatus(int(g["tier"]), g["tier_name"], g["state"], tuple(g["met"]), tuple(g["partial"]),
                                   tuple(g["unmet"])) for g in obj.get("gates", ())),
            higher_tiers_met=tuple(int(t) for t in obj.get("higher_tiers_met", ())),
            highest_rung_met=int(obj.get("highest_rung_met", obj["arnstein_rung"])))

    @classmethod
    def from_json(cls, text: str) -> Assessment:
        """Rebuild an assessment from :meth:`to_json` text.

        Parameters
        ----------
        text : str
            JSON text.

        Returns
        -------
        Assessment
            Equal to the assessment that produced ``text``.
        """
        return cls.from_dict(json.loads(text))


def _ordered_answers(answers: Mapping[str, str], version: str) -> tuple[tuple[str, str], ...]:
    """Answers in the questionnaire order of ``version`` (JSON sorts keys); given order for an unknown version."""
    from right_to_ai.data import DataVersionError

    try:
        order = [q.id for q in load(version).questions]
    except DataVersionError:
        order = []
    rank = {qid: i for i, qid in enumerate(order)}
    return tuple(sorted(answers.items(), key=lambda item: rank.get(item[0], len(rank))))


@dataclass(frozen=True)
class SimilarCase:
    """A case study close to an answer profile.

    Attributes
    ----------
    id, name : str
        The case study.
    similarity : float
        Jaccard similarity of the two profiles, in [0, 1].
    tier : int
        The case study's recorded tier.
    placement_origin : str
        ``"paper"`` or ``"ours"``.
    verified : bool
        Whether the case study was checked against the paper.
    lessons : tuple of str
        Its lessons.
    """

    id: str
    name: str
    similarity: float
    tier: int
    placement_origin: str
    verified: bool
    lessons: tuple[str, ...]


def _canonical(question: Any, raw: Any) -> str | None:
    """One raw answer as a canonical string; None for a missing answer; raises for an unknown form."""
    if raw is None or raw is getattr(sys.modules.get("pandas"), "NA", None):  # pandas' nullable missing value
        return None
    if isinstance(raw, (bool, np.bool_)):
        return "yes" if raw else "no"
    if isinstance(raw, float) and math.isnan(raw):
        return None
    if isinstance(raw, str):
        text = raw.strip().lower()
        if text == "":
            return None
        if text in _TRUE:
            return "yes"
        if text in _FALSE:
            return "no"
        if text in question.accepted:
            return text
    accepted = ", ".join(question.accepted)
    raise AnswerError(f"question {question.id!r} accepts {accepted}; got {raw!r}", question=question.id,
                      accepted=question.accepted)


def _data(data: Any) -> RightToAIData:
    """The data to use: ``load()`` for None, else a RightToAIData (a version string is a common mistake)."""
    if data is None:
        return load()
    if not isinstance(data, RightToAIData):
        raise TypeError(f"data must be a RightToAIData (from load()), got {type(data).__name__}; pass "
                        f"data=load({data!r}) for a data version")
    return data


def normalize_answers(answers: Mapping[str, Any], *, data: RightToAIData | None = None,
                      allow_missing: bool = False) -> tuple[dict[str, str], tuple[str, ...]]:
    """Validate an answer set and return it in canonical form.

    Parameters
    ----------
    answers : mapping of str to str or bool
        Question id to answer. Answers are case-insensitive; ``True``/``False`` (YAML's unquoted yes/no)
        mean yes/no; ``None``, ``""`` and NaN mean missing.
    data : RightToAIData, optional
        The data (default: the latest version).
    allow_missing : bool, default False
        Accept missing answers (they count as "unknown").

    Returns
    -------
    answers : dict of str to str
        Every question id to its canonical answer, in questionnaire order.
    missing : tuple of str
        Question ids that had no answer.

    Raises
    ------
    AnswerError
        For an unknown question id, an answer the question does not accept, or a missing answer when
        ``allow_missing`` is False; the message names the question and the accepted values.
    """
    data = _data(data)
    if not isinstance(answers, Mapping):
        raise TypeError(f"answers must be a mapping of question id to answer; got {type(answers).__name__}")
    ids = tuple(q.id for q in data.questions)
    known = set(ids)
    for qid in answers:
        if qid not in known:
            raise AnswerError(f"answers: unknown question {qid!r}; the accepted question ids are: {', '.join(ids)}",
                              question=str(qid), accepted=ids)
    out: dict[str, str] = {}
    missing = []
    for q in data.questions:
        value = _canonical(q, answers.get(q.id))
        if value is None:
            missing.append(q.id)
            value = "unknown"
        out[q.id] = value
    if missing and not allow_missing:
        first = data.question(missing[0])
        raise AnswerError(f"no answer to {len(missing)} question(s): {', '.join(missing)}; question {first.id!r} "
                          f"accepts {', '.join(first.accepted)} (pass allow_missing=True to score them as unknown)",
                          question=first.id, accepted=first.accepted)
    return out, tuple(missing)


def _yes(answers: Mapping[str, str], ids: tuple[str, ...]) -> bool:
    return all(answers[q] == "yes" for q in ids)


def assess(answers: Mapping[str, Any], *, data: RightToAIData | None = None, allow_missing: bool = False,
           high_risk: bool = False) -> Assessment:
    """Place a system on the four-tier model and the Arnstein ladder, with warnings and the next step.

    Parameters
    ----------
    answers : mapping of str to str or bool
        Question id (see ``load().questions``) to "yes", "no", "partial" (where accepted) or "unknown".
    data : RightToAIData, optional
        The data to assess against (default: ``load()``, the latest version).
    allow_missing : bool, default False
        Score missing answers as "unknown" and mark the assessment incomplete; a missing answer never
        raises the tier.
    high_risk : bool, default False
        The system works in a high-risk domain: warn unless it has hybrid expert and citizen control.

    Returns
    -------
    Assessment
        Tier, rung, dimension scores, indicators, next transition, warnings and explanations.

    Raises
    ------
    AnswerError
        For an unknown question id, an answer a question does not accept, or a missing answer (unless
        ``allow_missing``); the message names the question and the accepted values.

    Examples
    --------
    >>> from right_to_ai import assess, load
    >>> answers = {q.id: "no" for q in load().questions}
    >>> answers["feedback_button"] = "yes"
    >>> a = assess(answers)
    >>> a.tier, a.tier_name, a.arnstein_rung_name
    (1, 'Consumer model', 'Therapy')
    >>> a.next_transition.mechanism
    'Structured feedback channels'
    """
    check_params({"high_risk": high_risk, "allow_missing": allow_missing},
                 {"high_risk": ["boolean"], "allow_missing": ["boolean"]}, owner="assess")
    data = _data(data)
    canon, missing = normalize_answers(answers, data=data, allow_missing=allow_missing)
    values = dict(data.answer_values)
    explanations = []

    gates = tuple(_gate(t, canon) for t in data.tiers[1:])
    tier = 1
    for g in gates:
        if g.state != "met":
            break
        tier = g.tier
    for g in gates:
        shown = ", ".join(f"{q} = {canon[q]}" for q in data.tier(g.tier).gate)
        todo = f"; {g.completion()}" if g.state == "partial" else ""
        explanations.append(f"Tier {g.tier} gate ({shown}): {g.state}{todo}.")
    placed = data.tier(tier)
    explanations.append(f"Tier {tier} ({placed.name}) is the highest tier whose gate and every lower gate are met.")
    higher = tuple(g.tier for g in gates if g.tier > tier and g.state == "met")
    own_gate_met = {1} | {g.tier for g in gates if g.state == "met"}

    rung = max((r for r in data.rungs if r.tier <= tier and _yes(canon, r.criteria)), key=lambda r: r.level)
    why = ", ".join(f"{q} = yes" for q in rung.criteria) or "no criteria beyond the tier"
    explanations.append(f"Arnstein rung {rung.level} ({rung.name}): the highest rung of tier {tier} or below whose "
                        f"criteria are met ({why}).")
    top = max((r for r in data.rungs if r.tier in own_gate_met and _yes(canon, r.criteria)), key=lambda r: r.level)
    if higher:
        blocking = [g for g in gates if g.tier <= tier + 1 and g.state != "met"]
        explanations.append(
            f"The answers also meet the own gate of tier(s) {', '.join(map(str, higher))} "
            f"({', '.join(data.tier(t).name for t in higher)}) but not tier {blocking[0].tier}'s; the public role "
            f"({placed.public_role}) and governance structure ({placed.governance_structure}) of tier {tier} are "
            "not asserted.")
    if top.level > rung.level:
        explanations.append(f"Without the cumulative gates the answers meet Arnstein rung {top.level} ({top.name}).")

    scores = {}
    for dim in DIMENSIONS:
        qs = [q.id for q in data.questions if q.dimension == dim]
        scores[dim] = sum(values[canon[q]] for q in qs) / len(qs)
        explanations.append(f"{dim.capitalize()} {scores[dim]:.3f}: mean answer value of {', '.join(qs)} "
                            "(yes 1, partial 0.5, no and unknown 0).")

    unmet = tuple(q for t in data.tiers[tier:] for q in t.gate if canon[q] != "yes")
    transition = None
    if placed.transition is not None:
        tr = placed.transition
        nxt = data.tier(tr.to_tier)
        transition = NextTransition(tier, tr.to_tier, nxt.name, tr.mechanism, tr.actions,
                                    tuple(q for q in nxt.gate if canon[q] != "yes"), tr.verified, tr.source)

    warnings = []
    if higher:
        lowest_gap = next(g for g in gates if g.state != "met")
        shown = ", ".join(f"{q} = {canon[q]}" for q in data.tier(lowest_gap.tier).gate)
        warnings.append(AssessmentWarning(
            "inconsistent_profile",
            f"Inconsistent profile: the answers meet the tier-{', tier-'.join(map(str, higher))} gate(s) but not the "
            f"tier-{lowest_gap.tier} gate ({shown}). The conservative tier is {tier} ({placed.name}); its public role "
            f"and governance structure are not asserted, since the answers contradict them. Either the lower tiers' "
            f"practices are missing or an answer is wrong; {lowest_gap.completion()}.",
            tuple(q for t in (lowest_gap.tier, *higher) for q in data.tier(t).gate)))
    partial_gates = [g for g in gates if g.tier > tier and g.state == "partial"]
    for g in partial_gates:
        warnings.append(AssessmentWarning(
            "partial_gate", f"The tier-{g.tier} gate is partly met ({', '.join(f'{q} = partial' for q in g.partial)}), "
            f"neither met nor unmet: {g.completion()}.", g.partial))
    sig = data.signals
    consulted = tuple(q for q in sig.consultation if canon[q] in ("yes", "partial"))
    decides = tuple(q for q in sig.decision_rights if canon[q] == "yes")
    if consulted and not decides:
        warnings.append(AssessmentWarning(
            "participation_washing",
            f"Participation-washing risk: consultation exists ({', '.join(consulted)}) but the affected people hold "
            f"no decision rights ({', '.join(f'{q} = {canon[q]}' for q in sig.decision_rights)}).",
            consulted + sig.decision_rights))
    if high_risk:
        expert = any(canon[q] == "yes" for q in sig.expert_control)
        citizen = any(canon[q] == "yes" for q in sig.citizen_control)
        if not (expert and citizen):
            lacking = [] if expert else [f"expert control ({', '.join(sig.expert_control)})"]
            lacking += [] if citizen else [f"citizen control ({', '.join(sig.citizen_control)})"]
            warnings.append(AssessmentWarning(
                "high_risk_without_hybrid_control",
                f"High-risk domain without hybrid expert and citizen control: no {' and no '.join(lacking)}.",
                sig.expert_control + sig.citizen_control))
    unknown = tuple(q.id for q in data.questions if canon[q.id] == "unknown" and q.id not in missing)
    if unknown:
        warnings.append(AssessmentWarning(
            "unknown_answers", f"{len(unknown)} question(s) answered unknown and scored like no: {', '.join(unknown)}; "
            "the tier, rung and scores can only rise once they are known.", unknown))
    if missing:
        warnings.append(AssessmentWarning(
            "incomplete", f"{len(missing)} question(s) unanswered and scored as unknown: {', '.join(missing)}; the "
            "tier, rung and scores can only rise once they are answered.", missing))

    used = [] if placed.verified else [f"tier:{tier}"]
    if placed.transition is not None and not placed.transition.verified:
        used.append(f"transition:{tier}->{placed.transition.to_tier}")
    used += [] if rung.verified else [f"rung:{rung.id}"]
    used += [] if sig.verified else ["signals"]
    used += [f"question:{q.id}" for q in data.questions if not q.verified]
    if used:
        warnings.append(AssessmentWarning(
            "unverified_data", f"This assessment uses {len(used)} data entries not checked against the paper "
            f"(data {data.version}): {', '.join(k for k in used if not k.startswith('question:'))}"
            f"{' and ' if any(not k.startswith('question:') for k in used) else ''}"
            f"{sum(k.startswith('question:') for k in used)} questions.", ()))

    d = data.rung(rung.level)
    return Assessment(
        tier=tier, tier_name=placed.name, arnstein_rung=rung.level, arnstein_rung_name=rung.name,
        arnstein_band=data.band(d.band).name, dimension_scores=DimensionScores(**scores),
        satisfied_indicators=tuple(q.id for q in data.questions if canon[q.id] == "yes"),
        unmet_indicators=unmet, next_transition=transition, warnings=tuple(warnings),
        explanations=tuple(explanations), incomplete=bool(missing), missing=missing, high_risk=high_risk,
        answers=tuple(canon.items()), unverified=tuple(used), data_version=data.version, citation=data.citation,
        gates=gates, higher_tiers_met=higher, highest_rung_met=top.level)


def _gate(tier: Any, canon: Mapping[str, str]) -> GateStatus:
    met = tuple(q for q in tier.gate if canon[q] == "yes")
    partial = tuple(q for q in tier.gate if canon[q] == "partial")
    unmet = tuple(q for q in tier.gate if canon[q] not in ("yes", "partial"))
    state = "unmet" if unmet else "partial" if partial else "met"
    return GateStatus(tier.id, tier.name, state, met, partial, unmet)


def _profile(answers: Mapping[str, str]) -> frozenset[tuple[str, str]]:
    return frozenset((q, a) for q, a in answers.items() if a in ("yes", "partial"))


def jaccard(a: frozenset[Any], b: frozenset[Any]) -> float:
    """Jaccard similarity ``|a & b| / |a | b|`` (1.0 for two empty sets).

    Parameters
    ----------
    a, b : frozenset
        The sets.

    Returns
    -------
    float
        In [0, 1].
    """
    union = a | b
    return 1.0 if not union else len(a & b) / len(union)


def similar_cases(answers: Mapping[str, Any], k: int = 3, *, data: RightToAIData | None = None,
                  allow_missing: bool = True) -> tuple[SimilarCase, ...]:
    """The ``k`` case studies nearest to an answer profile, with their lessons.

    The profile of an answer set is the set of its (question, answer) pairs answered "yes" or "partial";
    similarity is the Jaccard index of two profiles. Ties keep the data file's order.

    Parameters
    ----------
    answers : mapping of str to str or bool
        Question id to answer (missing answers allowed by default: they count as unknown).
    k : int, default 3
        How many case studies, 1 to the number of case studies.
    data : RightToAIData, optional
        The data (default: the latest version).
    allow_missing : bool, default True
        Passed to :func:`normalize_answers`.

    Returns
    -------
    tuple of SimilarCase
        Most similar first.

    Raises
    ------
    ValueError
        When ``k`` is not an int in [1, number of case studies].

    Examples
    --------
    >>> from right_to_ai import load, similar_cases
    >>> webuildai = load().case_study("webuildai").answers_dict()
    >>> similar_cases(webuildai, k=1)[0].name
    'WeBuildAI'
    """
    data = _data(data)
    n = len(data.case_studies)
    check_param("k", k, [Interval(int, 1, n)], owner="similar_cases")
    canon, _ = normalize_answers(answers, data=data, allow_missing=allow_missing)
    mine = _profile(canon)
    scored = [(jaccard(mine, _profile(dict(c.answers))), i, c) for i, c in enumerate(data.case_studies)]
    scored.sort(key=lambda item: (-item[0], item[1]))
    return tuple(SimilarCase(c.id, c.name, s, c.placement_tier, c.placement_origin, c.verified, c.lessons)
                 for s, _, c in scored[:k])
