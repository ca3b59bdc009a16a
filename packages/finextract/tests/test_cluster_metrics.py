"""Clique clustering on planted clusters, and the AS / A-ESR metrics."""

import math

import numpy as np
import pytest
import torch

from finextract import cluster_extract, extract_features, extraction_metrics, pixel_features
from finextract.cluster import clique_separation, cosine_matrix


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


def _planted_unit(seed=0, *, d=64, n_clusters=7, per=12, n_noise=60, noise=0.05):
    """Memorised images among unrelated generations: ``per`` generations around each of ``n_clusters`` random
    unit-norm centres (plus N(0, noise^2) per coordinate) and ``n_noise`` isotropic random generations."""
    rng = np.random.default_rng(seed)
    centres = rng.standard_normal((n_clusters, d))
    centres /= np.linalg.norm(centres, axis=1, keepdims=True)
    members = [c + noise * rng.standard_normal((per, d)) for c in centres]
    feats = np.concatenate([*members, rng.standard_normal((n_noise, d))])
    labels = np.concatenate([np.full(per, i) for i in range(n_clusters)] + [np.full(n_noise, -1)])
    perm = rng.permutation(len(feats))
    return feats[perm], labels[perm]


def _medoid(feats, members):
    return members[np.argmin(np.linalg.norm(feats[members] - feats[members].mean(0), axis=1))]


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_recovers_planted_clusters_and_their_medoids(seed):
    feats, labels = _planted(seed=seed)
    res = cluster_extract(feats, 6, stop="paper")
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
    res = cluster_extract(feats, 6, stop="paper")
    assert res.start_threshold == pytest.approx(start)
    assert res.thresholds[0] == pytest.approx(start)
    assert np.allclose(np.diff(res.thresholds), 0.01)
    assert res.threshold == res.thresholds[-1]
    # stops at the first threshold with at least n_train cliques
    assert res.n_cliques[-1] >= 6 and all(c < 6 for c in res.n_cliques[:-1])


def test_more_clusters_requested_raises_the_threshold():
    feats, _ = _planted()
    low, high = cluster_extract(feats, 6, stop="paper"), cluster_extract(feats, 40, stop="paper")
    assert high.threshold > low.threshold and len(high.cliques) >= 40


def test_many_generations_finish_and_leftover_nodes_are_singletons():
    """The paper's 500 generations: the per-removal budget keeps the search finite (the old per-threshold budget
    was spent by peeling n isolated nodes one at a time, n^2 / 2 enumerations, so the threshold rose forever)."""
    feats, labels = _planted(n_clusters=8, per=10, n_noise=420, d=256, seed=3)
    res = cluster_extract(feats, 8, max_enumerated=2_000, stop="paper")
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


def _recovered(res, labels, k):
    """Planted clusters with a representative among the k selected, and planted clusters that lie whole inside one
    of the k selected cliques."""
    planted = [set(np.flatnonzero(labels == c).tolist()) for c in range(k)]
    whole = sum(any(p <= set(c) for c in res.cliques[:k]) for p in planted)
    return len(set(labels[res.selected[:k]].tolist()) - {-1}), whole


def test_robust_rule_recovers_memorised_clusters_among_random_generations():
    """7 clusters of 12 (unit centres + 0.05 noise, d = 64) among 60 random generations: the paper rule stops at a
    low threshold where its largest cliques merge clusters; the robust rule returns one clique per planted cluster,
    each holding the whole cluster (and 2 random generations in all)."""
    feats, labels = _planted_unit(0)
    rob = cluster_extract(feats, 7, stop="robust")
    assert _recovered(rob, labels, 7) == (7, 7) and sum(len(c) for c in rob.cliques[:7]) == 7 * 12 + 2
    assert all(labels[i] >= 0 for i in rob.selected[:7])  # every representative is a memorised generation
    assert rob.stop == "robust" and rob.min_clique_size == 2 and rob.n_qualifying >= 7
    assert rob.threshold == pytest.approx(0.23) and rob.separation == pytest.approx(0.584, abs=1e-3)


