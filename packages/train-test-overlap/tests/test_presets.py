"""Developers' rules: lm-eval parity of the GPT-3 n-grams, exact threshold boundaries, cases where rules disagree."""

import json
import logging
import math

import pytest

from train_test_overlap import Instance, JanitorTokenizer, OverlapIndex, TestSet
from train_test_overlap.presets import PRESETS, evaluate_presets, get_preset


def _words(k, prefix="w"):
    return [f"{prefix}{j}" for j in range(k)]


def test_gpt3_ngrams_equal_lm_eval_janitor(helm_data):
    cases = json.loads((helm_data.parent / "janitor_ngrams.json").read_text(encoding="utf-8"))["cases"]
    assert len(cases) == 7
    for case in cases:
        tokens = JanitorTokenizer().tokenize(case["text"])
        for n in (3, 13):
            mine = {" ".join(tokens[j:j + n]) for j in range(len(tokens) - n + 1)}
            assert mine == set(case[str(n)]), (case["text"][:30], n)
    # the index built by the gpt3 preset holds exactly the janitor's 13-grams of each input
    text = cases[2]["text"]
    index = OverlapIndex(TestSet("t", "test", [Instance("q", text)]), n=13, tokenizer=get_preset("gpt3").tokenizer,
                         parts=("input",))
    assert {" ".join(index.tokens_of(g)) for g in index._table[13]} == set(cases[2]["13"])


def _label(preset, instance_tokens, corpus_docs):
    ts = TestSet("t", "test", [Instance("q", " ".join(instance_tokens))])
    (res,), _ = evaluate_presets(ts, corpus_docs, presets=[preset])
    return res.labels["q"], res.scores["q"]


@pytest.mark.parametrize(("total", "hits", "expect"), [(10, 7, "dirty"), (10, 6, "clean"), (100, 69, "clean"), (100, 70, "dirty")])
def test_palm_boundary_at_70_percent_of_8grams(total, hits, expect):
    tokens = _words(total + 7)  # total 8-grams, all distinct
    label, score = _label("palm", tokens, [" ".join(tokens[:hits + 7])])  # the first `hits` 8-grams occur
    assert (label, score) == (expect, pytest.approx(hits / total))


@pytest.mark.parametrize(("covered", "expect"), [(19, "clean"), (21, "ambiguous"), (79, "ambiguous"), (81, "dirty")])
def test_llama2_boundaries_at_20_and_80_percent_of_tokens(covered, expect):
    tokens = _words(100)
    label, score = _label("llama2", tokens, [" ".join(tokens[:covered])])  # 10-grams cover exactly `covered` tokens
    assert (label, score) == (expect, pytest.approx(covered / 100))


def test_rules_disagree_where_their_definitions_differ():
    base = "the quick brown fox jumps over the lazy dog while the farmer watches from the old porch"
    inst = [
        Instance("one13", base + " " + " ".join(_words(30, "u"))),  # one shared 13-gram run in 47 tokens
        Instance("apostrophe", "don't stop believing hold on to that feeling streetlight people living just to"),
        Instance("reformatted", "Sphinx of black quartz, judge my vow: five boxing wizards jump quickly at dawn!"),
    ]
    corpus = [base,
              "dont stop believing hold on to that feeling streetlight people living just to find emotion",
              "SPHINX-OF-BLACK-QUARTZ JUDGE MY VOW five boxing wizards jump quickly at dawn"]
    ts = TestSet("t", "test", inst)
    res, stats = evaluate_presets(ts, corpus, presets=["helm", "gpt3", "gpt4", "palm", "llama2", "marin"], random_state=0)
    labels = {r.preset.name: r.labels for r in res}
    # a single 13-gram run: dirty for the any-13-gram rules, clean for the fraction rules
    assert labels["helm"]["one13"] == labels["gpt3"]["one13"] == "dirty"
    assert labels["palm"]["one13"] == labels["marin"]["one13"] == "clean"  # 5 of 35 13-grams, 10 of 40 8-grams
    assert labels["llama2"]["one13"] == "ambiguous"  # 17 of 47 tokens covered: between 20% and 80%
    # "don't" is two HELM tokens ("don", "t") but one janitor token ("dont")
    assert labels["gpt3"]["apostrophe"] == "dirty" and labels["helm"]["apostrophe"] == "clean"
    # case and punctuation changes: GPT-4's character rule keeps case, HELM's tokenizer lower-cases
    assert labels["helm"]["reformatted"] == "dirty" and labels["gpt4"]["reformatted"] == "clean"
    assert set(stats) == {"helm-default", "janitor"} and stats["janitor"].documents == 3


