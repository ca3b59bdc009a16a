"""The paper's registry of how model developers disclose train-test overlap, and its score.

The paper (Zhang et al., ICML 2025) documents 30 models and scores each 1 when the public can know its
train-test overlap: its training data is released under an open licence (anyone can measure the overlap),
or its developer publishes both the overlap statistics and the method that produced them. 9 models score
1 (4 open data, 5 method and statistics); engaging developers gave new information for 3 more.

The shipped file holds the entries that could be sourced; each field carries a ``verified`` flag, and
:func:`coverage` says how far the file is from the paper's counts. A score is computed from the three
booleans, never stored.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from importlib import resources
from typing import Any

__all__ = ["FIELDS", "Disclosure", "coverage", "load_registry", "registry_schema", "score", "validate_registry"]

FIELDS = ("model", "developer", "open_data", "publishes_stats", "publishes_method", "benchmarks", "engagement")
"""The per-model fields that carry a ``verified`` flag."""


@dataclass(frozen=True)
class Disclosure:
    """One model's train-test overlap disclosure.

    ``None`` in a boolean field means the value was not established (it is not read as ``False``).
    """

    model: str
    """Model name as the paper lists it."""
    developer: str
    """Organisation that trained it."""
    open_data: bool | None
    """Training data released under an open licence."""
    publishes_stats: bool | None
    """Overlap statistics published for the public test sets it reports."""
    publishes_method: bool | None
    """The method behind those statistics published."""
    benchmarks: tuple[str, ...]
    """Test sets the published statistics cover (empty: not recorded)."""
    engagement: bool | None
    """New information obtained by the paper's authors from the developer."""
    source: str
    """Where the entry comes from."""
    verified: Mapping[str, bool] = field(default_factory=dict)
    """Field name -> whether its value was checked against the paper's table or the developer's document."""
    developer_document: str | None = None
    """The developer's own report or model card, when known."""
    basis: str = ""
    """How the values were derived."""

    @property
    def score(self) -> int:
        """The paper's binary score: :func:`score` of this entry."""
        return score(self)

    @property
    def unverified(self) -> tuple[str, ...]:
        """Fields whose value was not checked."""
        return tuple(f for f in FIELDS if not self.verified.get(f, False))


def score(entry: Disclosure | Mapping[str, Any]) -> int:
    """The paper's score: 1 for open training data, or for published statistics *and* method; else 0.

    Parameters
    ----------
    entry : Disclosure or mapping
        With ``open_data``, ``publishes_stats`` and ``publishes_method`` (bool or None; None counts as no).

    Raises
    ------
    KeyError
        For a mapping without one of the three fields (a misspelt key would otherwise score 0).
    TypeError
        For a value that is not a bool or None.

    Returns
    -------
    int
        0 or 1.

    Examples
    --------
    >>> score({"open_data": False, "publishes_stats": True, "publishes_method": True})
    1
    >>> score({"open_data": None, "publishes_stats": True, "publishes_method": False})
    0
    """
    keys = ("open_data", "publishes_stats", "publishes_method")
    if isinstance(entry, Mapping):
        absent = [k for k in keys if k not in entry]
        if absent:
            raise KeyError(f"entry lacks {absent} (it has {sorted(entry)}); give each as true, false or null")
        values = {k: entry[k] for k in keys}
    else:
        values = {k: getattr(entry, k) for k in keys}
    for k, v in values.items():
        if v is not None and not isinstance(v, bool):
            raise TypeError(f"{k} must be true, false or null, got {v!r}")
    return int(values["open_data"] is True or (values["publishes_stats"] is True and values["publishes_method"] is True))


def registry_schema() -> dict[str, Any]:
    """The JSON schema of the registry file."""
    return json.loads(resources.files("train_test_overlap").joinpath("registry.schema.json").read_text(encoding="utf-8"))


def _raw() -> dict[str, Any]:
    return json.loads(resources.files("train_test_overlap").joinpath("registry.json").read_text(encoding="utf-8"))


def validate_registry(data: Mapping[str, Any] | None = None) -> None:
    """Check a registry document (default: the shipped one) against :func:`registry_schema`.

    Beyond the schema, model names must be unique.

    Parameters
    ----------
    data : mapping, optional
        A parsed registry document.

    Raises
    ------
    ImportError
        Without ``jsonschema`` (extra ``report``).
    jsonschema.ValidationError
        When the document does not follow the schema.
    ValueError
        For a model listed twice.
    """
    try:
        import jsonschema
    except ImportError as exc:
        raise ImportError("validation needs jsonschema: pip install 'train-test-overlap[report]'") from exc
    data = _raw() if data is None else data
    jsonschema.validate(data, registry_schema())
    seen: set[str] = set()
    for entry in data["entries"]:
        key = entry["model"].casefold()
        if key in seen:
            raise ValueError(f"model {entry['model']!r} is listed twice")
        seen.add(key)


def load_registry(data: Mapping[str, Any] | None = None) -> list[Disclosure]:
    """The registry's entries (default: the shipped file).

    Parameters
    ----------
    data : mapping, optional
        A parsed registry document following :func:`registry_schema`.

    Returns
    -------
    list of Disclosure

    Examples
    --------
    >>> entries = load_registry()
    >>> sum(e.score for e in entries), sum(e.score for e in entries if e.open_data)
    (9, 4)
    """
    data = _raw() if data is None else data
    return [Disclosure(model=e["model"], developer=e["developer"], open_data=e["open_data"],
                       publishes_stats=e["publishes_stats"], publishes_method=e["publishes_method"],
                       benchmarks=tuple(e["benchmarks"]), engagement=e["engagement"], source=e["source"],
                       verified=dict(e["verified"]), developer_document=e.get("developer_document"),
                       basis=e.get("basis", "")) for e in data["entries"]]


def coverage(entries: Iterable[Disclosure] | None = None) -> dict[str, dict[str, int]]:
    """The registry's counts beside the paper's (models, scored 1, open data, method and statistics, engagement).

    Parameters
    ----------
    entries : iterable of Disclosure, optional
        Default: the shipped registry.

    Returns
    -------
    dict
        Count name -> ``{"paper": ..., "registry": ...}``.
    """
    entries = load_registry() if entries is None else list(entries)
    paper = _raw()["paper_counts"]
    ours = {"models": len(entries), "score_1": sum(e.score for e in entries),
            "open_data": sum(1 for e in entries if e.open_data is True),
            "method_and_stats": sum(1 for e in entries if e.open_data is not True and e.score == 1),
            "engagement": sum(1 for e in entries if e.engagement is True)}
    return {k: {"paper": int(paper[k]), "registry": v} for k, v in ours.items()}
