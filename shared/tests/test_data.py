import numpy as np
import pytest
from icml25_shared import data

pytest.importorskip("sklearn")


def test_bundled_matches_sklearn():
    from sklearn.datasets import load_diabetes, load_digits

    ds = data.load("diabetes")
    ref = load_diabetes()
    np.testing.assert_array_equal(ds.X, ref.data)
    np.testing.assert_array_equal(ds.y, ref.target)
    assert ds.feature_names == tuple(ref.feature_names) and ds.target_names is None
    assert ds.task == "regression" and "scikit-learn" in ds.source
    digits = data.load("digits", seed=5)  # all rows: the seed draws nothing
    np.testing.assert_array_equal(digits.X, load_digits().data)
    assert digits.X.dtype == np.float64 and digits.target_names == tuple(str(k) for k in range(10))


def test_subsample_is_seeded_without_replacement_in_order():
    a = data.load("wine", n_samples=30, seed=3)
    b = data.load("wine", n_samples=30, seed=3)
    c = data.load("wine", n_samples=30, seed=4)
    np.testing.assert_array_equal(a.X, b.X)
    assert not np.array_equal(a.X, c.X)
    full = data.load("wine").X
    index = [int(np.flatnonzero((full == row).all(axis=1))[0]) for row in a.X]
    assert index == sorted(set(index)) and len(index) == 30


@pytest.mark.parametrize(("kwargs", "error", "names"), [
    ({"name": "friedman1"}, ValueError, "name"),
    ({"name": 3}, TypeError, "name"),
    ({"name": "iris", "n_samples": 151}, ValueError, "n_samples"),
    ({"name": "iris", "n_samples": 0}, ValueError, "n_samples"),
    ({"name": "iris", "n_samples": 2.0}, TypeError, "n_samples"),
    ({"name": "iris", "seed": -1}, ValueError, "seed"),
])
def test_bad_arguments_name_the_parameter(kwargs, error, names):
    name = kwargs.pop("name")
    with pytest.raises(error, match=names):
        data.load(name, **kwargs)
