import numpy as np
import pytest
from sklearn.datasets import load_digits
from sklearn.linear_model import LinearRegression, LogisticRegression


@pytest.fixture(scope="session")
def regression_split():
    """Heteroscedastic linear data, a fitted LinearRegression, calibration and test splits."""
    rng = np.random.default_rng(0)
    n = 1000
    X = rng.uniform(size=(n, 3))
    y = X @ np.array([1.0, 2.0, 3.0]) + rng.normal(size=n) * (0.3 + X[:, 0])
    reg = LinearRegression().fit(X[:300], y[:300])
    return reg, X[300:701], y[300:701], X[701:], y[701:]


@pytest.fixture(scope="session")
def digits_split():
    """scikit-learn digits, a deliberately weak LogisticRegression (150 rows, C=0.02), calibration (600) and test."""
    d = load_digits()
    perm = np.random.default_rng(0).permutation(len(d.target))
    X, y = d.data[perm] / 16.0, d.target[perm]
    clf = LogisticRegression(C=0.02, max_iter=500).fit(X[:150], y[:150])
    return clf, X[600:1200], y[600:1200], X[1200:], y[1200:]
