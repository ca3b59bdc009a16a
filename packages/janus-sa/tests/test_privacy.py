"""Privacy sanity checks (statistical, fixed seeds; the argument is in the README's protocol spec).

* S0 sees ``y_i = pack(x_i) + k_i`` mod the group order (exact mode, one pad scalar per 7 packed
  codes): the top and bottom bits of every scalar pass chi-square uniformity tests, whatever the input
  (constant, all-zero or all-max inputs).
* n-2 colluding clients plus S0 pool everything they hold: S0's individual masked uploads and seeds for
  ``s_i``, the colluders' inputs, and the verified aggregate. They recover exactly the sum of the two
  honest clients. "Nothing finer": swapping ``d`` between the two honest inputs leaves the coalition's
  view identically distributed; we check that the honest clients' uploads are uniform in both worlds and
  that a two-sample test cannot tell the worlds apart.
"""

import numpy as np
import pytest
from scipy import stats

from janus_sa import InProcessDeployment, JanusConfig, Quantizer
from janus_sa.crypto import GROUP_ORDER

Q = Quantizer(clipping_range=1.0, quantization_range=2**12, modulus_range=2**32)


#: the masks are fresh OS randomness, so each chi-square test fails by chance with probability ALPHA: with
#: about ten tests per run, 1e-3 failed one run in a hundred; a biased view gives p-values far below 1e-6
ALPHA = 1e-6


def _s0_view(dep, updates):
    """Run one round and return S0's stored masked uploads (what a curious S0 sees) and the report."""
    report = dep.run_round(updates)
    return {cid: up["scalars"] for cid, up in dep.s0.uploads_.items()}, report


def _top(scalars, bins):
    """Which of ``bins`` equal parts of [0, group order) each scalar falls in (uniform if the pad is)."""
    return np.array([s * bins // GROUP_ORDER for s in scalars], dtype=np.int64)


@pytest.mark.parametrize("value", [-1.0, 0.0, 1.0])
def test_s0_view_is_uniform(value):
    dep = InProcessDeployment(config=JanusConfig(dim=4096, quantizer=Q))
    ids = dep.add_clients(3)
    view, _ = _s0_view(dep, {c: np.full(4096, value) for c in ids})
    top = np.concatenate([_top(v, 64) for v in view.values()])  # 1758 scalars
    assert stats.chisquare(np.bincount(top, minlength=64)).pvalue > ALPHA
    low = np.concatenate([np.array([s & 0x3F for s in v]) for v in view.values()])
    assert stats.chisquare(np.bincount(low, minlength=64)).pvalue > ALPHA


def test_n_minus_2_colluders_plus_s0_learn_only_the_honest_sum():
    n, dim = 8, 2048
    rng = np.random.default_rng(42)
    base = {k: rng.uniform(-0.4, 0.4, dim) for k in range(n)}  # +-d stays inside the clip range
    d = rng.uniform(-0.5, 0.5, dim)
    worlds = []
    for shift in (0.0, 1.0):  # world 1 moves d from honest client 0 to honest client 1
        dep = InProcessDeployment(config=JanusConfig(dim=dim, quantizer=Q))
        ids = dep.add_clients(n)
        ups = {ids[k]: base[k].copy() for k in range(n)}
        ups[ids[0]] = ups[ids[0]] + shift * d
        ups[ids[1]] = ups[ids[1]] - shift * d
        view, report = _s0_view(dep, ups)
        honest, colluders = ids[:2], ids[2:]
        # the coalition: verified aggregate (received by any colluder) minus colluders' own codes
        agg = report.results[colluders[0]].sum_codes
        own = sum(Q.quantize(ups[c]).astype(np.int64) for c in colluders)
        recovered = agg - own
        truth = sum(Q.quantize(ups[c]).astype(np.int64) for c in honest)
        np.testing.assert_array_equal(recovered, truth)
        worlds.append((recovered, [view[c] for c in honest], truth, [Q.quantize(ups[c]) for c in honest]))
    (rec0, view0, sum0, x0), (rec1, view1, sum1, x1) = worlds
    # same honest sum up to rounding of the two shifted inputs, but different individual inputs
    assert np.max(np.abs(sum0 - sum1)) <= 2
    assert np.max(np.abs(x0[0].astype(np.int64) - x1[0])) > 100
    # the honest uploads in S0's view: uniform in both worlds, and indistinguishable between worlds
    for view in (view0, view1):
        for y in view:
            assert stats.chisquare(np.bincount(_top(y, 16), minlength=16)).pvalue > ALPHA
    table = np.stack([np.bincount(_top(view0[0], 16), minlength=16), np.bincount(_top(view1[0], 16), minlength=16)])
    assert stats.chi2_contingency(table).pvalue > ALPHA
    # and S1 never sees a masked upload: its stored uploads hold only seeds and hiding commitments
    assert all(set(u) == {"seed", "commitment"} for u in dep.s1.uploads_.values())


def test_commitment_is_hiding_towards_its_holder(small):
    """Two uploads of the same update give unrelated commitments (fresh randomness unknown to the holder)."""
    dep, ids, ups = small
    same = {c: np.zeros(16) for c in ids}
    dep.run_round(same)
    commits = [u["commitment"] for u in dep.s0.uploads_.values()]
    assert len(set(commits)) == len(commits)
