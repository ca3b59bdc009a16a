"""Mappers: closed forms against numpy / scikit-learn, exact recovery, identity init, AE vs affine, metrics."""

import math

import numpy as np
import pytest
import torch
from sklearn.exceptions import NotFittedError
from sklearn.linear_model import Ridge

from safety_transfer import AffineMapper, AutoEncoderMapper, collect_pairs, load_mapper, mapping_metrics, tiny_causal_lm


@pytest.fixture(scope="module")
def planted():
    rng = np.random.default_rng(0)
    x = rng.normal(size=(300, 12))
    w, b = rng.normal(size=(7, 12)), rng.normal(size=7)
    return torch.from_numpy(x), torch.from_numpy(x @ w.T + b), w, b


@pytest.fixture(scope="module")
def pairs(source_model, target_model, tok, corpus):
    return collect_pairs(source_model, target_model, corpus[:120], source_tokenizer=tok, source_layer=1,
                         target_layer=2, batch_size=16)


def test_default_hidden_is_the_geometric_mean():
    assert AutoEncoderMapper(64, 128).hidden_size == int(math.sqrt(64 * 128)) == 90
    assert AutoEncoderMapper(2048, 3072).hidden_size == 2508
    m = AutoEncoderMapper(5, 3, epochs=1, random_state=0).fit(torch.randn(10, 5), torch.randn(10, 3))
    assert m.hidden_ == 3 and m.module_[0].weight.shape == (3, 5) and m.module_[2].weight.shape == (3, 3)


def test_exact_affine_map_is_recovered(planted):
    x, y, w, b = planted
    m = AffineMapper().fit(x, y)
    assert np.abs(m.weight_.numpy() - w).max() < 1e-10 and np.abs(m.bias_.numpy() - b).max() < 1e-10
    assert mapping_metrics(m, x, y).fvu < 1e-20


def test_closed_form_equals_numpy_lstsq_and_ridge_equals_sklearn(pairs):
    x, y = pairs.source.double(), pairs.target.double()
    x1 = np.hstack([x.numpy(), np.ones((len(x), 1))])
    sol = np.linalg.lstsq(x1, y.numpy(), rcond=None)[0]
    m = AffineMapper().fit(x, y)
    assert np.abs(m.weight_.numpy() - sol[:-1].T).max() < 1e-6
    assert np.abs(m.bias_.numpy() - sol[-1]).max() < 1e-6
    r = AffineMapper(solver="ridge", ridge=0.3).fit(x, y)
    ref = Ridge(alpha=0.3).fit(x.numpy(), y.numpy())
    assert np.abs(r.weight_.numpy() - ref.coef_).max() < 1e-6
    assert np.abs(r.bias_.numpy() - ref.intercept_).max() < 1e-6


def test_closed_form_over_shards_equals_in_memory(source_model, target_model, tok, corpus, tmp_path):
    shards = collect_pairs(source_model, target_model, corpus[:40], source_tokenizer=tok, source_layer=1,
                           target_layer=2, batch_size=8, out=tmp_path)
    mem = shards.load()
    a = AffineMapper(solver="ridge", ridge=1e-3).fit(shards)
    b = AffineMapper(solver="ridge", ridge=1e-3).fit(mem)
    assert torch.allclose(a.weight_, b.weight_, atol=1e-8)
    ma, mb = mapping_metrics(a, shards), mapping_metrics(a, mem)
    assert ma.fvu == pytest.approx(mb.fvu, rel=1e-9) and ma.n == mb.n == len(mem.source)


def test_metrics_equal_brute_force(planted):
    x, y, _, _ = planted
    m = AffineMapper().fit(x[:, :6], y)  # an imperfect fit
    pred = (x[:, :6] @ m.weight_.T + m.bias_).numpy()
    yy = y.numpy()
    fvu = ((yy - pred) ** 2).sum() / ((yy - yy.mean(0)) ** 2).sum()
    cos = np.mean([p @ t / np.linalg.norm(p) / np.linalg.norm(t) for p, t in zip(pred, yy, strict=True)])
    got = mapping_metrics(m, x[:, :6], y)
    assert got.fvu == pytest.approx(fvu, rel=1e-10) and got.cosine == pytest.approx(cos, rel=1e-10)
    assert got.mse == pytest.approx(((yy - pred) ** 2).mean(), rel=1e-10)
    assert m.score(x[:, :6], y) == pytest.approx(1 - fvu, rel=1e-10)


