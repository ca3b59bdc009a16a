"""The Right-to-AI data: tiers, Arnstein's ladder, questionnaire, case studies, justifications, recommendations.

Each YAML file under ``data/<version>/`` has a JSON Schema beside it and carries the data version and the
paper's citation; every entry carries ``source`` and ``verified``. :func:`load` validates the files
(schema and cross-references) and returns frozen typed objects; earlier data versions stay loadable.
"""

from __future__ import annotations

import functools
import json
import re
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any

__all__ = ["ANSWERS", "DIMENSIONS", "Band", "CaseStudy", "DataValidationError", "DataVersionError", "ExampleSystem",
           "Justification", "Question", "Recommendation", "RightToAIData", "Rung", "Signals", "Tier", "Transition",
           "available_versions", "data_path", "from_documents", "load", "read_documents", "validate_documents"]

#: The answers a question may accept, in the order shown to users.
ANSWERS = ("yes", "no", "partial", "unknown")
#: The three cross-tier dimensions.
DIMENSIONS = ("agency", "transparency", "inclusivity")
FILES = ("tiers", "arnstein", "questionnaire", "case_studies", "justifications", "recommendations", "examples")
_SEMVER = re.compile(r"^(\d+)\.(\d+)\.(\d+)$")


class DataVersionError(ValueError):
    """A data version that the installed package does not ship."""


class DataValidationError(ValueError):
    """A data file that breaks its JSON Schema or a cross-reference between files."""


@dataclass(frozen=True)
class Transition:
    """How a system moves from one tier to the next.

    Attributes
    ----------
    from_tier, to_tier : int
        The tiers it connects (``to_tier = from_tier + 1``).
    mechanism : str
        The transition mechanism.
    actions : tuple of str
        Concrete steps.
    source : str
        Where the entry comes from.
    verified : bool
        Whether it was checked against the paper.
    """

    from_tier: int
    to_tier: int
    mechanism: str
    actions: tuple[str, ...]
    source: str
    verified: bool


@dataclass(frozen=True)
class Tier:
    """One tier of the four-tier model.

    Attributes
    ----------
    id : int
        1 (lowest) to 4.
    name, public_role, governance_structure, description : str
        The tier as the model describes it.
    indicators : tuple of str
        Question ids that describe the tier.
    gate : tuple of str
        Question ids that must all be answered "yes" (with every lower tier's gate) to reach the tier.
    arnstein_rungs : tuple of str
        Ids of the Arnstein rungs mapped to this tier.
    transition : Transition or None
        The way to the next tier (None for tier 4).
    source : str
        Where the entry comes from.
    verified : bool
        Whether it was checked against the paper.
    """

    id: int
    name: str
    public_role: str
    governance_structure: str
    description: str
    indicators: tuple[str, ...]
    gate: tuple[str, ...]
    arnstein_rungs: tuple[str, ...]
    transition: Transition | None
    source: str
    verified: bool


@dataclass(frozen=True)
class Band:
    """A band of Arnstein's ladder (non-participation, tokenism, citizen power).

    Attributes
    ----------
    id, name : str
        Identifier and display name.
    rungs : tuple of str
        Rung ids in the band, lowest first.
    """

    id: str
    name: str
    rungs: tuple[str, ...]


@dataclass(frozen=True)
class Rung:
    """A rung of Arnstein's ladder mapped to one tier.

    Attributes
    ----------
    id : str
        Identifier (``"consultation"``).
    level : int
        1 (manipulation) to 8 (citizen control).
    name : str
        Display name.
    band : str
        Id of its band.
    tier : int
        The tier it maps to.
    criteria : tuple of str
        Question ids that must be "yes" to sit on this rung (besides being at its tier or above).
    description : str
        What the rung means for an AI system.
    source : str
        Where the entry comes from.
    verified : bool
        Whether it was checked against the paper.
    """

    id: str
    level: int
    name: str
    band: str
    tier: int
    criteria: tuple[str, ...]
    description: str
    source: str
    verified: bool


