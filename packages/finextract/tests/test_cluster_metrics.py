"""Clique clustering on planted clusters, and the AS / A-ESR metrics."""

import math

import numpy as np
import pytest
import torch

from finextract import cluster_extract, extract_features, extraction_metrics, pixel_features
from finextract.cluster import cosine_matrix


def _planted(n_clusters=6, per=8, n_noise=40, d=256, seed=0):
    """Tight clusters around regular-simplex centres (pairwise cosine -1/5) plus isotropic noise generations."""
    rng = np.random.default_rng(seed)
    q, _ = np.linalg.qr(rng.standard_normal((d, n_clusters)))
    centres = q.T - q.T.mean(0)
    centres /= np.linalg.norm(centres, axis=1, keepdims=True)
    members = [c + 0.2 * rng.standard_normal((per, d)) / np.sqrt(d) for c in centres]
    noise = rng.standard_normal((n_noise, d)) / np.sqrt(d)
    feats = np.concatenate(members + [noise])
    labels = np.concatenate([np.full(per, i) for i in range(n_clusters)] + [np.full(n_noise, -1)])
    perm = rng.permutation(len(feats))
    return feats[perm], labels[perm]


def _medoid(feats, members):
    return members[np.argmin(np.linalg.norm(feats[members] - feats[members].mean(0), axis=1))]


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_recovers_planted_clusters_and_their_medoids(seed):
    feats, labels = _planted(seed=seed)
    res = cluster_extract(feats, 6)
    assert len(res.cliques) >= 6 and len(res.selected) == len(res.cliques)
    top = res.selected[:6]
    # one representative per planted cluster, each a member of that cluster
    assert sorted(int(labels[i]) for i in top) == list(range(6))
    for i, clique in zip(top, res.cliques[:6], strict=True):
        # every planted cluster sits whole inside one clique; noise generations may join it
        assert set(np.flatnonzero(labels == labels[i])) <= set(clique)
        assert i == _medoid(feats, np.array(clique))  # nearest the clique mean
        if set(labels[clique]) == {labels[i]}:  # pure clique: the cluster medoid
            assert i == _medoid(feats, np.flatnonzero(labels == labels[i]))


def test_threshold_path_starts_at_quantile_and_rises_by_001():
    feats, _ = _planted()
    sim = cosine_matrix(feats)
    np.fill_diagonal(sim, 0)
    off = sim[np.triu_indices(len(feats), 1)]
    rng = np.random.default_rng(0)
    start = math.floor(np.quantile(rng.choice(off, 1000, replace=False), 0.25) * 100) / 100
    res = cluster_extract(feats, 6)
    assert res.start_threshold == pytest.approx(start)
    assert res.thresholds[0] == pytest.approx(start)
    assert np.allclose(np.diff(res.thresholds), 0.01)
    assert res.threshold == res.thresholds[-1]
    # stops at the first threshold with at least n_train cliques
    assert res.n_cliques[-1] >= 6 and all(c < 6 for c in res.n_cliques[:-1])


def test_more_clusters_requested_raises_the_threshold():
    feats, _ = _planted()
    low, high = cluster_extract(feats, 6), cluster_extract(feats, 40)
    assert high.threshold > low.threshold and len(high.cliques) >= 40


def test_many_generations_finish_and_leftover_nodes_are_singletons():
    """The paper's 500 generations: the per-removal budget keeps the search finite (the old per-threshold budget
    was spent by peeling n isolated nodes one at a time, n^2 / 2 enumerations, so the threshold rose forever)."""
    feats, labels = _planted(n_clusters=8, per=10, n_noise=420, d=256, seed=3)
    res = cluster_extract(feats, 8, max_enumerated=2_000)
    assert len(res.cliques) >= 8 and sorted(int(labels[i]) for i in res.selected[:8]) == list(range(8))
    assert sorted(v for c in res.cliques for v in c) == list(range(len(feats)))  # a partition of the generations
    from finextract.cluster import _peel_cliques

    assert _peel_cliques(np.eye(5), 0.5, budget=1) == [[0], [1], [2], [3], [4]]  # no edges: singletons in order
    sim = np.zeros((4, 4))
    sim[1, 3] = sim[3, 1] = 0.9
    assert _peel_cliques(sim, 0.5, budget=10) == [[1, 3], [0], [2]]


