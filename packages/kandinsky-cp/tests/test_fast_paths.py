"""Disjoint groups (split, class-conditional, Mondrian CP) skip the LP and give the LP's thresholds exactly."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

from kandinsky_cp import core
from kandinsky_cp import groups as G
from kandinsky_cp.core import group_quantile_regression


def _force_lp(m):
    """Send every fit through the LP: no partition shortcut, neither from Phi nor from the groups' index."""
    m.setattr(core, "_is_partition", lambda phi: False)
    m.setattr(core, "_partition_fit", lambda *a, **k: None)


def _lp_fit(phi, scores, level, correction, monkeypatch):
    with monkeypatch.context() as m:
        m.setattr(core, "_is_partition", lambda phi: False)  # force the general LP path
        return group_quantile_regression(phi, scores, confidence_level=level, finite_sample_correction=correction)


@pytest.mark.parametrize("seed", range(60))
def test_partition_fast_path_equals_the_lp(seed, monkeypatch):
    rng = np.random.default_rng(seed)
    n, d = int(rng.integers(5, 150)), int(rng.integers(1, 6))
    group = rng.integers(0, d, size=n)
    group[:d] = np.arange(d)
    phi = np.eye(d)[group]
    scores = rng.normal(size=n) * 10.0 ** rng.integers(-6, 6)
    if seed % 3 == 0:
        scores = np.round(scores, 1)  # ties
    level = float(rng.choice([0.5, 0.8, 0.9, 0.95, rng.uniform(0.5, 0.99)]))
    test_phi = np.eye(d)
    for correction in (True, False):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # small groups: infinite thresholds, warned on both paths
            fast = group_quantile_regression(phi, scores, confidence_level=level,
                                             finite_sample_correction=correction)
            slow = _lp_fit(phi, scores, level, correction, monkeypatch)
        assert fast.columns is not None and fast.basis is not None
        np.testing.assert_array_equal(fast.threshold(test_phi), slow.threshold(test_phi))
        finite = np.isfinite(fast.threshold(test_phi))
        np.testing.assert_array_equal(fast.beta[finite], slow.beta[finite])
        if len(np.unique(scores)) == n:  # the interpolated rows are unique without ties
            np.testing.assert_array_equal(fast.basis, slow.basis)


def test_fast_path_is_taken_and_matches_end_to_end(monkeypatch):
    from sklearn.linear_model import LinearRegression

    from kandinsky_cp import KandinskyCP
    from kandinsky_cp import groups as G

    rng = np.random.default_rng(0)
    X = rng.uniform(size=(1200, 2))
    y = np.round(X[:, 0] + rng.normal(scale=0.1 + X[:, 1], size=1200), 2)  # rounded: tied residuals
    reg = LinearRegression().fit(X[:300], y[:300])
    calls = []
    real = core.solve_quantile_lp
    monkeypatch.setattr(core, "solve_quantile_lp", lambda *a, **k: calls.append(1) or real(*a, **k))
    for groups in (G.intercept(), G.by_feature(1, bins=[0.25, 0.5, 0.75])):
        fast = KandinskyCP(reg, groups=groups, random_state=0).conformalize(X[300:900], y[300:900])
        assert not calls  # no LP for disjoint groups
        with monkeypatch.context() as m:
            _force_lp(m)
            slow = KandinskyCP(reg, groups=groups, random_state=0).conformalize(X[300:900], y[300:900])
        assert calls
        calls.clear()
        np.testing.assert_array_equal(fast.predict_interval(X[900:])[1], slow.predict_interval(X[900:])[1])


def test_unjitter_shortcut_equals_the_solve(monkeypatch):
    """Regression with tied residuals: thresholds re-solved on the raw scores, with and without the shortcut."""
    rng = np.random.default_rng(5)
    n, d = 400, 4
    group = rng.integers(0, d, size=n)
    phi = np.eye(d)[group]
    raw = np.round(rng.normal(size=n), 1)
    jittered = raw + 1e-3 * rng.uniform(size=n)
    fit = group_quantile_regression(phi, jittered, confidence_level=0.9)
    short = core._unjitter(fit, phi, raw)
    with monkeypatch.context() as m:
        m.setattr(core, "_is_partition", lambda phi: False)
        solved = core._unjitter(fit, phi, raw)
    np.testing.assert_array_equal(short.beta, solved.beta)
    assert np.all(np.isin(short.beta, raw))


