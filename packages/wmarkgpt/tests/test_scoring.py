"""The visibility score: recomputation of the shipped scores, its fixed points, its errors."""

import numpy as np
import pytest

from wmarkgpt.data import read_qscore
from wmarkgpt.metrics import correlation
from wmarkgpt.scoring import VISIBILITY_LEVELS, check_visibility, predict_score, visibility_token_ids


@pytest.mark.parametrize(("split", "n", "srcc", "plcc"), [("Real", 500, 0.697, 0.750),
                                                         ("Synthetic", 5478, 0.941, 0.938)])
def test_recomputed_scores_match_the_stored_ones(data_dir, split, n, srcc, plcc):
    q = read_qscore(data_dir / f"WQA-{split}_wmarkgpt_qscore.json.gz")
    assert len(q) == n
    pred = [predict_score(v["logits"]) for v in q.values()]
    assert max(abs(p - v["predict_score"]) for p, v in zip(pred, q.values(), strict=False)) < 1e-12
    c = correlation(pred, [v["gt_score"] for v in q.values()])
    assert c.srcc == pytest.approx(srcc, abs=1e-3) and c.plcc == pytest.approx(plcc, abs=1e-3)
    batched = predict_score(np.array([[v["logits"][k] for k in VISIBILITY_LEVELS] for v in q.values()]))
    assert np.max(np.abs(batched - np.array(pred))) < 1e-12


def test_fixed_points():
    assert predict_score([50.0, 0.0, 0.0, 0.0, 0.0]) == pytest.approx(5.0, abs=1e-12)
    assert predict_score([0.0, 0.0, 0.0, 0.0, 50.0]) == pytest.approx(1.0, abs=1e-12)
    assert predict_score([7.0] * 5) == pytest.approx(3.0, abs=1e-15)
    assert predict_score(np.array([1e4, 0, 0, 0, 0])) == 5.0  # no overflow


def test_shift_invariance_and_monotonicity():
    base = np.array([1.0, 0.5, -0.2, 0.3, -1.0])
    assert predict_score(base + 100) == pytest.approx(predict_score(base), abs=1e-12)
    more_invisible = base.copy()
    more_invisible[0] += 1
    assert predict_score(more_invisible) > predict_score(base)


@pytest.mark.parametrize(("logits", "match"), [
    ({"invisible": 0, "faint": 0, "moderate": 0, "visible": 0}, "missing"),
    ({k: 0 for k in (*VISIBILITY_LEVELS, "hidden")}, "extra"),
    ([0.0] * 4, r"\(5,\)"),
    ([0.0, 0.0, np.nan, 0.0, 0.0], "NaN"),
])
def test_bad_logits_raise(logits, match):
    with pytest.raises(ValueError, match=match):
        predict_score(logits)


def test_labels_outside_the_five_raise():
    assert check_visibility("faint") == "faint"
    with pytest.raises(ValueError, match="'slight' is not one of invisible, faint"):
        check_visibility("slight")


def test_token_ids_need_distinct_first_subtokens():
    class Tok:
        unk_token_id = 0

        def __call__(self, word, add_special_tokens=False):
            return type("E", (), {"input_ids": [1 if word.startswith("in") else 2, 9]})()

    with pytest.raises(ValueError, match="share a first sub-token"):
        visibility_token_ids(Tok())


def test_token_ids_keep_the_space_prefix_of_a_sentencepiece_style_tokenizer():
    # a LLaMA-like tokenizer (metaspace "▁" prefix, BOS added): the official script takes
    # tokenizer(word).input_ids[1]; the first sub-token without special tokens must be the same "▁word" id
    from tokenizers import Tokenizer, decoders, pre_tokenizers, processors
    from tokenizers.models import BPE
    from tokenizers.trainers import BpeTrainer
    from transformers import PreTrainedTokenizerFast

    from wmarkgpt.scoring import visibility_token_ids

    tk = Tokenizer(BPE(unk_token="<unk>"))
    tk.pre_tokenizer = pre_tokenizers.Metaspace(replacement="\u2581", prepend_scheme="first")
    tk.decoder = decoders.Metaspace()
    tk.train_from_iterator(["the watermark visibility is: " + " ".join(VISIBILITY_LEVELS)] * 20 + ["in vis ible"] * 5,
                           BpeTrainer(vocab_size=120, special_tokens=["<unk>", "<s>", "</s>"]))
    tk.post_processor = processors.TemplateProcessing(single="<s> $A", special_tokens=[("<s>", 1)])
    tok = PreTrainedTokenizerFast(tokenizer_object=tk, bos_token="<s>", eos_token="</s>", unk_token="<unk>")
    ids = visibility_token_ids(tok)
    assert ids == [x[1] for x in tok(list(VISIBILITY_LEVELS)).input_ids]
    assert [tok.convert_ids_to_tokens(i) for i in ids] == ["\u2581" + w for w in VISIBILITY_LEVELS]