@dataclass(frozen=True)
class Question:
    """One questionnaire question (one indicator).

    Attributes
    ----------
    id : str
        The key of its answer.
    text, help : str
        The question and a hint.
    answer_type : str
        ``"yes_no"`` or ``"yes_no_partial"``.
    accepted : tuple of str
        The answers it accepts.
    indicator : str
        The indicator it measures.
    dimension : str
        ``"agency"``, ``"transparency"`` or ``"inclusivity"``.
    tier : int
        The tier whose indicators list it.
    tier_gate : int or None
        The tier whose gate it belongs to (None when it is not a gate).
    source : str
        Where the entry comes from.
    verified : bool
        Whether it was checked against the paper.
    """

    id: str
    text: str
    help: str
    answer_type: str
    accepted: tuple[str, ...]
    indicator: str
    dimension: str
    tier: int
    tier_gate: int | None
    source: str
    verified: bool


@dataclass(frozen=True)
class Signals:
    """Question ids behind the warnings.

    Attributes
    ----------
    consultation : tuple of str
        Any of these answered "yes" or "partial" means that consultation exists.
    decision_rights : tuple of str
        Any of these answered "yes" means that the affected people hold decision rights.
    expert_control, citizen_control : tuple of str
        Hybrid control needs one "yes" in each.
    source : str
        Where the entry comes from.
    verified : bool
        Whether it was checked against the paper.
    """

    consultation: tuple[str, ...]
    decision_rights: tuple[str, ...]
    expert_control: tuple[str, ...]
    citizen_control: tuple[str, ...]
    source: str
    verified: bool


@dataclass(frozen=True)
class CaseStudy:
    """A documented participation initiative with its placement and encoded answers.

    Attributes
    ----------
    id, name, organisation, domain : str
        What and who.
    year : int
        Year of the initiative.
    candidate : bool
        True when the study is a candidate for one of the paper's nine (not named in the notes).
    participation : str
        What participation happened.
    lessons : tuple of str
        Lessons drawn from it.
    placement_tier : int
        Its recorded tier.
    placement_origin : str
        ``"paper"`` when the paper places it, ``"ours"`` when this package does.
    placement_rationale : str
        Why it sits there.
    answers : tuple of (str, str)
        Its encoded questionnaire answers, in questionnaire order.
    source : str
        Where the entry comes from.
    verified : bool
        Whether it was checked against the paper.
    """

    id: str
    name: str
    organisation: str
    domain: str
    year: int
    candidate: bool
    participation: str
    lessons: tuple[str, ...]
    placement_tier: int
    placement_origin: str
    placement_rationale: str
    answers: tuple[tuple[str, str], ...]
    source: str
    verified: bool

    def answers_dict(self) -> dict[str, str]:
        """The encoded answers as a new dict.

        Returns
        -------
        dict of str to str
            Question id to answer.
        """
        return dict(self.answers)


@dataclass(frozen=True)
class Justification:
    """A justification for a Right to AI.

    Attributes
    ----------
    id, name, summary : str
        The justification.
    dimensions : tuple of str
        The dimensions it bears on.
    source : str
        Where the entry comes from.
    verified : bool
        Whether it was checked against the paper.
    """

    id: str
    name: str
    summary: str
    dimensions: tuple[str, ...]
    source: str
    verified: bool


@dataclass(frozen=True)
class Recommendation:
    """A recommendation of the paper with the questions that measure progress on it.

    Attributes
    ----------
    id, name, summary : str
        The recommendation.
    questions : tuple of str
        Question ids linked to it.
    source : str
        Where the entry comes from.
    verified_fields : tuple of (str, bool)
        Per field (``name``, ``summary``, ``questions``), whether it was checked against the paper.
    """

    id: str
    name: str
    summary: str
    questions: tuple[str, ...]
    source: str
    verified_fields: tuple[tuple[str, bool], ...]

    @property
    def verified(self) -> bool:
        """True only when every field was checked against the paper."""
        return all(ok for _, ok in self.verified_fields)


