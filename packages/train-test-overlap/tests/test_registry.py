"""The disclosure registry: schema, the paper's score, and the counts the shipped file reaches."""

import copy
import json
from importlib import resources

import jsonschema
import pytest

from train_test_overlap.registry import FIELDS, coverage, load_registry, registry_schema, score, validate_registry


def raw():
    return json.loads(resources.files("train_test_overlap").joinpath("registry.json").read_text(encoding="utf-8"))


def test_shipped_registry_validates_and_every_entry_has_a_source_and_flags():
    validate_registry()
    for e in load_registry():
        assert e.source.strip()
        assert set(e.verified) == set(FIELDS)


@pytest.mark.parametrize("open_data, stats, method, expected", [
    (True, None, None, 1), (True, False, False, 1), (False, True, True, 1), (None, True, True, 1),
    (False, True, False, 0), (False, False, True, 0), (None, None, None, 0), (False, True, None, 0)])
def test_score_is_open_data_or_stats_and_method(open_data, stats, method, expected):
    assert score({"open_data": open_data, "publishes_stats": stats, "publishes_method": method}) == expected


def test_score_refuses_a_non_boolean():
    with pytest.raises(TypeError, match="publishes_stats must be true, false or null"):
        score({"open_data": False, "publishes_stats": "yes", "publishes_method": True})


def test_the_nine_models_scored_one_split_four_open_five_method_and_stats():
    entries = load_registry()
    scored = {e.model for e in entries if e.score == 1}
    assert scored == {"OLMo", "Pythia", "RedPajama-INCITE 7B", "StarCoder 2", "GPT-4", "Llama 3.1", "Qwen2",
                      "Palmyra", "Apple Intelligence foundation models"}
    assert {e.model for e in entries if e.open_data} == {"OLMo", "Pythia", "RedPajama-INCITE 7B", "StarCoder 2"}
    cov = coverage(entries)
    assert cov["score_1"] == {"paper": 9, "registry": 9}
    assert cov["open_data"] == {"paper": 4, "registry": 4}
    assert cov["method_and_stats"] == {"paper": 5, "registry": 5}
    # the models scored 0 and the engagement models are not in the file: the coverage says so
    assert cov["models"] == {"paper": 30, "registry": 9}
    assert cov["engagement"] == {"paper": 3, "registry": 0}


def test_unverified_fields_are_reported():
    olmo = next(e for e in load_registry() if e.model == "OLMo")
    assert "open_data" in olmo.unverified and "engagement" not in olmo.unverified


def test_schema_refuses_broken_entries():
    data = raw()
    bad = copy.deepcopy(data)
    del bad["entries"][0]["source"]
    with pytest.raises(jsonschema.ValidationError, match="source"):
        validate_registry(bad)
    bad = copy.deepcopy(data)
    bad["entries"][0]["open_data"] = "yes"
    with pytest.raises(jsonschema.ValidationError):
        validate_registry(bad)
    bad = copy.deepcopy(data)
    bad["entries"][0]["verified"].pop("benchmarks")
    with pytest.raises(jsonschema.ValidationError, match="benchmarks"):
        validate_registry(bad)
    bad = copy.deepcopy(data)
    bad["entries"].append(dict(bad["entries"][0], model="olmo"))
    with pytest.raises(ValueError, match="listed twice"):
        validate_registry(bad)
    assert registry_schema()["properties"]["entries"]["items"]["required"][0] == "model"


def test_score_refuses_a_mapping_without_one_of_the_three_fields():
    # a misspelt key ("open-data") used to read as None and score 0 without a word
    with pytest.raises(KeyError, match="open_data"):
        score({"open-data": True, "publishes_stats": None, "publishes_method": None})
    with pytest.raises(KeyError, match="publishes_method"):
        score({"open_data": False, "publishes_stats": True})


def test_schema_refuses_a_blank_source_or_model():
    data = raw()
    for fld in ("source", "model", "developer"):
        bad = copy.deepcopy(data)
        bad["entries"][0][fld] = "   "
        with pytest.raises(jsonschema.ValidationError):
            validate_registry(bad)
