"""Char-LM protocol: n-gram tables against counts, the windows they are scored on, the rules of the stored
cells (char LM and equal-compute in-context regression) on synthetic cell files, and a smoke run."""

import itertools
import json
import math

import numpy as np
import pytest
import torch

from looped_transformers.experiments import charlm_verdicts, icl_verdicts
from looped_transformers.tasks import CharLMTask, _ngram_fit, _ngram_nll, ngram_baselines, ngram_tables


def test_ngram_tables_equal_the_interpolated_counts():
    ids = np.random.default_rng(0).integers(0, 4, size=300)
    p0, p1, p2 = _ngram_fit(ids, 4, (0.7, 2.0))
    n = len(ids)
    uni = {c: (sum(ids == c) + 1) / (n + 4) for c in range(4)}
    for a, b, c in itertools.product(range(4), repeat=3):
        pairs = [(ids[i], ids[i + 1]) for i in range(n - 1)]
        triples = [(ids[i], ids[i + 1], ids[i + 2]) for i in range(n - 2)] if (a, b, c) == (0, 0, 0) or c == 3 else None
        bi = (pairs.count((b, c)) + 0.7 * uni[c]) / (sum(1 for x in pairs if x[0] == b) + 0.7)
        assert p1[b, c] == pytest.approx(bi)
        if triples is not None:
            tri = (triples.count((a, b, c)) + 2.0 * bi) / (sum(1 for x in triples if x[:2] == (a, b)) + 2.0)
            assert p2[a, b, c] == pytest.approx(tri)
    for table in (p0, p1, p2):
        assert np.allclose(table.sum(-1), 1.0)


def test_ngram_loss_of_a_periodic_text():
    ids = np.array([0, 1, 2] * 200)
    tables = ngram_tables(ids, order=2, vocab_size=8)
    windows = np.array([[0, 1, 2, 0, 1, 2, 0], [2, 0, 1, 2, 0, 1, 2]])
    assert _ngram_nll(tables[:1], windows) == pytest.approx(math.log(3), abs=0.02)  # three letters, equally often
    assert _ngram_nll(tables, windows) < 0.01  # the previous letter decides the next
    with pytest.raises(ValueError, match="ids must hold"):
        ngram_tables(np.array([0, 9] * 20), order=1, vocab_size=8)


def test_lm_loss_and_the_tables_score_the_same_windows():
    from looped_transformers import LoopedConfig, LoopedForCausalLM
    from looped_transformers.train import lm_loss

    task = CharLMTask(seq_len=8, n_chars=20_000)
    torch.manual_seed(0)
    model = LoopedForCausalLM(LoopedConfig(vocab_size=128, hidden_size=16, num_attention_heads=2, n_loops=2,
                                           max_position_embeddings=8))
    rng = np.random.default_rng(5)  # lm_loss draws 4, 4, then 2 windows from one stream
    windows = torch.cat([task.sample(m, rng, split="val").input_ids for m in (4, 4, 2)])
    with torch.no_grad():
        by_window = [float(model(w[None], labels=w[None]).loss) for w in windows]
    assert lm_loss(model, task, n=10, random_state=5, batch_size=4) == pytest.approx(np.mean(by_window), rel=1e-5)
    tables = ngram_tables(task.train_data.numpy(), order=2)
    got = ngram_baselines(task, n=10, random_state=5, batch_size=4)
    assert got["order-2"] == pytest.approx(_ngram_nll(tables, windows.numpy()))
    assert got["unigram"] > got["bigram"] > got["order-2"]


def _write_charlm(folder, values, tables=(3.0, 2.3, 1.7)):
    for i in range(3):
        (folder / f"baselines-seed{i}.json").write_text(json.dumps(
            {"seed_index": i, "val_loss": dict(zip(("unigram", "bigram", "order-2"), tables, strict=True))}))
        for (kind, r), per_seed in values.items():
            loss = {str(rt): per_seed[i] + 0.01 * rt for rt in (r, 2 * r, 4 * r)}
            loss[str(r)] = per_seed[i]
            (folder / f"{kind}-r{r}-steps5-seed{i}.json").write_text(json.dumps(
                {"model": kind, "r": r, "steps": 5, "seed_index": i, "val_loss": loss, "cpu_seconds": 1.0}))


