"""Metric parity with the official per-item results, the strip quirk, ACC modes, the judges."""

import types

import numpy as np
import pytest
from scipy.stats import pearsonr, spearmanr

from wmarkgpt.data import read_results, read_wqa
from wmarkgpt.metrics import (
    JUDGE_FALLBACK,
    LLMJudge,
    RubricJudge,
    bleu1,
    clean_text,
    correlation,
    evaluate_answers,
    rouge_l,
    visibility_accuracy,
)

MODELS = {"wmarkgpt-7b": (0.42419344789735747, 0.4180043942610876, 71.95, 0.550, 0.546),
          "qwen2-vl-7b-instruct": (0.327835742384502, 0.2885274975143175, 24.45, 0.156, 0.156)}


@pytest.mark.parametrize("model", list(MODELS))
def test_per_item_bleu_and_rouge_equal_the_stored_values_exactly(model, labels, data_dir):
    answers = read_wqa(data_dir / f"WQA-Real_{model}.json.gz")
    stored = read_results(data_dir / f"WQA-Real_{model}-result.json.gz")
    ev = evaluate_answers(labels, answers)
    assert ev.n == len(stored) == 500
    assert all(ev.items[k].bleu_1 == stored[k]["BLEU_1"] for k in stored)
    assert all(ev.items[k].rouge_l == stored[k]["ROUGE_L"] for k in stored)
    bleu, rouge, llm, acc_sub, acc_exact = MODELS[model]
    assert ev.bleu_1 == pytest.approx(bleu, abs=1e-12)
    assert ev.rouge_l == pytest.approx(rouge, abs=1e-12)
    assert np.mean([stored[k]["LLM_SCORE"] for k in stored]) * 25 == pytest.approx(llm, abs=1e-5)
    assert ev.acc_substring == pytest.approx(acc_sub, abs=1e-12)
    assert ev.acc_exact == pytest.approx(acc_exact, abs=1e-12)
    assert ev.llm_score_x25 is None and ev.n_judge_fallbacks == 0


def test_substring_mode_counts_visible_inside_invisible(labels, data_dir):
    answers = {a["image"]: a["visibility"] for a in read_wqa(data_dir / "WQA-Real_wmarkgpt-7b.json.gz")}
    quirk = [x["image"] for x in labels if x["visibility"] == "visible" and answers[x["image"]] == "invisible"]
    assert len(quirk) == 2  # exactly the 0.550 - 0.546 gap on 500 items


def test_strip_removes_the_characters_not_the_suffix():
    assert clean_text("The mark is obvious.</s>") == "The mark is obvious.</"  # "/" is not in the set
    assert clean_text("<s>shapes") == "hape"
    assert clean_text("\\s>") == ""
    with pytest.raises(TypeError, match="str"):
        clean_text(None)


def test_bleu1_matches_hand_computation_and_needs_no_downloads():
    # clipped unigram matches: "the" once, "cat" once: 2 of 4, candidate shorter than reference: BP = exp(1 - 5/4)
    assert bleu1("the cat the cat", "the cat sat on mat") == pytest.approx(0.5 * np.exp(1 - 5 / 4))
    assert bleu1("a b c", "a b c") == 1.0
    assert bleu1("x y", "a b c") == 0.0


def test_rouge_l_is_the_lcs_f_value_and_rejects_empty():
    # LCS("a b c d", "a c d e") = 3, P = R = 3/4
    assert rouge_l("a b c d", "a c d e") == pytest.approx(0.75, abs=1e-6)
    with pytest.raises(ValueError, match="empty"):
        rouge_l("   ", "a b")


def test_accuracy_modes_and_errors():
    assert visibility_accuracy(["visible"], ["invisible"]) == 1.0
    assert visibility_accuracy(["visible"], ["invisible"], mode="exact") == 0.0
    assert visibility_accuracy(["Faint"], [" faint "], mode="exact") == 1.0
    with pytest.raises(ValueError, match="2 items"):
        visibility_accuracy(["a", "b"], ["a"])
    with pytest.raises(ValueError, match="empty"):
        visibility_accuracy([], [])
    with pytest.raises(ValueError, match="mode"):
        visibility_accuracy(["a"], ["a"], mode="fuzzy")


def test_correlation_agrees_with_scipy_and_rejects_degenerate_input():
    rng = np.random.default_rng(0)
    x, y = rng.normal(size=40), rng.normal(size=40)
    c = correlation(x, y)
    assert c.srcc == spearmanr(x, y)[0] and c.plcc == pearsonr(x, y)[0] and c.n == 40
    with pytest.raises(ValueError, match="constant"):
        correlation([1, 1, 1], [1, 2, 3])
    with pytest.raises(ValueError, match="3 items"):
        correlation([1, 2], [1, 2])
    with pytest.raises(ValueError, match="NaN"):
        correlation([1, np.nan, 2], [1, 2, 3])


