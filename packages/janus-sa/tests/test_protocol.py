"""Correctness: exact integer sums, quantisation error, dropouts, dynamic participation, sketch mode."""

import numpy as np
import pytest

from janus_sa import ConfigError, InProcessDeployment, JanusConfig, Quantizer
from janus_sa.errors import ExcludedError, IncompleteRoundError, ProtocolError
from janus_sa.simulation import random_updates


def _check(dep, report, ups, included):
    q = dep.config.quantizer
    exact = sum(q.quantize(ups[c]).astype(np.int64) for c in included)
    clipped = sum(np.clip(ups[c], -q.clipping_range, q.clipping_range) for c in included)
    dropped = set(ups) - set(included)  # uploaded to S0 only: told so, with both signed lists
    assert set(report.errors) == dropped
    assert all(isinstance(e, ExcludedError) and e.aggregate0 and e.aggregate1 for e in report.errors.values())
    assert len(report.results) == len(dep.clients) - len(dropped)
    for cid, res in report.results.items():
        assert res.included == (cid in included)
        assert res.n_participants == len(included)
        np.testing.assert_array_equal(res.sum_codes, exact)  # exact integer aggregate
        assert np.max(np.abs(res.sum - clipped)) <= res.error_bound
        assert res.error_bound == pytest.approx(len(included) * q.step / 2)


@pytest.mark.parametrize(("n", "dim"), [(3, 10), (3, 1000), (10, 10), (10, 1000), (100, 10)])
def test_exact_sum_matches_integer_sum(n, dim):  # (100, 1000) is test_exact_sum_n100_l1000
    dep = InProcessDeployment(config=JanusConfig(dim=dim))
    ids = dep.add_clients(n)
    ups = random_updates(dep.config.dim, ids, random_state=n + dim)
    _check(dep, dep.run_round(ups), ups, ids)


def test_exact_sum_n100_l1000():
    dep = InProcessDeployment(config=JanusConfig(dim=1000, quantizer=Quantizer(clipping_range=2.0)))
    ids = dep.add_clients(100)
    ups = random_updates(dep.config.dim, ids, random_state=7, scale=3.0)  # some coordinates are clipped
    report = dep.run_round(ups)
    _check(dep, report, ups, ids)


def test_five_rounds_with_joins_and_leaves():
    dep = InProcessDeployment(config=JanusConfig(dim=32))
    ids = dep.add_clients(6)
    rng = np.random.default_rng(1)
    for rnd in range(1, 6):
        if rnd > 1:
            leaving = list(rng.choice(len(ids), size=2, replace=False))
            dep.remove_clients([ids[i] for i in leaving])
            ids = [c for i, c in enumerate(ids) if i not in leaving] + dep.add_clients(int(rng.integers(1, 4)))
        uploaders = ids[: max(3, len(ids) - 1)]  # one client only verifies
        ups = random_updates(dep.config.dim, uploaders, random_state=rnd)
        report = dep.run_round(ups)
        assert report.round == rnd
        _check(dep, report, ups, uploaders)


def test_client_dropping_before_s1_is_left_out():
    dep = InProcessDeployment(config=JanusConfig(dim=50))
    ids = dep.add_clients(8)
    ups = random_updates(dep.config.dim, ids, random_state=3)
    report = dep.run_round(ups, drop_before_s1=ids[:2])
    _check(dep, report, ups, ids[2:])


@pytest.mark.parametrize("dim", [10, 3000])
def test_sketch_mode_sum(dim):
    dep = InProcessDeployment(config=JanusConfig(dim=dim, mode="sketch", sketch_k=16))
    ids = dep.add_clients(6)
    ups = random_updates(dep.config.dim, ids, random_state=dim)
    _check(dep, dep.run_round(ups, drop_before_s1=ids[:1]), ups, ids[1:])


def test_sketch_mode_missing_commitment_fails_cleanly():
    dep = InProcessDeployment(config=JanusConfig(dim=10, mode="sketch"))
    ids = dep.add_clients(4)
    with pytest.raises(IncompleteRoundError):
        dep.run_round(random_updates(dep.config.dim, ids), drop_before_sketch=ids[:1])


def test_round_order_and_config_validation(small):
    dep, ids, ups = small
    dep.run_round(ups)
    with pytest.raises(ProtocolError, match="already fixed"):
        dep.s0.agree(dep.s1.participants())
    with pytest.raises(ConfigError, match="mode must be one of"):
        JanusConfig(dim=4, mode="fast").validate()
    with pytest.raises(ConfigError, match="dim must be"):
        JanusConfig(dim=0).validate()
    with pytest.raises(ConfigError, match="modulus_range"):
        Quantizer(modulus_range=1000).validate()
    with pytest.raises(ConfigError, match="clipping_range"):
        Quantizer(clipping_range=0.0).validate()
    with pytest.raises(ConfigError, match="quantization_range"):
        Quantizer(quantization_range=1).validate()
    with pytest.raises(ConfigError, match="overflow"):
        Quantizer(quantization_range=2**20, modulus_range=2**24).check_capacity(17)
    with pytest.raises(ConfigError, match="shape"):
        c = next(iter(dep.clients.values()))
        c.begin_round(dep.s0.announce(9, dep.s0.head_), dep.s1.announce(9, dep.s1.head_))
        c.upload(np.zeros(3))


@pytest.mark.parametrize("mode", ["exact", "sketch"])
def test_threaded_round_gives_the_same_verified_sum(mode):
    dep = InProcessDeployment(config=JanusConfig(dim=64, mode=mode))
    ids = dep.add_clients(6)
    ups = random_updates(64, ids, random_state=11)
    report = dep.run_round(ups, workers=2, drop_before_s1=ids[:1])
    _check(dep, report, ups, ids[1:])
    assert all(s.seconds > 0 for s in report.stats.values())
    with pytest.raises(ConfigError, match="workers"):
        dep.run_round(ups, workers=0)