@pytest.mark.parametrize("rounded", [False, True])
@pytest.mark.parametrize("randomize", [True, False])
def test_split_cp_order_statistic_from_the_sorted_scores_equals_the_lp(monkeypatch, rounded, randomize):
    """Without tie noise the single group's order statistic is read from the scores sorted once in conformalize."""
    from sklearn.linear_model import LinearRegression

    from kandinsky_cp import KandinskyCP
    from kandinsky_cp import groups as G

    rng = np.random.default_rng(11)
    X = rng.uniform(size=(1100, 2))
    y = X[:, 0] + rng.normal(scale=0.1 + X[:, 1], size=1100)
    y = np.round(y, 1) if rounded else y
    reg = LinearRegression().fit(X[:300], y[:300])
    kw = dict(groups=G.intercept(), randomize=randomize, random_state=0, confidence_level=[0.5, 0.9, 0.99])
    fast = KandinskyCP(reg, **kw).conformalize(X[300:900], y[300:900])
    with monkeypatch.context() as m:
        _force_lp(m)
        slow = KandinskyCP(reg, **kw).conformalize(X[300:900], y[300:900])
    np.testing.assert_array_equal(fast.beta_, slow.beta_)
    np.testing.assert_array_equal(fast.predict_interval(X[900:])[1], slow.predict_interval(X[900:])[1])
    for f in fast.fit_results_:
        assert np.all(fast._raw_scores[f.basis] == f.beta)  # the basis row holds the threshold


def _taxonomy(X, y=None):
    return np.where(X[:, 0] > 0.9, np.nan, np.floor(X[:, 1] * 4))  # NaN: a row in no bin


@pytest.mark.parametrize("groups", [
    G.intercept(),
    G.mondrian(lambda X, y: (X[:, :3] > 0.5) @ np.array([1, 2, 4])),
    G.mondrian(lambda X, y: np.floor(X[:, 1] * 4), categories=[3.0, 1.0, 0.0, 2.0]),  # unsorted: Phi path
    G.mondrian(lambda X, y: np.array(["a", "b", "c"])[(X[:, 1] * 3).astype(int)]),
])
def test_partition_index_equals_the_group_weights(groups):
    """The column index a partition reports is the one-hot Phi's column, and unseen rows get -1."""
    rng = np.random.default_rng(3)
    X = rng.uniform(size=(500, 3))
    fitted, index = groups._fit_partition(X[:300])
    ref = fitted.fit(X[:300])(X[:300])
    if index is not None:
        np.testing.assert_array_equal(np.eye(ref.shape[1])[index], ref)
    test_index = fitted._partition_index(X[300:])
    if test_index is not None:
        phi = fitted(X[300:])
        expected = np.where(phi.any(axis=1), np.argmax(phi, axis=1), -1)
        np.testing.assert_array_equal(test_index, expected)


def test_mondrian_nan_and_unseen_labels_fall_in_no_bin():
    groups = G.mondrian(_taxonomy)
    rng = np.random.default_rng(4)
    X = rng.uniform(size=(400, 2))
    fitted, index = groups._fit_partition(X)
    phi = fitted(X)
    np.testing.assert_array_equal(index, np.where(phi.any(axis=1), np.argmax(phi, axis=1), -1))
    assert (index == -1).any()  # the NaN rows: no column, so conformalize takes the general path


