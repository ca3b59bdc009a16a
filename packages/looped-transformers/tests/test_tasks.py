"""Task labels against rapidfuzz and brute force; formats, vocabularies, baselines and errors."""

from itertools import combinations

import numpy as np
import pytest
import torch
from rapidfuzz.distance import LCSseq, Levenshtein

from looped_transformers import LoopedConfig, LoopedForCausalLM
from looped_transformers.tasks import (
    CharLMTask,
    DPTask,
    RegressionTask,
    edit_distance,
    knapsack,
    lcs_length,
    lis_length,
    make_task,
    regression_baselines,
    stdlib_corpus,
    subset_sum,
)


def random_strings(rng, n, alphabet="abcde", max_len=12):
    for _ in range(n):
        a = "".join(rng.choice(list(alphabet), size=rng.integers(0, max_len + 1)))
        b = "".join(rng.choice(list(alphabet), size=rng.integers(0, max_len + 1)))
        yield a, b


def test_edit_distance_and_lcs_equal_rapidfuzz():
    rng = np.random.default_rng(0)
    for a, b in random_strings(rng, 400):
        assert edit_distance(a, b) == Levenshtein.distance(a, b, weights=(2, 2, 3)), (a, b)
        assert lcs_length(a, b) == LCSseq.similarity(a, b), (a, b)


def test_generated_ed_and_lcs_answers_equal_rapidfuzz():
    for name, ref in (("ed", lambda a, b: Levenshtein.distance(a, b, weights=(2, 2, 3))),
                      ("lcs", LCSseq.similarity)):
        task = DPTask(name, max_length=12)
        rng = np.random.default_rng(1)
        for _ in range(200):
            tokens, answer = task.problem(rng)
            bar = tokens.index("|")
            a, b = "".join(tokens[:bar]), "".join(tokens[bar + 1:-1])
            assert 4 <= len(a) <= 12 and 4 <= len(b) <= 12
            assert answer == ref(a, b)


def brute_lis(seq):
    return max((k for k in range(len(seq) + 1) for c in combinations(seq, k)
                if all(x < y for x, y in zip(c, c[1:], strict=False))), default=0)


def brute_knapsack(w, v, cap):
    return max(sum(v[i] for i in s) for k in range(len(w) + 1) for s in combinations(range(len(w)), k)
               if sum(w[i] for i in s) <= cap)


def test_lis_knapsack_and_subset_sum_equal_brute_force_up_to_length_10():
    rng = np.random.default_rng(2)
    for _ in range(150):
        n = int(rng.integers(1, 11))
        seq = rng.integers(0, 20, size=n).tolist()
        assert lis_length(seq) == brute_lis(seq), seq
        w, v = rng.integers(1, 10, size=n).tolist(), rng.integers(1, 10, size=n).tolist()
        cap = int(rng.integers(1, sum(w) + 1))
        assert knapsack(w, v, cap) == brute_knapsack(w, v, cap)
        target = int(rng.integers(1, sum(w) + 1))
        sums = {sum(s) for k in range(n + 1) for s in combinations(w, k)}
        assert subset_sum(w, target) == int(target in sums)


@pytest.mark.parametrize("name", ["lis", "knapsack", "partial_sum"])
def test_generated_number_tasks_have_brute_force_answers(name):
    task = DPTask(name, min_length=2, max_length=8)
    rng = np.random.default_rng(3)
    answers = []
    for _ in range(60):
        tokens, answer = task.problem(rng)
        nums = [int(t) if t != "|" else None for t in tokens[:-1]]
        if name == "lis":
            assert answer == brute_lis(nums)
        elif name == "knapsack":
            cut = [i for i, x in enumerate(nums) if x is None]
            w, v, cap = nums[:cut[0]], nums[cut[0] + 1:cut[1]], nums[-1]
            assert answer == brute_knapsack(w, v, cap)
        else:
            xs, target = nums[:-2], nums[-1]
            sums = {sum(s) for k in range(len(xs) + 1) for s in combinations(xs, k)}
            assert answer == int(target in sums)
        answers.append(answer)
    assert len(set(answers)) > 1