@dataclass(frozen=True)
class ExampleSystem:
    """A fictitious system used by the demo.

    Attributes
    ----------
    id, name, description : str
        The system.
    high_risk : bool
        Whether it works in a high-risk domain.
    answers : tuple of (str, str)
        Its questionnaire answers.
    """

    id: str
    name: str
    description: str
    high_risk: bool
    answers: tuple[tuple[str, str], ...]


@dataclass(frozen=True)
class RightToAIData:
    """One version of the package data, validated.

    Attributes
    ----------
    version : str
        The semver data version.
    citation : str
        The paper's citation.
    model_description, model_source : str
        The four-tier model as a whole and its source.
    model_verified : bool
        Whether the model's description was checked against the paper.
    tiers : tuple of Tier
        Tiers 1-4 in order.
    bands : tuple of Band
        Arnstein's three bands.
    rungs : tuple of Rung
        Arnstein's eight rungs, lowest first.
    arnstein_reference : str
        The citation of Arnstein's ladder.
    questions : tuple of Question
        The questionnaire, in order.
    answer_values : tuple of (str, float)
        Score of each answer in the dimension scores.
    signals : Signals
        Question ids behind the warnings.
    case_studies : tuple of CaseStudy
        The nine case studies.
    justifications : tuple of Justification
        The four justifications.
    recommendations : tuple of Recommendation
        The three recommendations.
    examples : tuple of ExampleSystem
        Fictitious systems for the demo.
    """

    version: str
    citation: str
    model_description: str
    model_source: str
    model_verified: bool
    tiers: tuple[Tier, ...]
    bands: tuple[Band, ...]
    rungs: tuple[Rung, ...]
    arnstein_reference: str
    questions: tuple[Question, ...]
    answer_values: tuple[tuple[str, float], ...]
    signals: Signals
    case_studies: tuple[CaseStudy, ...]
    justifications: tuple[Justification, ...]
    recommendations: tuple[Recommendation, ...]
    examples: tuple[ExampleSystem, ...]
    _by_id: dict[str, Any] = field(default_factory=dict, init=False, repr=False, compare=False, hash=False)

    def __post_init__(self) -> None:
        index: dict[str, Any] = {}
        index.update({f"question:{q.id}": q for q in self.questions})
        index.update({f"tier:{t.id}": t for t in self.tiers})
        index.update({f"rung:{r.id}": r for r in self.rungs})
        index.update({f"band:{b.id}": b for b in self.bands})
        index.update({f"case:{c.id}": c for c in self.case_studies})
        object.__setattr__(self, "_by_id", index)

    def question(self, question_id: str) -> Question:
        """The question with id ``question_id``.

        Parameters
        ----------
        question_id : str
            A question id.

        Returns
        -------
        Question
            The question.

        Raises
        ------
        KeyError
            When no question has that id (the message lists the accepted ids).
        """
        try:
            return self._by_id[f"question:{question_id}"]
        except KeyError:
            raise KeyError(f"unknown question {question_id!r}; the questions are: "
                           f"{', '.join(q.id for q in self.questions)}") from None

    def tier(self, tier_id: int) -> Tier:
        """The tier with id ``tier_id`` (1-4).

        Parameters
        ----------
        tier_id : int
            1 to 4.

        Returns
        -------
        Tier
            The tier.
        """
        return self._by_id[f"tier:{tier_id}"]

    def rung(self, rung_id: str | int) -> Rung:
        """The rung with id ``rung_id`` or level ``rung_id`` (1-8).

        Parameters
        ----------
        rung_id : str or int
            Rung id or level.

        Returns
        -------
        Rung
            The rung.
        """
        if isinstance(rung_id, int):
            return self.rungs[rung_id - 1]
        return self._by_id[f"rung:{rung_id}"]

    def band(self, band_id: str) -> Band:
        """The band with id ``band_id``.

        Parameters
        ----------
        band_id : str
            Band id.

        Returns
        -------
        Band
            The band.
        """
        return self._by_id[f"band:{band_id}"]

    def case_study(self, case_id: str) -> CaseStudy:
        """The case study with id ``case_id``.

        Parameters
        ----------
        case_id : str
            Case study id.

        Returns
        -------
        CaseStudy
            The case study.
        """
        return self._by_id[f"case:{case_id}"]

    def unverified(self) -> tuple[str, ...]:
        """Keys of every entry with ``verified: false`` (``"tier:2"``, ``"question:data_trust"``, ...).

        Returns
        -------
        tuple of str
            The keys, in file order.
        """
        keys = [] if self.model_verified else ["model"]
        for t in self.tiers:
            keys += [] if t.verified else [f"tier:{t.id}"]
            if t.transition is not None and not t.transition.verified:
                keys.append(f"transition:{t.id}->{t.transition.to_tier}")
        keys += [f"rung:{r.id}" for r in self.rungs if not r.verified]
        keys += [f"question:{q.id}" for q in self.questions if not q.verified]
        keys += [] if self.signals.verified else ["signals"]
        keys += [f"case:{c.id}" for c in self.case_studies if not c.verified]
        keys += [f"justification:{j.id}" for j in self.justifications if not j.verified]
        keys += [f"recommendation:{r.id}.{field}" for r in self.recommendations for field, ok in r.verified_fields
                 if not ok]
        return tuple(keys)


