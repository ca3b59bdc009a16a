"""The report: schema-valid JSON, the clean-subset delta equal to a hand computation, a seeded interval."""

import json

import jsonschema
import numpy as np
import pytest

from train_test_overlap import Instance, OverlapIndex, TestSet, load_helm_scenarios
from train_test_overlap.presets import evaluate_presets
from train_test_overlap.report import OverlapReport, clean_delta, report_schema


def _words(k, prefix):
    return " ".join(f"{prefix}{j}" for j in range(k))


@pytest.fixture(scope="module")
def setup():
    inst = [Instance(f"q{k}", _words(20, f"x{k}_"), ["a"]) for k in range(6)]
    ts = TestSet("toy", "test", inst)
    corpus = [inst[0].input, inst[1].input + " tail", "unrelated words only"]
    scores = {("toy", "test"): {"q0": 1.0, "q1": 1.0, "q2": 0.0, "q3": 1.0, "q4": 0.0, "q5": 1.0}}
    counts = OverlapIndex(ts, n=(5, 13)).scan(corpus)
    results, _ = evaluate_presets(ts, corpus, presets=["helm", "palm"], scores=scores)
    return ts, counts, results, scores


def test_json_validates_and_card_describes_the_run(setup):
    ts, counts, results, scores = setup
    report = OverlapReport(counts, results, scores=scores, n=13, random_state=0)
    data = report.to_json()
    jsonschema.validate(data, report_schema())
    report.validate()
    m = data["methodology"]
    assert (m["tokenizer"], m["n"], m["corpus"]["documents"]) == ("helm-default", [5, 13], 3)
    assert m["corpus"]["bytes"] == sum(len(d.encode()) for d in [ts.instances[0].input, ts.instances[1].input + " tail",
                                                                   "unrelated words only"])
    (tset,) = data["test_sets"]
    assert {(o["n"], o["part"]): o["num_overlapping"] for o in tset["overlap"]}[(13, "input")] == 2
    assert tset["metrics"]["input_binary_mean"] == pytest.approx(2 / 6)
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate({**data, "methodology": {**m, "config_hash": "xyz"}}, report_schema())


def test_clean_delta_equals_hand_computation(setup):
    _, counts, results, scores = setup
    data = OverlapReport(counts, results, scores=scores, random_state=0).to_json()
    helm = next(p for p in data["presets"] if p["preset"] == "helm")
    # dirty: q0, q1 (verbatim); clean: q2..q5 with scores 0, 1, 0, 1 -> 0.5; all: 4/6
    d = helm["delta"]
    assert d["num_clean"] == 4 and d["clean_mean"] == 0.5 and d["all_mean"] == pytest.approx(4 / 6)
    assert d["clean_minus_all"] == pytest.approx(0.5 - 4 / 6)
    assert d["low"] <= d["clean_minus_all"] <= d["high"]


def test_bootstrap_interval_is_seeded_and_matches_a_direct_resampling():
    labels = {f"i{k}": ("clean" if k % 3 else "dirty") for k in range(30)}
    rng = np.random.default_rng(5)
    scores = {i: float(rng.random() < 0.6) for i in labels}
    a = clean_delta(labels, scores, n_resamples=500, random_state=1)
    assert a == clean_delta(labels, scores, n_resamples=500, random_state=1)
    # direct loop over the same draws
    y = np.array([scores[i] for i in labels])
    c = np.array([labels[i] == "clean" for i in labels])
    idx = np.random.default_rng(1).integers(0, 30, size=(500, 30))
    deltas = [y[r][c[r]].mean() - y[r].mean() for r in idx if c[r].any()]
    assert (a["low"], a["high"]) == pytest.approx(tuple(np.quantile(deltas, [0.025, 0.975])), rel=1e-12)
    assert clean_delta({"a": "dirty"}, {"a": 1.0})["clean_minus_all"] is None


def test_markdown_and_files(tmp_path, helm_data):
    sets = load_helm_scenarios(helm_data / "scenarios.jsonl")
    counts = OverlapIndex(sets, n=(5, 13)).scan(helm_data / "corpus.txt")
    results, _ = evaluate_presets(sets, helm_data / "corpus.txt", presets=["helm"])
    report = OverlapReport(counts, results)
    text = report.to_markdown()
    assert "| helm | yes |" in text and "22 documents" in text and "no scores" in text
    files = report.save(tmp_path / "report")
    assert [f.suffix for f in files] == [".md", ".json", ".png"] and all(f.stat().st_size > 0 for f in files)
    jsonschema.validate(json.loads(files[1].read_text()), report_schema())


def test_results_of_other_test_sets_are_refused(setup):
    _, counts, _, _ = setup
    other = TestSet("other", "test", [Instance("z", "p q r")])
    results, _ = evaluate_presets(other, ["p q r"], presets=["helm"])
    with pytest.raises(ValueError, match="has no test set in the counts"):
        OverlapReport(counts, results)


def test_scores_of_a_test_set_not_in_the_counts_are_refused(setup):
    _, counts, results, scores = setup
    (ids,) = scores.values()
    with pytest.raises(ValueError, match=r"scores name test sets that are not in the counts: \[\('toy', 'valid'\)\]"):
        OverlapReport(counts, results, scores={("toy", "valid"): ids})


def test_non_finite_scores_are_refused_not_written_as_nan_into_the_json():
    # a NaN score (a failed evaluation) used to give NaN means and a report.json that is not valid JSON
    ts = TestSet("t", "test", [Instance("a", "x y z w v u", []), Instance("b", "p q r s t o", [])])
    corpus = ["x y z w v u"]
    for bad in (float("nan"), float("inf")):
        scores = {("t", "test"): {"a": bad, "b": 1.0}}
        with pytest.raises(ValueError, match=r"score of 'a' in \('t', 'test'\) is not finite"):
            evaluate_presets(ts, corpus, presets=["helm"], scores=scores)
        counts = OverlapIndex(ts, n=5).scan(corpus)
        with pytest.raises(ValueError, match="not finite"):
            OverlapReport(counts, scores=scores, n=5)
        with pytest.raises(ValueError, match="not finite"):
            clean_delta({"a": "clean", "b": "dirty"}, {"a": bad, "b": 1.0})