@pytest.mark.slow
def test_paper_rule_mixes_the_planted_clusters():
    feats, labels = _planted_unit(0)
    paper = cluster_extract(feats, 7, stop="paper")
    assert paper.threshold == pytest.approx(0.0) and _recovered(paper, labels, 7)[0] == 4
    # it stops at the first threshold that peels within the budget: 15 cliques, none a singleton, so stopping at the
    # first threshold with 7 cliques of 2+ members would stop there too; the separation score is what avoids it
    assert paper.n_cliques[-1] == 15 and paper.trace[-1].n_qualifying == 15 and set(paper.n_cliques[:-1]) == {-1}
    assert paper.trace[-1].separation < 0 < cluster_extract(feats, 7, stop="robust").separation


@pytest.mark.slow
@pytest.mark.parametrize("seed", range(1, 21))
def test_robust_rule_recovers_planted_clusters_for_20_seeds(seed):
    feats, labels = _planted_unit(seed)
    res = cluster_extract(feats, 7, stop="robust")
    assert _recovered(res, labels, 7) == (7, 7) and all(labels[i] >= 0 for i in res.selected[:7])


@pytest.mark.parametrize("seed", [1, 2])
def test_robust_trace_explains_the_kept_threshold(seed):
    feats, labels = _planted_unit(seed, n_noise=30)
    res = cluster_extract(feats, 7, stop="robust")
    assert _recovered(res, labels, 7) == (7, 7)
    sim = cosine_matrix(feats)
    np.fill_diagonal(sim, 0)
    taus = [t.threshold for t in res.trace]
    assert taus == res.thresholds and np.allclose(np.diff(taus), 0.01)
    # thresholds on the paper's grid, from the start (or the budget stop) up to the largest similarity
    assert (taus[-1] - res.start_threshold) / 0.01 == pytest.approx(round((taus[-1] - res.start_threshold) / 0.01))
    assert taus[-1] <= sim.max() < taus[-1] + 0.01
    for step in res.trace:
        if step.n_cliques is None:
            continue
        assert step.n_qualifying == len(step.sizes) and list(step.sizes) == sorted(step.sizes, reverse=True)
        assert min(step.sizes, default=2) >= 2
    # the kept threshold: best separation among those with >= 7 qualifying cliques, recomputed by hand
    candidates = [t for t in res.trace if t.n_qualifying is not None and t.n_qualifying >= 7]
    assert res.separation == max(t.separation for t in candidates)
    assert res.threshold == min(t.threshold for t in candidates if t.separation == res.separation)
    by_hand = np.mean([clique_separation(sim + np.eye(len(sim)), c) for c in res.cliques[:7]])
    inner = [np.mean([sim[i, j] for i in c for j in c if i < j]) for c in res.cliques[:7]]
    outer = [max(np.mean(sim[c, v]) for v in range(len(sim)) if v not in c) for c in res.cliques[:7]]
    assert by_hand == pytest.approx(np.mean(np.subtract(inner, outer)))
    assert res.separation == pytest.approx(by_hand)
    assert "best separation" in res.stop_reason


def test_clique_separation_by_hand():
    sim = np.array([[1.0, 0.9, 0.8, 0.1], [0.9, 1.0, 0.7, 0.2], [0.8, 0.7, 1.0, 0.75], [0.1, 0.2, 0.75, 1.0]])
    assert clique_separation(sim, [0, 1, 2]) == pytest.approx(0.8 - 0.35)  # inner mean; 3's mean to the members
    assert clique_separation(sim, [0, 1]) == pytest.approx(0.9 - 0.75)  # 2 is nearly as close: a fragment
    assert clique_separation(sim, [0, 1, 2, 3]) == pytest.approx(0.575 + 1)  # nothing outside counts as -1
    with pytest.raises(ValueError, match="two members"):
        clique_separation(sim, [0])


