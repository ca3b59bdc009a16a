"""Bad input gives clear errors."""

import warnings

import numpy as np
import pytest
from sklearn.exceptions import NotFittedError
from sklearn.linear_model import LinearRegression

from kandinsky_cp import KandinskyCP, group_quantile_regression
from kandinsky_cp import groups as G


@pytest.mark.parametrize("level", [0.0, 1.0, 1.5, -0.1])
def test_confidence_level_outside_unit_interval(regression_split, level):
    reg, Xc, yc, _, _ = regression_split
    with pytest.raises(ValueError, match=r"KandinskyCP: confidence_level must be a float in \(0, 1\)"):
        KandinskyCP(reg, groups=G.intercept(), confidence_level=level).conformalize(Xc, yc)


def test_group_row_count_differs_from_X(regression_split):
    reg, Xc, yc, _, _ = regression_split
    bad = G.fractional(lambda X, y: np.ones(len(X) - 1), names="short group")
    with pytest.raises(ValueError, match=r"'short group' returned shape \(400, 1\); expected \(401, d\)"):
        KandinskyCP(reg, groups=G.intercept() + bad).conformalize(Xc, yc)


@pytest.mark.parametrize("value, message", [(-0.5, "negative weight"), (np.inf, "non-finite"),
                                            (np.nan, "non-finite")])
def test_negative_or_nonfinite_weights(regression_split, value, message):
    reg, Xc, yc, _, _ = regression_split

    def weights(X, y):
        w = np.full(len(X), 0.5)
        w[3] = value
        return w

    with pytest.raises(ValueError, match=message) as err:
        KandinskyCP(reg, groups=G.fractional(weights, names="bad weights")).conformalize(Xc, yc)
    assert "bad weights" in str(err.value)


def test_too_few_points_names_group_and_minimum(regression_split):
    reg, Xc, yc, Xt, _ = regression_split
    tiny = G.fractional(lambda X, y: np.asarray(X)[:, 0] > 0.985, names="tiny group")
    assert (Xc[:, 0] > 0.985).sum() == 5
    for correction in (True, False):
        cp = KandinskyCP(reg, groups=G.intercept() + tiny, finite_sample_correction=correction)
        with pytest.warns(UserWarning, match=r"'tiny group' has 5 \(needs >= 9\)"):
            cp.conformalize(Xc, yc)
    # with the correction (as in split CP) the starved group's intervals are infinite, the others finite
    cp = KandinskyCP(reg, groups=G.intercept() + tiny)
    with pytest.warns(UserWarning):
        cp.conformalize(Xc, yc)
    width = np.diff(cp.predict_interval(Xt)[1][:, :, 0], axis=1)[:, 0]
    in_tiny = Xt[:, 0] > 0.985
    assert in_tiny.any() and np.all(np.isinf(width[in_tiny])) and np.all(np.isfinite(width[~in_tiny]))


def test_empty_group():
    with pytest.raises(ValueError, match=r"\['never'\] have no calibration weight"):
        group_quantile_regression(np.column_stack([np.ones(20), np.zeros(20)]), np.arange(20.0),
                                  names=["all", "never"])


def test_predict_before_conformalize(regression_split):
    reg, _, _, Xt, _ = regression_split
    cp = KandinskyCP(reg, groups=G.intercept())
    for method in (cp.predict_interval, cp.predict_set, lambda X: cp.threshold(X)):
        with pytest.raises(NotFittedError, match="call conformalize"):
            method(Xt)