def _version_key(version: str) -> tuple[int, ...]:
    return tuple(int(part) for part in _SEMVER.match(version).groups())  # type: ignore[union-attr]


@functools.lru_cache(maxsize=1)
def available_versions() -> tuple[str, ...]:
    """The data versions this installation ships, oldest first.

    Returns
    -------
    tuple of str
        Semver strings.
    """
    root = resources.files("right_to_ai") / "data"
    names = [entry.name for entry in root.iterdir() if entry.is_dir() and _SEMVER.match(entry.name)]
    return tuple(sorted(names, key=_version_key))


def _resolve(version: str | None) -> str:
    versions = available_versions()
    if version is None:
        return versions[-1]
    if not isinstance(version, str) or version not in versions:
        raise DataVersionError(f"unknown data version {version!r}; the accepted versions are: {', '.join(versions)}")
    return version


def data_path(version: str | None = None) -> Path:
    """The folder holding one data version's YAML files and schemas.

    Parameters
    ----------
    version : str, optional
        A semver data version (default: the latest).

    Returns
    -------
    Path
        The folder.
    """
    return Path(str(resources.files("right_to_ai") / "data" / _resolve(version)))


def read_documents(version: str | None = None) -> dict[str, Any]:
    """The raw YAML documents of one data version (not validated), keyed by file stem.

    Parameters
    ----------
    version : str, optional
        A semver data version (default: the latest).

    Returns
    -------
    dict of str to object
        ``{"tiers": {...}, "arnstein": {...}, ...}``.
    """
    import yaml

    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    folder = data_path(version)
    return {name: yaml.load((folder / f"{name}.yaml").read_text(encoding="utf-8"), Loader=loader)  # noqa: S506
            for name in FILES}


def _schema_errors(name: str, document: Any, schema: dict[str, Any]) -> list[str]:
    import jsonschema

    validator = jsonschema.Draft202012Validator(schema)
    return [f"{name}.yaml: {'/'.join(str(p) for p in error.absolute_path) or '(top)'}: {error.message}"
            for error in sorted(validator.iter_errors(document), key=lambda e: list(map(str, e.absolute_path)))]


