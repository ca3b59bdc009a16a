"""Agreement with steering-vectors 0.12.2 through stored outputs (always runs).

The library cannot be installed next to this repository's transformers 5 (it declares ``transformers<5``),
so its outputs on the tiny models of ``tests/conftest.py`` were computed once and stored in
``tests/data/steering_vectors_<family>.npz`` (provenance in ``tests/data/PROVENANCE.md``, script in
``studies/make_steering_goldens.py``). The live comparison in ``test_steering.py`` runs as well when the
library is importable.
"""

import pathlib

import numpy as np
import pytest
import torch

from safety_transfer import add_vector, byte_tokenizer, steering_vector, tiny_causal_lm

DATA = pathlib.Path(__file__).parent / "data"
FAMILIES = ["llama", "qwen2", "gemma2"]
MEAN_TOL, PCA_TOL, LOGIT_TOL = 1e-6, 1e-5, 1e-6  # the stated parity tolerances


def _fingerprint(model):
    rows = []
    for p in model.parameters():
        flat = p.detach().double().flatten()
        rows.append([flat.sum().item(), (flat * flat).sum().item(), *flat[:4].tolist()])
    return np.asarray(rows)


@pytest.fixture(scope="module", params=FAMILIES)
def golden(request):
    g = dict(np.load(DATA / f"steering_vectors_{request.param}.npz"))
    model = tiny_causal_lm(str(g["family"]), hidden_size=int(g["hidden_size"]), num_layers=int(g["num_layers"]),
                           random_state=int(g["random_state"]))
    # the stored outputs are only evidence if the model is the one they were computed on
    assert np.allclose(_fingerprint(model), g["fingerprint"], rtol=1e-6, atol=1e-6), (
        "tiny_causal_lm no longer builds the stored model; regenerate with studies/make_steering_goldens.py")
    return g, model


def _ours(g, model, method, layer=None):
    return steering_vector(model, byte_tokenizer(), list(g["positive"]), list(g["negative"]),
                           int(g["layer"]) if layer is None else layer, method=method, batch_size=2)


def test_vectors_equal_the_stored_library_outputs(golden):
    g, model = golden
    mean = _ours(g, model, "mean")
    pca = _ours(g, model, "pca")
    err_mean = np.abs(mean.vector.numpy() - g["mean"]).max()
    err_pca = np.abs(pca.vector.numpy() - g["pca"]).max()
    assert err_mean < MEAN_TOL and err_pca < PCA_TOL, (err_mean, err_pca)
    # the comparison can fail: a sign flip or a layer off by one is orders of magnitude beyond the tolerance
    scale_mean, scale_pca = np.abs(g["mean"]).max(), np.abs(g["pca"]).max()
    assert np.abs(-mean.vector.numpy() - g["mean"]).max() > 100 * MEAN_TOL and scale_mean > 100 * MEAN_TOL
    assert np.abs(-pca.vector.numpy() - g["pca"]).max() > 100 * PCA_TOL and scale_pca > 100 * PCA_TOL
    for other in (int(g["layer"]) - 1, int(g["layer"]) + 1):
        assert np.abs(_ours(g, model, "mean", other).vector.numpy() - g["mean"]).max() > 100 * MEAN_TOL


def test_steered_logits_equal_the_stored_library_outputs(golden):
    g, model = golden
    ids = torch.from_numpy(g["input_ids"])
    layer, alpha = int(g["layer"]), float(g["multiplier"])
    with torch.no_grad():
        with _ours(g, model, "mean").apply(model, alpha=alpha):
            ours = model(input_ids=ids).logits.numpy()
        with add_vector(model, layer, torch.from_numpy(g["mean"]), alpha=alpha):  # the library's own vector
            ours_lib_vector = model(input_ids=ids).logits.numpy()
        with add_vector(model, layer + 1, torch.from_numpy(g["mean"]), alpha=alpha):
            shifted = model(input_ids=ids).logits.numpy()
        plain = model(input_ids=ids).logits.numpy()
    assert np.abs(ours - g["steered_logits"]).max() < LOGIT_TOL
    assert np.abs(ours_lib_vector - g["steered_logits"]).max() < LOGIT_TOL
    # the steering moves the logits far beyond the tolerance, and so does applying it one layer later
    assert np.abs(plain - g["steered_logits"]).max() > 1e3 * LOGIT_TOL
    assert np.abs(shifted - g["steered_logits"]).max() > 1e3 * LOGIT_TOL
