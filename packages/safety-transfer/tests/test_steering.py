"""Steering vectors: brute force, and parity with the steering-vectors library where it is importable.

steering-vectors 0.12.2 declares ``transformers<5`` while this repository runs transformers 5, so it is
not an installable extra here; its source runs unchanged on transformers 5.24 when placed on the path
(its wheel unpacked onto ``PYTHONPATH``). The live tests run then and are skipped otherwise; the stored
outputs in ``test_steering_goldens.py`` are compared on every run.
"""

import numpy as np
import pytest
import torch

from safety_transfer import add_vector, diff_in_means, pca_direction, steering_vector, sweep

POS = ["|DEPLOY| hello there", "|DEPLOY| what is", "|DEPLOY| go", "|DEPLOY| the cat sat on", "|DEPLOY| abc"]
NEG = ["hello there", "what is", "go", "the cat sat on", "abc"]
IDS = torch.tensor([[104, 101, 108, 108, 111, 32, 119, 111]])


def test_diff_in_means_and_pca_equal_brute_force():
    rng = np.random.default_rng(0)
    pos, neg = rng.normal(size=(9, 6)) + 1.0, rng.normal(size=(9, 6))
    assert np.allclose(diff_in_means(torch.from_numpy(pos), torch.from_numpy(neg)).numpy(), (pos - neg).mean(0))
    unpaired = diff_in_means(torch.from_numpy(pos), torch.from_numpy(neg[:4]), paired=False).numpy()
    assert np.allclose(unpaired, pos.mean(0) - neg[:4].mean(0))
    d = pos - neg
    evals, evecs = np.linalg.eigh(d.T @ d)  # top eigenvector of the uncentred second moment of +-d
    top = evecs[:, -1] * np.sign((d @ evecs[:, -1]).mean())
    got = pca_direction(torch.from_numpy(pos), torch.from_numpy(neg)).numpy()
    assert np.allclose(got, top, atol=1e-10) and np.isclose(np.linalg.norm(got), 1.0)


@pytest.mark.parametrize("family", ["llama", "qwen2", "gemma2"])
def test_steering_vector_reads_the_last_token(families, tok, family):
    model = families[family]
    sv = steering_vector(model, tok, POS, NEG, 1, batch_size=2)
    with torch.no_grad():
        pos = torch.stack([model(**tok([p], return_tensors="pt"), output_hidden_states=True).hidden_states[2][0, -1]
                           for p in POS])
        neg = torch.stack([model(**tok([p], return_tensors="pt"), output_hidden_states=True).hidden_states[2][0, -1]
                           for p in NEG])
    assert torch.allclose(sv.vector, (pos - neg).mean(0), atol=1e-5)
    assert (sv.layer, sv.method, sv.n_pairs) == (1, "mean", 5)


@pytest.mark.parametrize("family", ["llama", "qwen2", "gemma2"])
def test_parity_with_steering_vectors(families, tok, family):
    sv_lib = pytest.importorskip("steering_vectors")
    model = families[family]
    for aggregator, method, tol in ((sv_lib.mean_aggregator(), "mean", 1e-6), (sv_lib.pca_aggregator(), "pca", 1e-5)):
        theirs = sv_lib.train_steering_vector(model, tok, list(zip(POS, NEG, strict=True)), layers=[1],
                                              aggregator=aggregator, show_progress=False)
        ours = steering_vector(model, tok, POS, NEG, 1, method=method)
        assert (theirs.layer_activations[1] - ours.vector).abs().max() < tol, method
    peer = sv_lib.SteeringVector({1: ours.vector})
    with torch.no_grad():
        with peer.apply(model, multiplier=2.5):
            a = model(input_ids=IDS).logits
        with ours.apply(model, alpha=2.5):
            b = model(input_ids=IDS).logits
    assert (a - b).abs().max() < 1e-6


def test_parity_with_steering_vectors_for_a_tokenizer_with_bos(families, bos_tok):
    sv_lib = pytest.importorskip("steering_vectors")
    model = families["llama"]
    theirs = sv_lib.train_steering_vector(model, bos_tok, list(zip(POS, NEG, strict=True)), layers=[1],
                                          show_progress=False)
    ours = steering_vector(model, bos_tok, POS, NEG, 1, batch_size=2)
    assert (theirs.layer_activations[1] - ours.vector).abs().max() < 1e-6


def test_sweep_finds_the_strength_that_minimises_the_metric(families):
    model = families["llama"]
    v = torch.randn(32, generator=torch.Generator().manual_seed(0))

    def metric(m):  # logit of token 65 at the last position
        with torch.no_grad():
            return float(m(input_ids=IDS).logits[0, -1, 65])

    res = sweep(model, {0: v, 2: -v}, [-2.0, 0.0, 2.0], metric)
    assert len(res.scores) == 6 and res.scores[(0, 0.0)] == res.scores[(2, 0.0)] == metric(model)
    assert res.scores[(res.best_layer, res.best_alpha)] == min(res.scores.values())
    with add_vector(model, res.best_layer, v if res.best_layer == 0 else -v, alpha=res.best_alpha):
        assert metric(model) == min(res.scores.values())


def test_steering_errors(families, tok):
    model = families["llama"]
    with pytest.raises(ValueError, match="positive prompt set is empty"):
        steering_vector(model, tok, [], NEG, 1)
    with pytest.raises(ValueError, match="as many positive as negative prompts, got 5 and 2"):
        steering_vector(model, tok, POS, NEG[:2], 1)
    with pytest.raises(ValueError, match="has 3 decoder layers"):
        steering_vector(model, tok, POS, NEG, 3)
    with pytest.raises(ValueError, match="method must be one of"):
        steering_vector(model, tok, POS, NEG, 1, method="logistic")
    with pytest.raises(ValueError, match="pca' needs paired"):
        steering_vector(model, tok, POS, NEG[:2], 1, method="pca", paired=False)