def _cross_reference_errors(docs: dict[str, Any], version: str) -> list[str]:
    errors = []
    for name, document in docs.items():
        if document.get("data_version") != version:
            errors.append(f"{name}.yaml: data_version {document.get('data_version')!r} differs from its folder {version}")
    citations = {document.get("citation") for document in docs.values()}
    if len(citations) != 1:
        errors.append(f"the files cite the paper differently: {sorted(map(str, citations))}")
    questionnaire = docs["questionnaire"]
    questions = {q["id"]: q for q in questionnaire["questions"]}
    if len(questions) != len(questionnaire["questions"]):
        errors.append("questionnaire.yaml: question ids repeat")
    types = questionnaire["answer_types"]
    tiers = docs["tiers"]["tiers"]
    if [t["id"] for t in tiers] != [1, 2, 3, 4]:
        errors.append(f"tiers.yaml: tiers must be ordered 1-4, got {[t['id'] for t in tiers]}")
    if tiers and tiers[0]["gate"]:
        errors.append("tiers.yaml: tier 1 is the floor and has no gate")
    rung_tier = {r["id"]: r["tier"] for r in docs["arnstein"]["rungs"]}
    for t in tiers:
        for qid in t["indicators"]:
            if qid not in questions:
                errors.append(f"tiers.yaml: tier {t['id']} names indicator {qid!r}, which no question measures")
            elif questions[qid]["tier"] != t["id"]:
                errors.append(f"tiers.yaml: indicator {qid!r} is listed under tier {t['id']} but its question says tier "
                              f"{questions[qid]['tier']}")
        for qid in t["gate"]:
            if qid not in t["indicators"]:
                errors.append(f"tiers.yaml: tier {t['id']} gate {qid!r} is not one of its indicators")
        expected = t["id"] + 1 if t["id"] < 4 else None
        got = t["transition"]["to"] if t["transition"] else None
        if got != expected:
            errors.append(f"tiers.yaml: tier {t['id']} transition leads to {got}, expected {expected}")
        for rid in t["arnstein_rungs"]:
            if rung_tier.get(rid) != t["id"]:
                errors.append(f"tiers.yaml: tier {t['id']} lists rung {rid!r}, which arnstein.yaml maps to tier "
                              f"{rung_tier.get(rid)}")
    for q in questions.values():
        gate_of = [t["id"] for t in tiers if q["id"] in t["gate"]]
        if gate_of != ([q["tier_gate"]] if q["tier_gate"] is not None else []):
            errors.append(f"questionnaire.yaml: {q['id']} has tier_gate {q['tier_gate']} but tiers.yaml puts it in the "
                          f"gates of {gate_of or 'no tier'}")
        if q["indicator"] != q["id"]:
            errors.append(f"questionnaire.yaml: {q['id']} measures indicator {q['indicator']!r}; one question per indicator")
    listed = [qid for t in tiers for qid in t["indicators"]]
    if sorted(listed) != sorted(questions):
        errors.append("tiers.yaml: every question must be the indicator of exactly one tier")
    arnstein = docs["arnstein"]
    rungs = arnstein["rungs"]
    if [r["level"] for r in rungs] != list(range(1, 9)):
        errors.append("arnstein.yaml: rungs must be levels 1-8 in order")
    banded = [rid for band in arnstein["bands"] for rid in band["rungs"]]
    if banded != [r["id"] for r in rungs]:
        errors.append("arnstein.yaml: the bands must cover every rung exactly once, in ladder order")
    band_of = {rid: band["id"] for band in arnstein["bands"] for rid in band["rungs"]}
    tiers_seen = []
    for r in rungs:
        if band_of.get(r["id"]) != r["band"]:
            errors.append(f"arnstein.yaml: rung {r['id']!r} says band {r['band']!r} but sits in {band_of.get(r['id'])!r}")
        errors += [f"arnstein.yaml: rung {r['id']!r} criterion {c!r} is not a question" for c in r["criteria"]
                   if c not in questions]
        tiers_seen.append(r["tier"])
    if tiers_seen != sorted(tiers_seen) or set(tiers_seen) != {1, 2, 3, 4}:
        errors.append(f"arnstein.yaml: rung tiers must rise with the ladder and cover 1-4, got {tiers_seen}")
    for r in rungs:
        if r["tier"] > 1 and not r["criteria"] and r["level"] != min(x["level"] for x in rungs if x["tier"] == r["tier"]):
            errors.append(f"arnstein.yaml: rung {r['id']!r} has no criteria but is not the lowest rung of its tier")
    if rungs and rungs[0]["criteria"]:
        errors.append("arnstein.yaml: the lowest rung has no criteria")
    signals = questionnaire["signals"]
    for key in ("consultation", "decision_rights", "expert_control", "citizen_control"):
        errors += [f"questionnaire.yaml: signals.{key} names {qid!r}, which is not a question" for qid in signals[key]
                   if qid not in questions]

    def check_answers(where: str, answers: dict[str, str]) -> None:
        for qid, answer in answers.items():
            if qid not in questions:
                errors.append(f"{where}: answer to unknown question {qid!r}")
            elif answer not in types[questions[qid]["answer_type"]]:
                errors.append(f"{where}: {qid} = {answer!r}; it accepts {types[questions[qid]['answer_type']]}")
        absent = [qid for qid in questions if qid not in answers]
        if absent:
            errors.append(f"{where}: no answer to {absent}")

    ids = [c["id"] for c in docs["case_studies"]["case_studies"]]
    if len(set(ids)) != len(ids):
        errors.append("case_studies.yaml: case study ids repeat")
    for c in docs["case_studies"]["case_studies"]:
        check_answers(f"case_studies.yaml: {c['id']}", c["answers"])
    for s in docs["examples"]["systems"]:
        check_answers(f"examples.yaml: {s['id']}", s["answers"])
    for rec in docs["recommendations"]["recommendations"]:
        errors += [f"recommendations.yaml: {rec['id']} links unknown question {qid!r}" for qid in rec["questions"]
                   if qid not in questions]
    return errors