def test_charlm_rules(tmp_path):
    _write_charlm(tmp_path, {("LT", 1): [1.60, 1.62, 1.58], ("LT", 4): [1.50, 1.53, 1.49],
                             ("TMLT", 4): [1.52, 1.55, 1.50]})
    rules = charlm_verdicts(tmp_path, n_seeds=3)["rules"]
    assert rules["0 gate"]["verdict"] == "passes"
    assert rules["1 more loops help"]["verdict"] == "holds"
    assert rules["1 more loops help"]["LT r=4 - LT r=1"]["values"] == pytest.approx([-0.10, -0.09, -0.09])
    assert rules["2 timestep encoding"]["verdict"] == "fails"  # TMLT above LT on every seed
    _write_charlm(tmp_path, {("LT", 1): [1.60, 1.62, 1.58], ("LT", 4): [1.50, 1.70, 1.49]})
    assert charlm_verdicts(tmp_path, n_seeds=3)["rules"]["1 more loops help"]["verdict"] == "fails"  # CI spans 0
    _write_charlm(tmp_path, {("LT", 1): [1.60, 1.75, 1.58]})  # one seed above the order-2 table
    rules = charlm_verdicts(tmp_path, n_seeds=3)["rules"]
    assert rules["0 gate"]["verdict"] == "fails"
    assert rules["1 more loops help"]["verdict"].startswith("not read")


def _write_icl(folder, errors, zero=1.0):
    for i in range(3):
        (folder / f"baselines-seed{i}.json").write_text(json.dumps({"seed_index": i, "errors": {
            name: [value] * 3 for name, value in (("zero", zero), ("least_squares", 0.3), ("ridge", 0.3),
                                                   ("knn", 1.0), ("averaging", 1.5))}}))
        for r, per_seed in errors.items():
            (folder / f"LT-r{r}-steps{8 // r}-seed{i}.json").write_text(json.dumps(
                {"model": "LT", "r": r, "steps": 8 // r, "seed_index": i, "cpu_seconds": 1.0,
                 "mean_error": {str(rt): per_seed[i] for rt in (r, 2 * r, 4 * r)},
                 "error_by_length": {str(rt): [per_seed[i]] * 3 for rt in (r, 2 * r, 4 * r)}}))


def test_equal_compute_rules(tmp_path):
    _write_icl(tmp_path, {1: [0.9, 0.8, 0.9], 2: [0.6, 0.5, 0.6], 4: [0.5, 0.4, 0.5], 8: [0.4, 0.3, 0.35]})
    report = icl_verdicts(tmp_path, n_seeds=3, steps=0, compute=8)
    assert set(report["models"]) == {"LT r=1 x 8 steps", "LT r=2 x 4 steps", "LT r=4 x 2 steps", "LT r=8 x 1 steps"}
    rules = report["rules"]
    assert rules["0 gate"]["verdict"] == "passes"
    assert rules["E1 loops over steps"]["LT r=8 - LT r=1"]["values"] == pytest.approx([-0.5, -0.5, -0.55])
    assert rules["E1 loops over steps"]["verdict"] == "holds"
    assert rules["E2 monotone in r"]["verdict"] == "holds"
    _write_icl(tmp_path, {1: [0.9, 0.8, 0.9], 2: [0.6, 0.5, 0.6], 4: [0.5, 0.4, 0.5], 8: [0.4, 0.9, 0.35]})
    rules = icl_verdicts(tmp_path, n_seeds=3, steps=0, compute=8)["rules"]
    assert rules["E1 loops over steps"]["verdict"] == "fails"
    assert rules["E2 monotone in r"]["verdict"] == "fails"  # r=8's mean 0.55 is above r=4's 0.47
    _write_icl(tmp_path, {1: [0.9] * 3, 2: [0.9] * 3, 4: [0.85] * 3, 8: [0.95] * 3})
    assert icl_verdicts(tmp_path, n_seeds=3, steps=0, compute=8)["rules"]["0 gate"]["verdict"] == "fails"


def test_charlm_protocol_smoke_run(tmp_path):
    from looped_transformers.__main__ import main

    assert main(["reproduce", "--protocol", "charlm-converged", "--quick", "--out", str(tmp_path)]) == 0
    report = json.loads((tmp_path / "charlm-converged.json").read_text())
    assert set(report["models"]) == {"LT r=1", "LT r=4", "TMLT r=4"}
    assert report["models"]["LT r=4"]["seeds"] == [0, 1]
    assert set(report["models"]["LT r=4"]) >= {"r_test=1r", "r_test=2r", "r_test=4r"}
    assert list(report["baselines"]) == ["unigram", "bigram", "order-2"]
    assert "0 gate" in report["rules"]