def test_component_peeling_matches_whole_graph_peeling():
    """The robust rule peels each connected component from one clique enumeration; the cliques equal those of the
    plain peel of the whole graph with the same tie rule (brute force over random graphs)."""
    import networkx as nx

    from finextract.cluster import _peel_cliques, _peel_graph

    rng = np.random.default_rng(0)
    for trial in range(30):
        n = int(rng.integers(5, 40))
        sim = rng.uniform(-1, 1, (n, n))
        sim = (sim + sim.T) / 2
        tau = float(rng.uniform(0.0, 0.8))
        graph = nx.Graph()
        iu, ju = np.nonzero(np.triu(sim >= tau, k=1))
        graph.add_edges_from(zip(iu.tolist(), ju.tolist(), strict=True))
        whole: list[list[int]] = []
        _peel_graph(graph, 10**9, whole, lexicographic=True)
        taken = {v for c in whole for v in c}
        whole += [[v] for v in range(n) if v not in taken]
        parts = _peel_cliques(sim, tau, 10**9, by_component=True)
        key = lambda c: (-len(c), c)  # noqa: E731
        assert sorted(parts, key=key) == sorted(whole, key=key), trial


def test_paper_rule_reproduces_the_stored_benchmark_rows():
    """results/benchmark.json: the 88-generation planted case (threshold, thresholds tried, clusters found)."""
    import json
    from pathlib import Path

    stored = json.loads((Path(__file__).parents[1] / "results" / "benchmark.json").read_text())
    rows = [r for r in stored["rows"] if r["label"].startswith("cluster_extract, 88")]
    assert len(rows) == 1
    feats, labels = _planted(n_noise=40)
    assert cluster_extract(feats, 6).stop == "robust"  # the default
    res = cluster_extract(feats, 6, stop="paper")
    assert res.stop == "paper"
    metrics = rows[0]["metrics"]
    assert res.threshold == metrics["threshold"] and len(res.thresholds) == metrics["thresholds_tried"]
    assert len({int(labels[i]) for i in res.selected[:6]} - {-1}) == metrics["planted_clusters_recovered"]


def test_stop_rule_arguments_are_validated():
    feats = np.random.default_rng(0).standard_normal((10, 4))
    with pytest.raises(ValueError, match="stop must be one of"):
        cluster_extract(feats, 2, stop="early")
    with pytest.raises(ValueError, match="min_clique_size"):
        cluster_extract(feats, 2, stop="robust", min_clique_size=0)
    # with too few groups the robust rule keeps the threshold with the most qualifying cliques and says so
    res = cluster_extract(feats, 9, stop="robust", min_clique_size=3)
    assert res.n_qualifying < 9 and res.n_qualifying == max(t.n_qualifying or 0 for t in res.trace)
    assert res.stop_reason.startswith("no threshold gave 9 cliques")
    assert sorted(v for c in res.cliques for v in c) == list(range(10)) and len(res.selected) == len(res.cliques)


@pytest.mark.parametrize("stop", ["robust", "paper"])
def test_extract_clusters_with_the_chosen_rule(stop):
    """finextract.audit.extract: robust by default, and each rule gives cluster_extract's selection on the
    generations' pixel features (generations here: 3 planted groups of 6 among 10 random images)."""
    from types import SimpleNamespace

    from finextract.audit import extract

    feats, labels = _planted_unit(4, n_clusters=3, per=6, n_noise=10, noise=0.02)
    images = torch.tensor(feats * 4, dtype=torch.float32).reshape(-1, 1, 8, 8).clamp(-1, 1)

    class Fixed:
        def sample(self, cond, *, n=None, latents=None, generator=None):
            return SimpleNamespace(images=images)

    kw = {} if stop == "robust" else {"stop": "paper"}
    res = extract(Fixed(), None, n_train=3, latents=torch.zeros(len(images), 1), **kw)
    direct = cluster_extract(pixel_features(images), 3, stop=stop)
    assert res.cluster.stop == stop and np.array_equal(res.cluster.selected, direct.selected)
    assert res.cluster.threshold == direct.threshold
    if stop == "robust":
        assert sorted(labels[res.cluster.selected[:3]].tolist()) == [0, 1, 2]