def validate_documents(docs: dict[str, Any], version: str | None = None) -> None:
    """Check raw documents against the version's JSON Schemas and the cross-references between files.

    Parameters
    ----------
    docs : dict of str to object
        Raw documents keyed by file stem, as :func:`read_documents` returns them.
    version : str, optional
        The data version whose schemas apply (default: the latest).

    Raises
    ------
    DataValidationError
        Listing every problem found (file, path inside it, what is wrong).
    """
    version = _resolve(version)
    folder = data_path(version)
    missing = [name for name in FILES if name not in docs]
    if missing:
        raise DataValidationError(f"missing data documents: {missing}; expected {list(FILES)}")
    errors = []
    for name in FILES:
        schema = json.loads((folder / f"{name}.schema.json").read_text(encoding="utf-8"))
        errors += _schema_errors(name, docs[name], schema)
    if not errors:
        errors = _cross_reference_errors(docs, version)
    if errors:
        raise DataValidationError(f"{len(errors)} problem(s) in data version {version}:\n" + "\n".join(errors))


def _transition(tier: dict[str, Any]) -> Transition | None:
    t = tier["transition"]
    if t is None:
        return None
    return Transition(tier["id"], t["to"], t["mechanism"], tuple(t["actions"]), t["source"], t["verified"])