@pytest.mark.parametrize("hidden", [None, 80])
def test_init_identity_between_identical_models_is_exact(tok, corpus, hidden):
    a = tiny_causal_lm("llama", hidden_size=40, num_layers=2, random_state=5)
    p = collect_pairs(a, a, corpus[:20], source_tokenizer=tok, source_layer=1, target_layer=1)
    m = AutoEncoderMapper(40, 40, hidden=hidden, init_identity=True, epochs=0).fit(p)
    assert mapping_metrics(m, p).fvu < 1e-6
    assert m.hidden_ == (40 if hidden is None else 80)


def test_autoencoder_is_no_worse_than_affine_on_held_out_pairs(pairs):
    n = int(0.8 * len(pairs.source))
    train, test = (pairs.source[:n], pairs.target[:n]), (pairs.source[n:], pairs.target[n:])
    affine = mapping_metrics(AffineMapper().fit(*train), *test).fvu
    ae = AutoEncoderMapper(64, 128, epochs=20, lr=1e-2, batch_size=128, random_state=0).fit(*train)
    fvu = mapping_metrics(ae, *test).fvu
    assert fvu <= affine + 0.05 and fvu < 0.5, (fvu, affine)
    assert ae.loss_curve_[-1] < 0.5 * ae.loss_curve_[0]


def test_training_is_reproducible_and_seeded(pairs):
    kw = {"epochs": 2, "batch_size": 512}
    a = AutoEncoderMapper(64, 128, random_state=3, **kw).fit(pairs)
    b = AutoEncoderMapper(64, 128, random_state=3, **kw).fit(pairs)
    c = AutoEncoderMapper(64, 128, random_state=4, **kw).fit(pairs)
    assert torch.equal(a.module_[0].weight, b.module_[0].weight)
    assert not torch.equal(a.module_[0].weight, c.module_[0].weight)
    sgd = AffineMapper(solver="adam", epochs=3, lr=1e-2, random_state=0).fit(pairs)
    assert sgd.loss_curve_[-1] < sgd.loss_curve_[0]


def test_save_and_load_round_trip(pairs, tmp_path):
    ae = AutoEncoderMapper(64, 128, epochs=1, random_state=0).fit(pairs)
    path = ae.save(tmp_path / "m.safetensors", source_model="llama-64", target_model="qwen2-128", source_layer=1,
                   target_layer=2)
    back = load_mapper(path)
    x = pairs.source[:5]
    assert torch.equal(back.transform(x), ae.transform(x))
    assert back.metadata_ | {} == back.metadata_ and back.metadata_["source_model"] == "llama-64"
    assert (back.metadata_["d_s"], back.metadata_["d_t"], back.metadata_["hidden"]) == ("64", "128", "90")
    aff = AffineMapper().fit(pairs)
    assert torch.equal(load_mapper(aff.save(tmp_path / "a.safetensors")).transform(x), aff.transform(x))


def test_errors_name_the_cause(pairs):
    with pytest.raises(ValueError, match="built for widths d_s=32, d_t=128 but the activations have d_s=64"):
        AutoEncoderMapper(32, 128).fit(pairs)
    with pytest.raises(NotFittedError, match="call fit"):
        AffineMapper().transform(torch.zeros(2, 3))
    m = AffineMapper().fit(pairs)
    with pytest.raises(ValueError, match="maps width 64 to 128, got activations of width 32"):
        m.transform(torch.zeros(2, 32))
    with pytest.raises(ValueError, match="source has 3 rows but target has 4"):
        AffineMapper().fit(torch.zeros(3, 2), torch.zeros(4, 2))
    with pytest.raises(ValueError, match="floating-point"):
        AffineMapper().fit(torch.zeros(3, 2, dtype=torch.long), torch.zeros(3, 2))
    with pytest.raises(ValueError, match="solver must be"):
        AffineMapper(solver="svd").fit(pairs)
    with pytest.raises(ValueError, match="init_identity needs hidden >= min"):
        AutoEncoderMapper(8, 8, hidden=4, init_identity=True, epochs=0).fit(torch.zeros(2, 8), torch.zeros(2, 8))