def test_stage_and_option_errors(regression_split, digits_split):
    reg, Xc, yc, Xt, _ = regression_split
    with pytest.raises(NotFittedError, match="call fit"):
        KandinskyCP(LinearRegression(), groups=G.intercept(), prefit=False).conformalize(Xc, yc)
    with pytest.raises(ValueError, match="prefit=True"):
        KandinskyCP(reg, groups=G.intercept()).fit(Xc, yc)
    with pytest.raises(ValueError, match="score='hinge' is not known"):
        KandinskyCP(reg, groups=G.intercept(), score="hinge").conformalize(Xc, yc)
    with pytest.raises(ValueError, match="declare no label bins"):
        KandinskyCP(reg, groups=G.fractional(lambda X, y: y > 0, uses_label=True)).conformalize(Xc, yc)
    with pytest.raises(ValueError, match="exact=True .* finite_sample_correction=True"):
        KandinskyCP(reg, groups=G.intercept(), exact=True, finite_sample_correction=False).conformalize(Xc, yc)
    cp = KandinskyCP(reg, groups=G.intercept()).conformalize(Xc, yc)
    with pytest.raises(ValueError, match="predict_set is for classification"):
        cp.predict_set(Xt)
    clf, Xd, yd, _, _ = digits_split
    with pytest.raises(ValueError, match=r"calibration labels \[42\]"):
        KandinskyCP(clf, groups=G.intercept(), score="lac").conformalize(Xd[:20], np.full(20, 42))


def test_prefit_false_fits_a_clone(regression_split):
    reg, Xc, yc, Xt, _ = regression_split
    base = LinearRegression()
    cp = KandinskyCP(base, groups=G.intercept(), prefit=False).fit(Xc[:200], yc[:200])
    cp.conformalize(Xc[200:], yc[200:])
    assert not hasattr(base, "coef_")
    assert cp.predict_interval(Xt)[1].shape == (len(Xt), 2, 1)


@pytest.mark.parametrize("labels", [np.array(["3"] * 5), np.array([-1] * 5), np.array([1.5] * 5), np.array([10] * 5)])
def test_p_values_reject_labels_outside_the_classes(digits_split, labels):
    # string "3" for integer class 3, or a label the classifier never saw: an error, not p = 1 (or an IndexError)
    clf, Xc, yc, Xt, _ = digits_split
    cp = KandinskyCP(clf, groups=G.by_class(), score="lac", random_state=0).conformalize(Xc, yc)
    with pytest.raises(ValueError, match="not among the estimator's classes"):
        cp.p_values(Xt[:5], labels)
    with pytest.raises(ValueError, match="5 rows but y has 4"):
        cp.p_values(Xt[:5], np.arange(4))
    assert cp.p_values(Xt[:5], np.full(5, 3)).shape == (5,)


def test_confidence_level_below_one_half_warns_about_alpha(regression_split):
    # confidence_level=0.1 where alpha=0.1 was meant: 10 % intervals, so say so once at conformalize
    reg, Xc, yc, Xt, yt = regression_split
    with pytest.warns(UserWarning, match="pass confidence_level=0.9"):
        cp = KandinskyCP(reg, groups=G.intercept(), confidence_level=[0.8, 0.1]).conformalize(Xc, yc)
    lo, hi = cp.predict_interval(Xt)[1][:, 0, 1], cp.predict_interval(Xt)[1][:, 1, 1]
    assert np.mean((yt >= lo) & (yt <= hi)) < 0.3  # still honoured: it is a valid level
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        KandinskyCP(reg, groups=G.intercept(), confidence_level=0.5).conformalize(Xc, yc)


def test_nonfinite_test_probabilities_and_targets_raise(digits_split, regression_split):
    # a NaN probability made every label fail S <= q: an empty set (or p = 1 / (n + 1)) with no error
    clf, Xc, yc, Xt, _ = digits_split

    class NaNRows:
        classes_ = clf.classes_

        def predict_proba(self, X):
            X = np.asarray(X)
            p = clf.predict_proba(np.nan_to_num(X))
            p[np.isnan(X).any(axis=1)] = np.nan
            return p

    cp = KandinskyCP(NaNRows(), groups=G.intercept(), score="lac", random_state=0).conformalize(Xc, yc)
    Xbad = Xt[:6].copy()
    Xbad[4, 3] = np.nan
    with pytest.raises(ValueError, match=r"NaN or inf at rows \[4\]"):
        cp.predict_set(Xbad)
    assert cp.predict_set(Xt[:6]).sum(axis=1).min() >= 1
    reg, Xc, yc, Xt, yt = regression_split
    cp = KandinskyCP(reg, groups=G.intercept(), randomize=False).conformalize(Xc, yc)
    y = yt[:5].copy()
    y[2] = np.nan
    with pytest.raises(ValueError, match=r"NaN or inf at rows \[2\]"):
        cp.p_values(Xt[:5], y)
