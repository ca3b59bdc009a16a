"""Reproducible tie-breaking, zero-weight test rows, all-tied scores and input errors."""

import warnings

import numpy as np
import pytest
from sklearn.datasets import load_digits
from sklearn.linear_model import LinearRegression
from sklearn.tree import DecisionTreeClassifier

from kandinsky_cp import KandinskyCP
from kandinsky_cp import groups as G


@pytest.fixture(scope="module")
def tree_digits():
    X, y = load_digits(return_X_y=True)
    perm = np.random.default_rng(1).permutation(len(y))
    X, y = X[perm], y[perm]
    tree = DecisionTreeClassifier(max_depth=4, random_state=0).fit(X[:500], y[:500])
    return tree, X[500:1100], y[500:1100], X[1100:], y[1100:]


def test_predict_set_is_reproducible_across_calls_and_batches(tree_digits):
    """A depth-4 tree's probabilities are heavily tied: the test noise is a function of (random_state, row,
    label), so repeated calls, batches and a refitted object give the same sets."""
    tree, Xc, yc, Xt, _ = tree_digits
    cp = KandinskyCP(tree, groups=G.intercept() + G.by_class(), score="lac", random_state=3).conformalize(Xc, yc)
    assert cp.tie_noise_ > 0
    first = cp.predict_set(Xt)
    np.testing.assert_array_equal(cp.predict_set(Xt), first)
    batches = np.vstack([cp.predict_set(Xt[i:i + 37]) for i in range(0, len(Xt), 37)])
    np.testing.assert_array_equal(batches, first)
    np.testing.assert_array_equal(cp.predict_set(Xt[::-1])[::-1], first)
    again = KandinskyCP(tree, groups=G.intercept() + G.by_class(), score="lac", random_state=3).conformalize(Xc, yc)
    np.testing.assert_array_equal(again.predict_set(Xt), first)
    other = KandinskyCP(tree, groups=G.intercept() + G.by_class(), score="lac", random_state=4).conformalize(Xc, yc)
    assert (other.predict_set(Xt) != first).any(axis=1).mean() > 0.05  # the noise matters: it is not constant


def _zero_rows_warnings(fn):
    with warnings.catch_warnings(record=True) as rec:
        warnings.simplefilter("always")
        out = fn()
    zero = [w for w in rec if "zero weight in every group" in str(w.message)]
    return out, zero


@pytest.mark.parametrize("exact", [False, True])
def test_unseen_category_gets_infinite_interval_with_one_warning(regression_split, exact):
    reg, Xc, yc, Xt, _ = regression_split
    Xt = Xt[:30].copy()
    Xt[:4, 2] = 7.0  # category 7 never appears at calibration
    groups = G.mondrian(lambda X, y: np.floor(np.asarray(X)[:, 2] * 2))
    cp = KandinskyCP(reg, groups=groups, exact=exact).conformalize(Xc, yc)
    band, zero = _zero_rows_warnings(lambda: cp.predict_interval(Xt)[1][:, :, 0])
    assert len(zero) == 1 and "4 of 30 test rows" in str(zero[0].message) and "'bin == 0.0'" in str(zero[0].message)
    assert np.all(np.isinf(band[:4])) and np.all(np.isfinite(band[4:]))


@pytest.mark.parametrize("exact", [False, True])
def test_unseen_category_gets_full_set_with_one_warning(digits_split, exact):
    clf, Xc, yc, Xt, _ = digits_split
    Xt = Xt[:20].copy()
    Xt[:3, 36] = 3.0  # pixel 36 lies in [0, 1]: its category floor(2 x) = 6 is unseen
    groups = G.mondrian(lambda X, y: np.floor(2 * np.asarray(X)[:, 36]))
    cp = KandinskyCP(clf, groups=groups, score="lac", exact=exact, randomize=False).conformalize(Xc, yc)
    sets, zero = _zero_rows_warnings(lambda: cp.predict_set(Xt))
    assert len(zero) == 1 and "3 of 20 test rows" in str(zero[0].message)
    assert sets[:3].all()


def test_mapie_perfect_fit_toy_has_zero_width():
    """MAPIE's toy (y = 2x + 5, a perfect linear fit): every residual tied at 0, no noise, width 0 (was 1.27)."""
    X = np.arange(6.0).reshape(-1, 1)
    y = 2 * X[:, 0] + 5
    reg = LinearRegression().fit(X, y)
    for level in (0.5, 0.8):
        cp = KandinskyCP(reg, groups=G.intercept(), confidence_level=level, random_state=0).conformalize(X, y)
        width = np.diff(cp.predict_interval(X)[1][:, :, 0], axis=1)
        assert np.max(width) <= 4e-15, width
    y_int = np.full(50, 3.0)
    const = LinearRegression().fit(np.zeros((50, 1)), y_int)
    cp = KandinskyCP(const, groups=G.intercept(), random_state=0).conformalize(np.zeros((50, 1)), y_int)
    assert cp.tie_noise_ == 0.0 and np.all(cp.predict_interval(np.zeros((3, 1)))[1] == 3.0)