@pytest.mark.parametrize("levels", [0.9, [0.5, 0.9, 0.95]])
def test_predict_interval_from_the_partition_index_equals_the_weights(levels):
    """Thresholds read per column equal Phi @ beta row by row, bit for bit, including rows in no bin."""
    from sklearn.linear_model import LinearRegression

    from kandinsky_cp import KandinskyCP

    rng = np.random.default_rng(7)
    X = rng.uniform(size=(1500, 3))
    y = X[:, 0] + rng.normal(scale=0.1 + X[:, 1], size=1500)
    reg = LinearRegression().fit(X[:300], y[:300])
    taxonomy = lambda X, y: np.floor(X[:, 1] * 6).astype(int)  # noqa: E731
    cal = X[300:900][X[300:900, 1] < 5 / 6]  # the top bin is unseen at calibration
    cp = KandinskyCP(reg, groups=G.mondrian(taxonomy), confidence_level=levels, random_state=0)
    cp.conformalize(cal, cal[:, 0] + rng.normal(size=len(cal)))
    assert cp._column_thresholds is not None and cp._calibration_phi is None
    with pytest.warns(UserWarning, match="zero weight"):
        fast = cp.predict_interval(X[900:])[1]
    cp._column_thresholds = None
    with pytest.warns(UserWarning, match="zero weight"):
        slow = cp.predict_interval(X[900:])[1]
    np.testing.assert_array_equal(fast, slow)
    assert np.isinf(fast).any()
    np.testing.assert_array_equal(cp.calibration_phi_, G.mondrian(taxonomy).fit(cal)(cal))


@pytest.mark.parametrize("seed", range(40))
def test_one_group_fit_from_the_sorted_scores_equals_the_row_wise_fit(seed):
    """With the sorted scores at hand the interpolated count comes from a run around the threshold."""
    rng = np.random.default_rng(seed)
    n = int(rng.integers(20, 400))
    scores = rng.normal(size=n) * 10.0 ** rng.integers(-8, 8)
    if seed % 3 == 0:
        scores = np.round(scores, 1)  # ties at the threshold
    if seed % 5 == 0:
        scores[: n // 2] = scores[0]
    group = np.zeros(n, dtype=np.int64)
    for level in (0.5, 0.8, 0.9):
        fast = core._partition_fit(group, 1, scores, level, True, ["all"], np.sort(scores))
        slow = core._partition_fit(group, 1, scores, level, True, ["all"], None)
        assert fast.n_interpolated == slow.n_interpolated >= 1
        np.testing.assert_array_equal(fast.beta, slow.beta)
        np.testing.assert_array_equal(scores[fast.basis], scores[slow.basis])  # tied rows may differ
        assert (fast.scale, fast.cap) == (slow.scale, slow.cap)




def test_nan_taxonomy_labels_at_calibration_fall_in_no_bin():
    """NaN is no category: its calibration rows join no bin (before, a 'bin == nan' group without weight made
    conformalize fail), and each other bin's interval is its own split-CP order statistic."""
    from sklearn.linear_model import LinearRegression

    from kandinsky_cp import KandinskyCP

    rng = np.random.default_rng(0)
    X = rng.normal(size=(700, 2))
    X[:, 1] = rng.integers(0, 3, size=700).astype(float)
    X[:30, 1] = np.nan
    y = X[:, 0] + rng.normal(size=700)
    model = LinearRegression().fit(np.nan_to_num(X[300:]), y[300:])

    class NanTolerant:
        def predict(self, X):
            return model.predict(np.nan_to_num(X))

    cal, test = np.arange(300), np.arange(300, 700)
    cp = KandinskyCP(NanTolerant(), groups=G.mondrian(lambda X, y=None: np.asarray(X)[:, 1]),
                     confidence_level=0.9, randomize=False)
    cp.conformalize(X[cal], y[cal])
    assert not any("nan" in name for name in cp.group_names_)
    intervals = np.asarray(cp.predict_interval(X[test])[1]).reshape(-1, 2)
    residuals = np.abs(y[cal] - NanTolerant().predict(X[cal]))
    half = (intervals[:, 1] - intervals[:, 0]) / 2
    for b in (0.0, 1.0, 2.0):
        r = np.sort(residuals[X[cal, 1] == b])
        expected = r[int(np.ceil((len(r) + 1) * 0.9)) - 1]
        np.testing.assert_allclose(half[X[test, 1] == b], expected, rtol=1e-12)
