import warnings

import numpy as np
import pandas as pd
import pytest

from kandinsky_cp import groups as G


def test_intercept_and_bins():
    X = np.array([[0.1, 5], [0.5, 6], [0.9, 7]])
    assert G.intercept()(X).tolist() == [[1.0]] * 3
    phi = G.by_feature(0, bins=[0.5])(X)
    assert phi.tolist() == [[1, 0], [0, 1], [0, 1]]  # bins (-inf, 0.5), [0.5, inf)
    assert G.by_feature(0, bins=[0.5]).names == ["x[0] < 0.5", "x[0] >= 0.5"]


def test_categories_learnt_and_dataframe_columns():
    df = pd.DataFrame({"region": ["n", "s", "s", "w"], "age": [20, 30, 40, 50]})
    g = G.by_feature("region").fit(df)
    assert g.names == ["x[region] == n", "x[region] == s", "x[region] == w"]
    assert g(df).sum(axis=0).tolist() == [1, 2, 1]
    with pytest.raises(ValueError, match="not in X"):
        G.by_feature("income").fit(df)


def test_by_class_and_label_bins():
    X = np.zeros((4, 1))
    y = np.array([0, 2, 1, 2])
    g = G.by_class().fit(X, y, classes=np.array([0, 1, 2]))
    assert g(X, y).tolist() == [[1, 0, 0], [0, 0, 1], [0, 1, 0], [0, 0, 1]]
    lb = G.by_label_bins([0.5, 1.5])
    assert lb(X, y).argmax(axis=1).tolist() == [0, 2, 1, 2]
    assert lb.uses_label and lb.label_edges.tolist() == [0.5, 1.5]
    with pytest.raises(ValueError, match="depends on the label"):
        lb(X)


def test_intersect_is_rowwise_product_and_concat_stacks():
    rng = np.random.default_rng(0)
    X = rng.uniform(size=(50, 2))
    y = rng.integers(0, 2, size=50)
    a = G.by_feature(0, bins=[0.5])
    b = G.by_class([0, 1])
    inter = (a & b).fit(X, y)
    pa, pb = a(X), b(X, y)
    expected = np.stack([pa[:, i] * pb[:, j] for i in range(2) for j in range(2)], axis=1)
    np.testing.assert_array_equal(inter(X, y), expected)
    assert inter.names[3] == "x[0] >= 0.5 & y == 1"
    both = (G.intercept() + inter + G.fractional(lambda X, y: X[:, 1], names="x1")).fit(X, y)
    assert both(X, y).shape == (50, 1 + 4 + 1)
    assert both.uses_label


def test_mondrian_learns_categories():
    X = np.array([[0.0], [1.0], [2.0], [1.0]])
    g = G.mondrian(lambda X, y: (X[:, 0] > 0.5).astype(int)).fit(X)
    assert g.names == ["bin == 0", "bin == 1"]
    assert g(X).tolist() == [[1, 0], [0, 1], [0, 1], [0, 1]]


@pytest.mark.parametrize("values, message", [
    (np.array([0.5, -0.1, 0.2]), "negative weight"),
    (np.array([0.5, np.nan, 0.2]), "non-finite"),
    (np.array([0.5, 1.5, 0.2]), r"above 1; .*\[0, 1\]"),
    (np.array([0.5, 0.2]), r"shape \(2, 1\); expected \(3, d\)"),
])
def test_validation_names_the_offending_group(values, message):
    g = G.intercept() + G.fractional(lambda X, y: values, names="income share")
    with pytest.raises(ValueError, match=message) as err:
        g(np.zeros((3, 2)))
    assert "income share" in str(err.value)


def test_bad_edges_and_arguments():
    with pytest.raises(ValueError, match="strictly increasing"):
        G.by_label_bins([1.0, 1.0])
    with pytest.raises(ValueError, match="not both"):
        G.by_feature(0, bins=[1.0], categories=[1])
    with pytest.raises(ValueError, match="out of range"):
        G.by_feature(5, bins=[0.0])(np.zeros((2, 2)))
    with pytest.raises(TypeError, match="callable"):
        G.mondrian([0, 1])


def test_plain_callable_groups_match_the_builtin_equivalent(digits_split):
    from kandinsky_cp import KandinskyCP

    clf, Xc, yc, Xt, _ = digits_split

    def phi(X, y):
        return np.column_stack([np.ones(len(X)), np.asarray(y) == 3])

    a = KandinskyCP(clf, groups=phi, score="lac", randomize=False).conformalize(Xc, yc)
    b = KandinskyCP(clf, groups=G.intercept() + G.fractional(lambda X, y: np.asarray(y) == 3, uses_label=True),
                    score="lac", randomize=False).conformalize(Xc, yc)
    np.testing.assert_array_equal(a.beta_, b.beta_)
    np.testing.assert_array_equal(a.predict_set(Xt), b.predict_set(Xt))
    assert a.group_names_ == ["phi[0]", "phi[1]"]


def test_lac_and_aps_scores_by_hand():
    from kandinsky_cp.scores import aps, lac, resolve_score

    proba = np.array([[0.5, 0.3, 0.2], [0.1, 0.1, 0.8]])
    np.testing.assert_allclose(lac.score(proba, np.array([1, 2])), [0.7, 0.2])
    # APS: mass of the labels strictly more likely than y, plus p_y (ties with y not counted)
    np.testing.assert_allclose(aps.score(proba, np.array([1, 0])), [0.8, 0.9])
    np.testing.assert_allclose(aps.score(proba, np.array([2, 2])), [1.0, 0.8])
    assert resolve_score("aps") is aps
    with pytest.raises(TypeError, match="score must be"):
        resolve_score(3)


def test_by_feature_without_bins_on_a_continuous_column_says_pass_bins():
    # by_feature(0) on a float column made one group per value: every threshold infinite, no hint why
    X = np.random.default_rng(0).uniform(size=(200, 2))
    with pytest.warns(UserWarning, match=r"200 distinct values in 200 rows .* pass bins="):
        G.by_feature(0).fit(X)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        G.by_feature(0).fit(np.floor(X * 5))  # a few numeric categories: no warning
        G.by_feature(0, bins=[0.5]).fit(X)