def test_tied_regression_residuals_randomized_equal_mapie():
    """Integer targets and rounded predictions tie most residuals; with randomize=True the thresholds are
    still calibration scores, identical to MAPIE's split CP (max diff 0.0)."""
    mapie_regression = pytest.importorskip("mapie.regression")

    class Rounded(LinearRegression):
        def predict(self, X):
            return np.round(super().predict(X))

    rng = np.random.default_rng(5)
    X = rng.uniform(size=(900, 2))
    y = np.round(10 * X[:, 0] + rng.normal(size=900))
    reg = Rounded().fit(X[:300], y[:300])
    for seed in range(5):
        ours = KandinskyCP(reg, groups=G.intercept(), random_state=seed).conformalize(X[300:700], y[300:700])
        assert ours.tie_noise_ > 0
        _, ref = mapie_regression.SplitConformalRegressor(reg, confidence_level=0.9, prefit=True) \
            .conformalize(X[300:700], y[300:700]).predict_interval(X[700:])
        np.testing.assert_array_equal(ours.predict_interval(X[700:])[1], ref)


def test_input_errors(regression_split, digits_split):
    reg, Xc, yc, _, _ = regression_split
    cp = KandinskyCP(reg, groups=G.intercept())
    with pytest.raises(ValueError, match=r"y_conformalize must be 1-D \(n_samples,\), got shape \(401, 2\)"):
        cp.conformalize(Xc, np.column_stack([yc, yc]))
    y_nan = yc.copy()
    y_nan[[5, 9]] = np.nan
    with pytest.raises(ValueError, match=r"y_conformalize has NaN or inf at rows \[5, 9\]"):
        cp.conformalize(Xc, y_nan)
    clf, Xd, yd, _, _ = digits_split
    with pytest.raises(ValueError, match="'absolute' is a regression score but the estimator is a classifier"):
        KandinskyCP(clf, groups=G.intercept(), score="absolute").conformalize(Xd, yd)
    X_nan = Xc.copy()
    X_nan[7, 1] = np.nan
    with pytest.raises(ValueError, match=r"by_feature\(1\): column 1 has NaN at rows \[7\]"):
        G.by_feature(1, bins=[0.5])(X_nan)
    tiny = G.fractional(lambda X, y: np.asarray(X)[:, 0] > 0.985, names="tiny group")
    with pytest.warns(UserWarning, match="thresholds stay finite but their coverage is not guaranteed"):
        KandinskyCP(reg, groups=G.intercept() + tiny, finite_sample_correction=False).conformalize(Xc, yc)


def test_nonfinite_scores_name_rows():
    from kandinsky_cp import group_quantile_regression

    scores = np.arange(20.0)
    scores[4] = np.nan
    with pytest.raises(ValueError, match=r"NaN or inf at rows \[4\]"):
        group_quantile_regression(np.ones((20, 1)), scores)

    class NanAtRow3(LinearRegression):
        def predict(self, X):
            out = super().predict(X)
            out[3] = np.nan
            return out

    X = np.random.default_rng(0).normal(size=(40, 2))
    reg = NanAtRow3().fit(X, X[:, 0])
    with pytest.raises(ValueError, match=r"non-finite calibration scores at rows \[3\]"):
        KandinskyCP(reg, groups=G.intercept()).conformalize(X, X[:, 0])


def test_tied_lac_scores_randomize_off_equal_mapie_and_on_differ_by_the_stated_amount(tree_digits):
    """The README's tie statement: a depth-4 tree's tied LAC scores give MAPIE's sets exactly with
    randomize=False; with randomize=True a minority of rows differ and coverage stays at the level."""
    mapie_classification = pytest.importorskip("mapie.classification")
    tree, Xc, yc, Xt, yt = tree_digits
    _, ref = mapie_classification.SplitConformalClassifier(tree, confidence_level=0.9, prefit=True) \
        .conformalize(Xc, yc).predict_set(Xt)
    off = KandinskyCP(tree, groups=G.intercept(), score="lac", randomize=False).conformalize(Xc, yc)
    np.testing.assert_array_equal(off.predict_set(Xt), ref[:, :, 0])
    on = KandinskyCP(tree, groups=G.intercept(), score="lac", random_state=0).conformalize(Xc, yc)
    assert on.tie_noise_ > 0
    sets = on.predict_set(Xt)
    differ = (sets != ref[:, :, 0]).any(axis=1).mean()
    assert 0.02 < differ < 0.5
    assert sets.sum() <= ref[:, :, 0].sum()  # randomising ties can only drop tied labels, never add
    assert abs(sets[np.arange(len(yt)), yt].mean() - 0.9) < 0.05
