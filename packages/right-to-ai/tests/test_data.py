"""The shipped data: schemas, counts, cross-references, verified entries, versions, frozen objects."""

import copy
import dataclasses
import json
import re

import pytest

from right_to_ai import DataValidationError, DataVersionError, available_versions, load
from right_to_ai.data import FILES, data_path, read_documents, validate_documents

REFERENCE = re.compile(r"(?i)\b(abstract|section [0-9]|§ ?[0-9]|figure [0-9]|fig\. ?[0-9]|table [0-9]|appendix [a-z0-9])")


def entries(docs):
    """Every (file, entry) that carries source and verified."""
    yield "tiers", docs["tiers"]["model"]
    for t in docs["tiers"]["tiers"]:
        yield "tiers", t
        if t["transition"]:
            yield "tiers", t["transition"]
    yield from (("arnstein", r) for r in docs["arnstein"]["rungs"])
    yield "questionnaire", docs["questionnaire"]["signals"]
    yield from (("questionnaire", q) for q in docs["questionnaire"]["questions"])
    yield from (("case_studies", c) for c in docs["case_studies"]["case_studies"])
    yield from (("justifications", j) for j in docs["justifications"]["justifications"])
    yield from (("recommendations", r) for r in docs["recommendations"]["recommendations"])


def test_every_file_validates_and_carries_version_and_citation():
    docs = read_documents()
    validate_documents(docs)
    for name in FILES:
        assert re.fullmatch(r"\d+\.\d+\.\d+", docs[name]["data_version"]), name
        assert "arXiv:2501.17899" in docs[name]["citation"], name
        assert (data_path() / f"{name}.schema.json").is_file()
        json.loads((data_path() / f"{name}.schema.json").read_text())


def test_counts_and_order(data):
    assert [t.id for t in data.tiers] == [1, 2, 3, 4]
    assert len(data.case_studies) == 9 and len({c.id for c in data.case_studies}) == 9
    assert len(data.justifications) == 4 and len(data.recommendations) == 3
    assert [r.level for r in data.rungs] == list(range(1, 9))
    assert [b.id for b in data.bands] == ["nonparticipation", "tokenism", "citizen_power"]
    assert [len(b.rungs) for b in data.bands] == [2, 3, 3]
    assert [t.name for t in (data.tier(1), data.tier(4))] == ["Consumer model", "Citizen control"]
    assert [t.transition.to_tier for t in data.tiers[:3]] == [2, 3, 4] and data.tier(4).transition is None


def test_each_rung_in_one_band_and_one_tier(data):
    in_bands = [rid for b in data.bands for rid in b.rungs]
    assert sorted(in_bands) == sorted(r.id for r in data.rungs) and len(in_bands) == 8
    by_tier = [rid for t in data.tiers for rid in t.arnstein_rungs]
    assert sorted(by_tier) == sorted(r.id for r in data.rungs) and len(by_tier) == 8
    for r in data.rungs:
        assert r.id in data.tier(r.tier).arnstein_rungs
        assert r.id in data.band(r.band).rungs


def test_verified_entries_cite_a_section_figure_or_table():
    docs = read_documents()
    found = list(entries(docs))
    assert len(found) >= 4 + 3 + 8 + 19 + 9 + 4 + 3
    verified = [e for _, e in found if e["verified"] is True or (isinstance(e["verified"], dict)
                                                                  and any(e["verified"].values()))]
    assert verified, "the abstract-backed entries are verified"
    for e in verified:
        assert REFERENCE.search(e["source"]), e
    # honest marks: nothing from the notes' tables is verified, only abstract-backed entries
    assert all(e["source"].startswith("Abstract") for e in verified)


@pytest.mark.parametrize(("file", "path"), [
    ("tiers", ("tiers", 1)), ("case_studies", ("case_studies", 0)), ("arnstein", ("rungs", 3)),
    ("questionnaire", ("questions", 0)), ("justifications", ("justifications", 2)),
])
def test_verified_true_without_a_reference_fails(file, path):
    docs = copy.deepcopy(read_documents())
    entry = docs[file][path[0]][path[1]]
    entry["verified"] = True
    entry["source"] = "research notes, checked by hand"
    with pytest.raises(DataValidationError, match="does not match"):
        validate_documents(docs)
    entry["source"] = "Section 4, Figure 2"
    validate_documents(docs)  # with a reference it passes


@pytest.mark.parametrize("mutate", [
    lambda d: d["tiers"]["tiers"].append(copy.deepcopy(d["tiers"]["tiers"][-1])),
    lambda d: d["case_studies"]["case_studies"].pop(),
    lambda d: d["arnstein"]["bands"][0]["rungs"].append("informing"),
    lambda d: d["arnstein"]["rungs"][2].update(tier=3),
    lambda d: d["tiers"]["tiers"].reverse(),
    lambda d: d["case_studies"]["case_studies"][0]["answers"].update(feedback_button="partial"),
    lambda d: d["questionnaire"]["questions"][4].update(tier_gate=None),
    lambda d: d["justifications"].update(data_version="1.0"),
])
def test_broken_data_is_rejected(mutate):
    docs = copy.deepcopy(read_documents())
    mutate(docs)
    with pytest.raises(DataValidationError):
        validate_documents(docs)


def test_load_returns_frozen_typed_objects(data):
    assert load() is data and load("1.0.0") is data
    for obj in (data, data.tiers[0], data.rungs[0], data.questions[0], data.case_studies[0], data.signals):
        with pytest.raises(dataclasses.FrozenInstanceError):
            obj.source = "x"
    assert isinstance(data.tiers, tuple) and isinstance(data.case_studies[0].answers, tuple)


def test_versions_and_unknown_version():
    assert available_versions()[-1] == load().version == "1.0.0"
    for version in available_versions():  # every shipped version stays loadable
        assert load(version).version == version
    with pytest.raises(DataVersionError, match=r"'9\.9\.9'.*accepted versions are: 1\.0\.0"):
        load("9.9.9")


def test_unverified_listing_covers_every_false_entry(data):
    keys = data.unverified()
    assert "tier:2" in keys and "transition:2->3" in keys and "case:aya" in keys and "rung:placation" in keys
    # only the recommendations' names come from the abstract: summaries and linked questions are listed
    assert [k for k in keys if k.startswith("recommendation:")] == [
        f"recommendation:{r}.{f}" for r in ("inclusive_data_ownership", "transparent_design", "stakeholder_oversight")
        for f in ("summary", "questions")]
    assert len(keys) == 1 * 0 + 4 + 3 + 8 + 19 + 1 + 9 + 4 + 6
    assert all(not r.verified and dict(r.verified_fields) == {"name": True, "summary": False, "questions": False}
               for r in data.recommendations)