def test_batch_format_labels_only_the_answer_token():
    task = DPTask("ed", max_length=6)
    batch = task.sample(16, random_state=0)
    sep, eos = task.vocab.index("<sep>"), task.vocab.index("<eos>")
    for ids, labels, answer in zip(batch.input_ids, batch.labels, batch.answers, strict=True):
        (pos,) = torch.nonzero(labels != -100)[:, 0].tolist()
        assert ids[pos - 1] == sep and task.vocab[int(ids[pos])] == str(answer) and ids[pos + 1] == eos
        assert labels[pos] == ids[pos]
    assert batch.input_ids.shape[1] <= task.max_sequence_length
    again = task.sample(16, random_state=0)
    assert torch.equal(batch.input_ids, again.input_ids)


def test_task_tokens_outside_the_model_vocabulary_raise():
    task = DPTask("ed", max_length=12)
    model = LoopedForCausalLM(LoopedConfig(vocab_size=40, hidden_size=32, num_attention_heads=2))
    with pytest.raises(ValueError, match=f"task 'ed' uses {task.vocab_size} tokens .* vocab_size is 40"):
        task.check_vocab(model.config.vocab_size)
    with pytest.raises(ValueError, match="token ids must lie in"):
        model(task.sample(2, random_state=0).input_ids)
    with pytest.raises(ValueError, match="outside task 'ed'"):
        task.encode(["999"])
    with pytest.raises(ValueError, match="task 'charlm' uses 128"):
        CharLMTask(n_chars=10_000).check_vocab(64)


def test_unknown_task_and_bad_parameters_raise():
    with pytest.raises(ValueError, match="unknown task 'cyk'; accepted: ed, lis, lcs, knapsack, partial_sum"):
        make_task("cyk")
    with pytest.raises(ValueError, match="min <= max"):
        DPTask("ed", min_length=5, max_length=3)
    with pytest.raises(ValueError, match="sparsity"):
        RegressionTask(sparsity=9)


def test_least_squares_baseline_is_exact_once_the_system_is_determined():
    task = RegressionTask(n_dims=5, n_points=11)
    errs = regression_baselines(task.sample(500, random_state=0))
    ls = errs["least_squares"]
    # with i < d examples the minimum-norm solution misses (d - i) / d of the signal on average
    assert ls[0] == pytest.approx(np.mean(task.sample(500, random_state=0).ys.numpy()[:, 0] ** 2) / 5, rel=1e-6)
    for i in range(1, 5):
        assert ls[i] == pytest.approx((5 - i) / 5, abs=0.15)
    assert ls[6:].max() < 1e-10
    assert errs["averaging"][10] > errs["ridge"][10] > ls[10]
    assert errs["knn"][10] > 0.3


def test_noisy_and_sparse_regression():
    noisy = make_task("noisy_linear_regression", n_dims=5, n_points=11)
    errs = regression_baselines(noisy.sample(2000, random_state=1))
    # least squares with 10 points and 5 dims: error sigma^2 (1 + d / (n - d - 1)) / d = 0.25 * 2.25 / 5
    assert errs["least_squares"][10] == pytest.approx(0.25 * (1 + 5 / 4) / 5, rel=0.25)
    sparse = make_task("sparse_linear_regression", n_dims=5)
    b = sparse.sample(50, random_state=0)
    assert b.xs.shape == (50, 11, 5)


def test_stdlib_corpus_is_ascii_python_and_the_lm_task_splits_it():
    text = stdlib_corpus(50_000)
    assert len(text) == 50_000 and text.isascii() and "def " in text and "import" in text
    task = CharLMTask(seq_len=32, n_chars=50_000)
    batch = task.sample(4, random_state=0)
    assert batch.input_ids.shape == (4, 32) and torch.equal(batch.input_ids, batch.labels)
    assert int(batch.input_ids.max()) < 128
    assert len(task.val_data) == 5_000