def _build(docs: dict[str, Any], version: str) -> RightToAIData:
    questionnaire = docs["questionnaire"]
    types = questionnaire["answer_types"]
    order = [q["id"] for q in questionnaire["questions"]]

    def ordered(answers: dict[str, str]) -> tuple[tuple[str, str], ...]:
        return tuple((qid, answers[qid]) for qid in order)

    model = docs["tiers"]["model"]
    sig = questionnaire["signals"]
    arnstein = docs["arnstein"]
    return RightToAIData(
        version=version,
        citation=docs["tiers"]["citation"],
        model_description=model["description"], model_source=model["source"], model_verified=model["verified"],
        tiers=tuple(Tier(t["id"], t["name"], t["public_role"], t["governance_structure"], t["description"],
                         tuple(t["indicators"]), tuple(t["gate"]), tuple(t["arnstein_rungs"]), _transition(t),
                         t["source"], t["verified"]) for t in docs["tiers"]["tiers"]),
        bands=tuple(Band(b["id"], b["name"], tuple(b["rungs"])) for b in arnstein["bands"]),
        rungs=tuple(Rung(r["id"], r["level"], r["name"], r["band"], r["tier"], tuple(r["criteria"]), r["description"],
                         r["source"], r["verified"]) for r in arnstein["rungs"]),
        arnstein_reference=arnstein["reference"],
        questions=tuple(Question(q["id"], q["text"], q["help"], q["answer_type"], tuple(types[q["answer_type"]]),
                                 q["indicator"], q["dimension"], q["tier"], q["tier_gate"], q["source"], q["verified"])
                        for q in questionnaire["questions"]),
        answer_values=tuple((a, float(questionnaire["answer_values"][a])) for a in ANSWERS),
        signals=Signals(tuple(sig["consultation"]), tuple(sig["decision_rights"]), tuple(sig["expert_control"]),
                        tuple(sig["citizen_control"]), sig["source"], sig["verified"]),
        case_studies=tuple(CaseStudy(c["id"], c["name"], c["organisation"], c["domain"], c["year"], c["candidate"],
                                     c["participation"], tuple(c["lessons"]), c["placement"]["tier"],
                                     c["placement"]["origin"], c["placement"]["rationale"], ordered(c["answers"]),
                                     c["source"], c["verified"]) for c in docs["case_studies"]["case_studies"]),
        justifications=tuple(Justification(j["id"], j["name"], j["summary"], tuple(j["dimensions"]), j["source"],
                                           j["verified"]) for j in docs["justifications"]["justifications"]),
        recommendations=tuple(Recommendation(r["id"], r["name"], r["summary"], tuple(r["questions"]), r["source"],
                                             tuple((f, bool(r["verified"][f])) for f in ("name", "summary", "questions")))
                              for r in docs["recommendations"]["recommendations"]),
        examples=tuple(ExampleSystem(s["id"], s["name"], s["description"], s["high_risk"], ordered(s["answers"]))
                       for s in docs["examples"]["systems"]),
    )


def from_documents(docs: dict[str, Any], version: str | None = None) -> RightToAIData:
    """Validate edited documents and build data from them (to try other gates, weights or rules).

    Parameters
    ----------
    docs : dict of str to object
        Raw documents keyed by file stem, e.g. :func:`read_documents` output after edits; their
        ``data_version`` must equal ``version``.
    version : str, optional
        The shipped data version whose schemas apply (default: the latest).

    Returns
    -------
    RightToAIData
        Frozen typed objects built from ``docs``.

    Raises
    ------
    DataValidationError
        When the edited documents break a schema or a cross-reference.

    Examples
    --------
    >>> from right_to_ai.data import from_documents, read_documents
    >>> docs = read_documents()
    >>> docs["questionnaire"]["answer_values"]["partial"] = 0.25
    >>> dict(from_documents(docs).answer_values)["partial"]
    0.25
    """
    version = _resolve(version)
    validate_documents(docs, version)
    return _build(docs, version)


@functools.cache
def _load(version: str) -> RightToAIData:
    docs = read_documents(version)
    validate_documents(docs, version)
    return _build(docs, version)


def load(version: str | None = None) -> RightToAIData:
    """Load, validate and return one version of the package data.

    Parameters
    ----------
    version : str, optional
        A semver data version from :func:`available_versions` (default: the latest). Earlier versions
        stay loadable.

    Returns
    -------
    RightToAIData
        Frozen typed objects; the same object on every call with the same version.

    Raises
    ------
    DataVersionError
        When ``version`` is not shipped (the message lists the accepted versions).
    DataValidationError
        When a file breaks its schema or a cross-reference.

    Examples
    --------
    >>> from right_to_ai import load
    >>> data = load()
    >>> [t.id for t in data.tiers], len(data.rungs), len(data.case_studies)
    ([1, 2, 3, 4], 8, 9)
    >>> data.tier(4).name
    'Citizen control'
    """
    return _load(_resolve(version))
