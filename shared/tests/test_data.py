import numpy as np
import pytest
from icml25_shared import data


def test_available_lists_every_kind():
    names = data.available()
    assert {"diabetes", "iris", "friedman1", "gaussian-linear", "ar1"} <= set(names)
    assert set(data.available("bundled")) == {"diabetes", "iris", "wine", "breast_cancer", "digits"}
    assert names == sorted(names)


def test_bundled_matches_sklearn():
    from sklearn.datasets import load_diabetes

    ds = data.load("diabetes")
    ref = load_diabetes()
    np.testing.assert_array_equal(ds.X, ref.data)
    np.testing.assert_array_equal(ds.y, ref.target)
    assert ds.feature_names == tuple(ref.feature_names)
    assert ds.task == "regression" and "scikit-learn" in ds.source


def test_bundled_subsample_is_seeded_and_without_replacement():
    a = data.load("iris", n_samples=30, seed=3)
    b = data.load("iris", n_samples=30, seed=3)
    c = data.load("iris", n_samples=30, seed=4)
    np.testing.assert_array_equal(a.X, b.X)
    assert not np.array_equal(a.X, c.X)
    full = data.load("iris").X
    rows = {tuple(r) for r in full}
    assert all(tuple(r) in rows for r in a.X)
    assert len({tuple(r) for r in a.X}) == len(a.X) or len(rows) < len(full)  # iris has duplicate rows
    assert a.target_names == ("setosa", "versicolor", "virginica")


def test_friedman1_formula():
    ds = data.load("friedman1", n_samples=200, seed=0, noise=0.0)
    X = ds.X
    expected = 10 * np.sin(np.pi * X[:, 0] * X[:, 1]) + 20 * (X[:, 2] - 0.5) ** 2 + 10 * X[:, 3] + 5 * X[:, 4]
    np.testing.assert_allclose(ds.y, expected)
    assert ds.X.shape == (200, 10) and 0 <= X.min() and X.max() <= 1


def test_ar1_has_the_requested_autocorrelation():
    ds = data.load("ar1", n_samples=20000, seed=1, n_features=2, phi=0.7)
    x = ds.X[:, 0]
    lag1 = np.corrcoef(x[:-1], x[1:])[0, 1]
    assert abs(lag1 - 0.7) < 0.02
    assert abs(x.var() - 1.0) < 0.1


def test_gaussian_linear_covariance():
    ds = data.load("gaussian-linear", n_samples=20000, seed=2, n_features=3, correlation=0.5)
    cov = np.cov(ds.X.T)
    np.testing.assert_allclose(cov, [[1, 0.5, 0.25], [0.5, 1, 0.5], [0.25, 0.5, 1]], atol=0.04)


def test_gaussian_mixture_is_balanced_and_labelled():
    ds = data.load("gaussian-mixture", n_samples=300, seed=0, n_classes=3)
    assert ds.task == "multiclass" and ds.y.dtype == np.int64
    assert np.bincount(ds.y).tolist() == [100, 100, 100]


def test_split_partitions_rows():
    ds = data.load("wine")
    train, test = ds.split(0.25, seed=0)
    assert train.n_samples + test.n_samples == ds.n_samples
    assert test.n_samples == round(0.25 * ds.n_samples)
    both = np.vstack([train.X, test.X])
    assert sorted(map(tuple, both)) == sorted(map(tuple, ds.X))


def test_unknown_name_names_the_options():
    with pytest.raises(ValueError, match="unknown dataset 'nope'.*diabetes.*friedman1"):
        data.load("nope")
    with pytest.raises(TypeError, match="name must be a str"):
        data.load(3)


@pytest.mark.parametrize("bad", [0, -5])
def test_bad_size_value(bad):
    with pytest.raises(ValueError, match="positive int or None"):
        data.load("friedman1", n_samples=bad)


def test_bad_size_type_and_too_many_rows():
    with pytest.raises(TypeError, match="positive int or None, got float"):
        data.load("friedman1", n_samples=10.5)
    with pytest.raises(ValueError, match=r"has 150 rows; n_samples must be in \[1, 150\]"):
        data.load("iris", n_samples=151)


@pytest.mark.parametrize("seed", ["1", 1.0, True])
def test_bad_seed_type(seed):
    with pytest.raises(TypeError, match="seed must be an int or None"):
        data.load("iris", seed=seed)


def test_unknown_option_lists_accepted_ones():
    with pytest.raises(TypeError, match="accepted options: n_features, noise"):
        data.load("friedman1", colour="red")


def test_register_csv_roundtrip(tmp_path):
    path = tmp_path / "toy.csv"
    path.write_text("a,b,target\n1,2,3\n4,5,6\n7,8,9\n")
    data.register_csv("toy-test", path, target="target", task="regression", description="toy",
                      source="written by the test", license="CC0-1.0")
    ds = data.load("toy-test")
    np.testing.assert_array_equal(ds.X, [[1, 2], [4, 5], [7, 8]])
    np.testing.assert_array_equal(ds.y, [3, 6, 9])
    assert ds.feature_names == ("a", "b") and data.describe("toy-test").max_samples == 3
    with pytest.raises(ValueError, match="already registered"):
        data.register_csv("toy-test", path, target="target", task="regression", description="toy",
                          source="x", license="x")
    with pytest.raises(ValueError, match="no column 'zzz'"):
        data.read_csv(path, target="zzz")
