"""Bad input gives errors that say what was wrong."""

import numpy as np
import pytest

from corrgcv import (
    ExponentialCorrelation,
    NearestNeighbourCorrelation,
    PowerLawCorrelation,
    RidgeCorrGCV,
    corrgcv,
    deterministic_equivalent,
    gcv,
)

rng = np.random.default_rng(0)
X = rng.standard_normal((30, 5))
y = rng.standard_normal(30)


def test_k_not_positive_definite():
    K = np.eye(30)
    K[0, 1] = K[1, 0] = 1.0  # two identical rows -> a zero eigenvalue
    with pytest.raises(ValueError, match="not positive definite"):
        corrgcv(X, y, 1.0, K=K)
    with pytest.raises(ValueError, match="not positive definite"):
        corrgcv(X, y, 1.0, K=np.r_[np.full(29, 30 / 29), 0.0])


def test_k_wrong_size_asymmetric_or_not_a_correlation():
    with pytest.raises(ValueError, match=r"shape \(20, 20\).*30 samples"):
        corrgcv(X, y, 1.0, K=np.eye(20))
    with pytest.raises(ValueError, match=r"eigenvalues have shape \(10,\)"):
        corrgcv(X, y, 1.0, K=np.ones(10))
    A = np.eye(30)
    A[0, 1] = 0.3
    with pytest.raises(ValueError, match="not symmetric"):
        corrgcv(X, y, 1.0, K=A)
    with pytest.raises(ValueError, match="unit diagonal"):
        corrgcv(X, y, 1.0, K=2 * np.eye(30))
    with pytest.raises(ValueError, match="average 1"):
        corrgcv(X, y, 1.0, K=np.full(30, 2.0))
    with pytest.raises(ValueError, match="without its parameter"):
        corrgcv(X, y, 1.0, K="exponential")


@pytest.mark.parametrize("bad", [np.nan, np.inf])
def test_non_finite_data(bad):
    Xb = X.copy()
    Xb[3, 2] = bad
    with pytest.raises(ValueError, match="X contains NaN or infinite"):
        gcv(Xb, y, 1.0)
    yb = y.copy()
    yb[0] = bad
    with pytest.raises(ValueError, match="y contains NaN or infinite"):
        corrgcv(X, yb, 1.0)
    with pytest.raises(ValueError):
        RidgeCorrGCV().fit(Xb, y)


def test_negative_or_bad_penalties():
    with pytest.raises(ValueError, match="non-negative"):
        corrgcv(X, y, [1.0, -0.1])
    with pytest.raises(ValueError, match="finite"):
        gcv(X, y, [np.nan])
    with pytest.raises(ValueError, match="non-negative"):
        RidgeCorrGCV(alphas=(-1.0, 1.0)).fit(X, y)
    with pytest.raises(ValueError, match="ridge must be finite and > 0"):
        deterministic_equivalent(np.ones(3), np.ones(3), n_samples=10, ridge=-1.0)


def test_shape_mismatch_and_family_parameters():
    with pytest.raises(ValueError, match="30 samples but y has 29"):
        gcv(X, y[:-1], 1.0)
    with pytest.raises(ValueError, match=r"xi must be a float in \(0, inf\)"):
        ExponentialCorrelation(xi=0.0)
    with pytest.raises(ValueError, match=r"\|rho\| < 0.5"):
        NearestNeighbourCorrelation(rho=0.6)
    with pytest.raises(ValueError, match="exponent > 0"):
        PowerLawCorrelation(exponent=-1.0)


def test_estimator_configuration_errors():
    with pytest.raises(ValueError, match="unknown correlation 'ar2'"):
        RidgeCorrGCV(correlation="ar2").fit(X, y)
    with pytest.raises(ValueError, match="only when correlation is a family name"):
        RidgeCorrGCV(correlation=np.eye(30), correlation_param=2.0).fit(X, y)
    with pytest.raises(ValueError, match="shape"):
        RidgeCorrGCV(correlation=np.eye(20)).fit(X, y)
    with pytest.raises(ValueError, match="n_rounds"):
        RidgeCorrGCV(n_rounds=0).fit(X, y)
    with pytest.raises(ValueError, match="at least 3 samples"):
        RidgeCorrGCV().fit(X[:2], y[:2])


def test_null_model_when_every_direction_is_shrunk_to_nothing():
    """d = tr(H)/T underflows to 0 (tiny X, no intercept): the criteria are the null model's E_in / mean(k),
    as RidgeCV picks a penalty there too, instead of failing to solve for kappa_tilde."""
    rng = np.random.default_rng(0)
    X, y = rng.standard_normal((200, 10)) * 1e-7, rng.standard_normal(200)
    model = RidgeCorrGCV(alphas=np.logspace(-2, 5, 8), fit_intercept=False).fit(X, y)
    assert np.isfinite(model.best_score_)
    path = corrgcv(np.zeros((50, 4)), y[:50], [1.0], K=ExponentialCorrelation(3.0))
    assert path.criterion[0] == pytest.approx(np.mean(y[:50] ** 2), rel=1e-12) and path.kappa_tilde[0] == np.inf
