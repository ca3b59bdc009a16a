"""APS sets with tie-breaking: one uniform per row keeps each row's label order; float32 X hashes as float64."""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.datasets import load_digits
from sklearn.neighbors import KNeighborsClassifier

from kandinsky_cp import KandinskyCP
from kandinsky_cp import groups as G
from kandinsky_cp.metrics import covered


@pytest.fixture(scope="module")
def knn_digits():
    X, y = load_digits(return_X_y=True)
    X = X / 16  # multiples of 1/16: exact in float32
    perm = np.random.default_rng(0).permutation(len(y))
    X, y = X[perm], y[perm]
    knn = KNeighborsClassifier(n_neighbors=5).fit(X[:400], y[:400])  # probabilities in steps of 0.2: many ties
    return knn, X[400:1000], y[400:1000], X[1000:], y[1000:]


def _skips_a_higher_label(sets: np.ndarray, proba: np.ndarray) -> np.ndarray:
    """Rows whose set holds a label but not another label with a strictly higher probability."""
    bad = np.zeros(len(sets), dtype=bool)
    for i in range(len(sets)):
        inside = proba[i, sets[i]]
        outside = proba[i, ~sets[i]]
        bad[i] = inside.size > 0 and outside.size > 0 and outside.max() > inside.min()
    return bad


@pytest.mark.parametrize("groups", [G.intercept(), G.intercept() + G.by_feature(20, bins=[0.5])],
                         ids=["intercept", "covariate-groups"])
@pytest.mark.parametrize("seed", range(5))
def test_aps_sets_keep_the_top_class_before_lower_ranked_ones(knn_digits, groups, seed):
    knn, Xc, yc, Xt, yt = knn_digits
    cp = KandinskyCP(knn, groups=groups, score="aps", random_state=seed).conformalize(Xc, yc)
    assert cp.tie_noise_ > 0  # the tie-breaking noise is active
    sets = cp.predict_set(Xt)
    proba = knn.predict_proba(Xt)
    assert not _skips_a_higher_label(sets, proba).any()
    nonempty = sets.any(axis=1)
    assert np.all(sets[nonempty, np.argmax(proba[nonempty], axis=1)])  # the top class is in every non-empty set
    assert 0.86 <= covered(sets, yt).mean() <= 0.97


def test_aps_coverage_over_reshuffles(knn_digits):
    """Marginal coverage at the 0.9 level, averaged over 10 reshuffles of calibration and test rows."""
    knn, Xc, yc, Xt, yt = knn_digits
    X, y = np.vstack([Xc, Xt]), np.concatenate([yc, yt])
    cov = []
    for seed in range(10):
        perm = np.random.default_rng(seed).permutation(len(y))
        c, t = perm[:600], perm[600:]
        cp = KandinskyCP(knn, groups=G.intercept(), score="aps", random_state=seed).conformalize(X[c], y[c])
        cov.append(covered(cp.predict_set(X[t]), y[t]).mean())
    assert abs(np.mean(cov) - 0.9) <= 0.02, cov


@pytest.mark.parametrize("score", ["aps", "lac", "aps_randomized"])
def test_float32_and_float64_inputs_give_equal_sets(knn_digits, score):
    knn, Xc, yc, Xt, _ = knn_digits
    cp = KandinskyCP(knn, groups=G.intercept() + G.by_class(), score=score, random_state=0).conformalize(Xc, yc)
    np.testing.assert_array_equal(cp.predict_set(Xt.astype(np.float32)), cp.predict_set(Xt))


class _GridKNN:
    """kNN on features snapped back to the digits' 1/16 grid: the same probabilities for float32 and float64."""

    def __init__(self, knn):
        self.knn, self.classes_ = knn, knn.classes_

    def predict_proba(self, X):
        return self.knn.predict_proba(np.round(np.asarray(X, dtype=float) * 16) / 16)

    def predict(self, X):
        return self.knn.predict(np.round(np.asarray(X, dtype=float) * 16) / 16)


def test_float32_sets_equal_float64_sets_for_values_float32_cannot_hold(knn_digits):
    """Features off the float32 grid (k/16 + small offsets): the tie noise hashes the values after the float32 cast."""
    knn, Xc, yc, Xt, _ = knn_digits
    offset = 1e-3 * np.random.default_rng(0).uniform(size=Xt.shape)
    xt = Xt + offset  # not representable in float32
    assert not np.array_equal(xt.astype(np.float32).astype(float), xt)
    cp = KandinskyCP(_GridKNN(knn), groups=G.intercept(), score="aps", random_state=0).conformalize(Xc, yc)
    assert cp.tie_noise_ > 0
    np.testing.assert_array_equal(cp.predict_set(xt.astype(np.float32)), cp.predict_set(xt))