def test_n_train_larger_than_generations_is_rejected():
    with pytest.raises(ValueError, match="larger than the number of generations"):
        cluster_extract(np.random.default_rng(0).standard_normal((5, 3)), 10)
    with pytest.raises(ValueError, match="2-D"):
        cluster_extract(np.zeros(5), 2)


def test_metrics_identity_and_random():
    rng = np.random.default_rng(0)
    train = torch.tensor(rng.uniform(-1, 1, (10, 1, 8, 8)), dtype=torch.float32)
    m = extraction_metrics(train, train, thresholds=(0.7, 0.6))
    assert m.similarity == pytest.approx(1.0) and m.esr == {0.7: 1.0, 0.6: 1.0}
    assert m.distance == pytest.approx(0.0, abs=1e-12)
    assert np.array_equal(m.nearest, np.arange(10))
    shuffled = train[torch.tensor([3, 1, 4, 0, 2, 9, 8, 7, 6, 5])]
    assert np.array_equal(extraction_metrics(shuffled, train).nearest, [3, 1, 4, 0, 2, 9, 8, 7, 6, 5])
    noise = torch.tensor(rng.uniform(-1, 1, (100, 1, 8, 8)), dtype=torch.float32)
    r = extraction_metrics(noise, train, thresholds=(0.7, 0.6))
    assert r.esr[0.7] == 0.0 and r.esr[0.6] == 0.0 and r.similarity < 0.5


def test_metrics_hand_computed():
    train = np.array([[1.0, 0.0], [0.0, 1.0]])
    ext = np.array([[1.0, 1.0], [1.0, 0.1]])
    m = extraction_metrics(ext, train, thresholds=(0.9,), extractor="features")
    s1 = 1 / np.sqrt(1.01)  # train 0 vs [1, 0.1]
    s2 = 1 / np.sqrt(2)  # train 1 vs [1, 1]
    assert m.similarity == pytest.approx((s1 + s2) / 2)
    assert m.esr[0.9] == 0.5 and list(m.nearest) == [1, 0]


def test_feature_extractors():
    x = torch.arange(24, dtype=torch.float32).reshape(2, 3, 2, 2)
    f = pixel_features(x)
    assert f.shape == (2, 12) and np.allclose(f.mean(1), 0)
    assert np.allclose(extract_features(x, lambda im: im.flatten(1) * 2), x.flatten(1).numpy() * 2)
    with pytest.raises(FileNotFoundError, match="SSCD"):
        extract_features(x, "/nonexistent/sscd.torchscript.pt")


def test_sscd_extractor_runs_a_torchscript_file(tmp_path):
    from finextract import SSCDFeatures

    class Pool(torch.nn.Module):
        def forward(self, x):
            return x.mean(dim=(2, 3))

    path = tmp_path / "fake_sscd.pt"
    torch.jit.script(Pool()).save(str(path))
    imgs = torch.zeros(3, 1, 8, 8)
    imgs[1] = 1.0
    out = SSCDFeatures(path)(imgs)
    # [-1,1] -> [0,1] -> normalise(0.5, 0.5) is the identity on constant images
    assert out.shape == (3, 3) and np.allclose(out[0], 0.0, atol=1e-6) and np.allclose(out[1], 1.0, atol=1e-6)


def test_no_extraction_reference_backs_the_stated_threshold():
    """The primary A-ESR threshold (0.9) is about the 90th percentile of the best match that real same-digit
    images by other writers reach, i.e. a set that extracts nothing; at 0.8 about half of them would count."""
    from finextract.experiments import ESR_THRESHOLDS, no_extraction_reference

    ref = no_extraction_reference(8, trials=500, random_state=0)
    assert ESR_THRESHOLDS[0] == 0.9
    assert 0.03 < ref["A-ESR@0.9"] < 0.15 and 0.4 < ref["A-ESR@0.8"] < 0.7
    assert abs(ref["quantiles"]["0.9"] - 0.9) < 0.02