class _FakeClient:
    """An OpenAI-compatible client whose replies come from a list (an exception is raised as is)."""

    def __init__(self, replies):
        self.replies = list(replies)
        self.prompts = []
        self.messages = []
        self.chat = types.SimpleNamespace(completions=types.SimpleNamespace(create=self._create))

    def _create(self, *, model, messages, **kwargs):
        self.messages.append(messages)
        self.prompts.append(messages[-1]["content"])
        reply = self.replies.pop(0)
        if isinstance(reply, Exception):
            raise reply
        return types.SimpleNamespace(choices=[types.SimpleNamespace(message=types.SimpleNamespace(content=reply))])


def _records(texts, vis):
    return [{"image": f"{i}.png", "visibility": v, "conversations": [{"value": "q"}, {"value": t}]}
            for i, (t, v) in enumerate(zip(texts, vis, strict=False))]


def test_llm_judge_scores_x25_and_counts_the_fallbacks():
    labels = _records(["a red logo. The watermark visibility is: faint."] * 4, ["faint"] * 4)
    answers = _records(["a red logo. The watermark visibility is: faint.</s>"] * 4, ["faint"] * 4)
    client = _FakeClient(["4", TimeoutError("down"), "not a number", "3"])
    judge = LLMJudge(client, model="judge-model")
    ev = evaluate_answers(labels, answers, judge=judge)
    # scores 4, 2.5, 2.5, 3 -> mean 3.0 -> x25 = 75
    assert ev.llm_score_x25 == pytest.approx(75.0)
    assert ev.n_judge_fallbacks == 2 and judge.n_calls == 4 and not ev.judge_is_proxy
    assert 'Description: "a red logo. The watermark visibility is: faint.</"' in client.prompts[0]  # strip quirk
    strict = LLMJudge(_FakeClient([ValueError("boom")]), model="m", fallback=None)
    with pytest.raises(ValueError, match="boom"):
        strict("a", "b")
    with pytest.raises(TypeError, match="OpenAI-compatible"):
        LLMJudge(object(), model="m")
    assert JUDGE_FALLBACK == 2.5


def test_rubric_judge_is_a_deterministic_labelled_proxy():
    judge = RubricJudge()
    ref = "The watermark is a star logo in the top-left of the image. The watermark visibility is: faint."
    assert judge(ref, ref) == pytest.approx(4.0)
    wrong = "The watermark is a ring logo in the bottom-right of the image. The watermark visibility is: obvious."
    assert judge(wrong, ref) < 2.0
    ev = evaluate_answers(_records([ref], ["faint"]), _records([wrong], ["obvious"]), judge=RubricJudge())
    assert ev.judge_is_proxy and ev.n_judge_fallbacks == 0


def test_evaluate_answers_rejects_missing_and_malformed_records():
    labels = _records(["a b"], ["faint"])
    with pytest.raises(ValueError, match="no answer"):
        evaluate_answers(labels, _records(["a b"], ["faint"])[:0] + [
            {"image": "other.png", "visibility": "faint", "conversations": [{}, {"value": "x"}]}])
    with pytest.raises(ValueError, match="lacks a field"):
        evaluate_answers(labels, [{"image": "0.png"}])
    with pytest.raises(ValueError, match="twice"):
        evaluate_answers(labels, labels + labels)
    with pytest.raises(ValueError, match="empty"):
        evaluate_answers([], labels)


def test_empty_or_missing_visibility_label_is_an_error_not_a_match(labels, data_dir):
    # "" is a substring of every prediction and None used to become the string "None"
    with pytest.raises(ValueError, match="empty"):
        visibility_accuracy(["", "faint"], ["obvious", "faint"])
    with pytest.raises(ValueError, match="empty"):
        visibility_accuracy(["  "], ["obvious"], mode="exact")
    answers = read_wqa(data_dir / "WQA-Real_wmarkgpt-7b.json.gz")
    for bad in (None, "", 3):
        lab = [dict(x) for x in labels[:5]]
        lab[0]["visibility"] = bad
        with pytest.raises((TypeError, ValueError), match="visibility"):
            evaluate_answers(lab, answers)
    ans = [dict(x) for x in answers]
    ans[[a["image"] for a in ans].index(labels[0]["image"])]["visibility"] = None
    with pytest.raises(TypeError, match="visibility"):
        evaluate_answers(labels[:5], ans)


@pytest.mark.parametrize("value", [10.0, -1.0, float("nan")])
def test_judge_scores_outside_zero_to_four_are_errors(labels, data_dir, value):
    # a plain judge returning 10 gave an "LLM x25" of 250 without complaint
    answers = read_wqa(data_dir / "WQA-Real_wmarkgpt-7b.json.gz")
    with pytest.raises(ValueError, match=r"\[0, 4\]"):
        evaluate_answers(labels[:3], answers, judge=lambda c, r: value)