def test_gpt4_substrings_survive_spacing_and_symbols():
    text = "The mitochondria is the powerhouse of the cell; it makes ATP from glucose and oxygen."
    ts = TestSet("t", "test", [Instance("q", text)])
    squeezed = "prefix " + "".join(ch for ch in text if ch.isalnum()) + " suffix"
    (res,), _ = evaluate_presets(ts, [squeezed], presets=["gpt4"], random_state=1)
    assert res.labels["q"] == "dirty"
    (res,), _ = evaluate_presets(ts, [text.lower()], presets=["gpt4"], random_state=1)
    assert res.labels["q"] == "clean"


def test_clean_delta_equals_hand_computation():
    inst = [Instance(f"q{k}", " ".join(_words(14, f"x{k}_"))) for k in range(4)]
    corpus = [inst[0].input, inst[1].input]  # q0, q1 dirty under any-13-gram rules
    scores = {("t", "test"): {"q0": 1.0, "q1": 1.0, "q2": 0.0, "q3": 1.0}}
    (res,), _ = evaluate_presets(TestSet("t", "test", inst), corpus, presets=["helm"], scores=scores)
    assert res.labels == {"q0": "dirty", "q1": "dirty", "q2": "clean", "q3": "clean"}
    assert res.metric_by_label["all"] == 0.75 and res.metric_by_label["clean"] == 0.5 and res.metric_by_label["dirty"] == 1.0
    assert res.clean_delta == pytest.approx(-0.25)
    assert res.fractions == {"clean": 0.5, "dirty": 0.5, "ambiguous": 0.0}
    assert math.isnan(res.metric_by_label["ambiguous"])


def test_unknown_preset_lists_accepted_and_unverified_warns(caplog):
    with pytest.raises(ValueError, match=r"accepted: \['gpt3', 'gpt4', 'helm', 'llama2', 'llama3', 'marin', 'palm'\]"):
        get_preset("gpt5")
    with caplog.at_level(logging.WARNING):
        get_preset("palm")
        get_preset("helm")
    assert [r.getMessage().split(":")[0] for r in caplog.records] == ["preset 'palm'"]
    assert get_preset("llama3", dirty_at=0.3).dirty_at == 0.3
    assert {p.name for p in PRESETS.values() if p.verified} == {"helm"}
    with pytest.raises(ValueError, match="thresholds"):
        get_preset("llama2", clean_below=0.9)


def test_scores_must_cover_every_instance():
    ts = TestSet("t", "test", [Instance("a", "x y"), Instance("b", "y z")])
    with pytest.raises(ValueError, match="lack 1 instance ids"):
        evaluate_presets(ts, ["x y"], presets=["helm"], scores={("t", "test"): {"a": 1.0}})


def test_two_substring_rules_with_different_lengths_keep_their_own_length():
    import dataclasses

    pytest.importorskip("ahocorasick")
    ts = TestSet("t", "test", [Instance("q", "abcdefghij" * 10)])
    corpus = ["abcdefghij" * 3]  # 30 normalised characters: a 20-character substring fits, a 50-character one cannot
    short = dataclasses.replace(get_preset("gpt4"), name="gpt4-20", substring_length=20)
    alone, _ = evaluate_presets(ts, corpus, presets=[short])
    both, _ = evaluate_presets(ts, corpus, presets=["gpt4", short])
    assert alone[0].labels["q"] == "dirty"
    assert {r.preset.name: r.labels["q"] for r in both} == {"gpt4": "clean", "gpt4-20": "dirty"}


def test_scores_for_a_test_set_that_was_not_scanned_are_refused():
    # HELM scenario names carry their args ("mmlu,subject=x"): scores keyed by the bare name used to give nan deltas
    ts = TestSet("mmlu,subject=x", "test", [Instance("a", "x y"), Instance("b", "y z")])
    with pytest.raises(ValueError, match=r"scores name test sets that were not scanned: \[\('mmlu', 'test'\)\]"):
        evaluate_presets(ts, ["x y"], presets=["helm"], scores={("mmlu", "test"): {"a": 1.0, "b": 0.0}})
