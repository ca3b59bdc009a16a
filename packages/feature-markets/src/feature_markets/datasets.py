"""Market datasets: synthetic generators, a bundled real set with a budget proxy, a local Adult CSV.

Every loader returns :class:`MarketData` with non-negative features, labels in {-1, +1} and
positive budgets. None downloads anything.
"""

from __future__ import annotations

import csv
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from icml25_shared.random import check_random_state
from icml25_shared.validation import Interval, Options, check_params

__all__ = ["MarketData", "adult_csv", "breast_cancer_proxy", "make_market_data"]


@dataclass(frozen=True)
class MarketData:
    """A population of users in a feature market.

    Attributes
    ----------
    X : numpy.ndarray of shape (m, d)
        Non-negative features.
    y : numpy.ndarray of shape (m,)
        Labels in {-1, +1}.
    budgets : numpy.ndarray of shape (m,)
        Strictly positive budgets.
    description : str
        Where the users come from.
    """

    X: np.ndarray
    y: np.ndarray
    budgets: np.ndarray
    description: str

    def split(self, test_size: float = 0.3, *, random_state=0) -> tuple[MarketData, MarketData]:
        """Random train/test split.

        Parameters
        ----------
        test_size : float, default 0.3
            Share of users in the test part, in (0, 1).
        random_state : int, numpy Generator or None, default 0
            Seeds the permutation.

        Returns
        -------
        tuple of MarketData
            ``(train, test)``.
        """
        check_params(
            {"test_size": test_size, "random_state": random_state},
            {"test_size": [Interval(float, 0, 1, closed="neither")], "random_state": ["random_state"]},
            owner="MarketData.split",
        )
        order = check_random_state(random_state).permutation(self.y.shape[0])
        cut = int(round(test_size * self.y.shape[0]))
        take = lambda rows: MarketData(self.X[rows], self.y[rows], self.budgets[rows], self.description)  # noqa: E731
        return take(order[cut:]), take(order[:cut])


def make_market_data(
    n_samples: int = 1000,
    *,
    n_features: int = 2,
    distribution: str = "beta",
    inequality: float = 2.0**10,
    label_correlation: float = 0.0,
    feature_signal: float = 1.0,
    min_budget: float = 1.0,
    random_state=0,
) -> MarketData:
    """Synthetic users.

    ``distribution``: "beta" (features Beta(2 + s, 2) for positives, Beta(2, 2 + s) for negatives,
    ``s = feature_signal``) or "gaussian-mixture" (N(0.5 + 0.15 s, 0.2^2) vs N(0.5 - 0.15 s, 0.2^2),
    clipped at 0); ``feature_signal=0`` makes features carry no label information. Budgets are log-uniform on
    ``[min_budget, min_budget * inequality]``: ``log2(b / min_budget) = log2(inequality) * q`` with
    ``q = (1 - label_correlation) * U + label_correlation * 1{y = +1}``, so ``inequality=1`` gives
    uniform budgets and ``label_correlation=1`` makes the budget reveal the label.

    Parameters
    ----------
    n_samples : int, default 1000
        Number of users (half positive, half negative).
    n_features : int, default 2
        Number of features.
    distribution : {"beta", "gaussian-mixture"}, default "beta"
        Feature distribution.
    inequality : float, default 2**10
        Ratio of the largest to the smallest budget (>= 1).
    label_correlation : float, default 0.0
        In [0, 1]: how much the budget reveals the label.
    feature_signal : float, default 1.0
        How much the features reveal the label (0: not at all).
    min_budget : float, default 1.0
        The smallest budget.
    random_state : int, numpy Generator or None, default 0
        Seeds the draw.

    Returns
    -------
    MarketData
        The users.
    """
    check_params(
        {"n_samples": n_samples, "distribution": distribution, "random_state": random_state},
        {"n_samples": [Interval(int, 2, None)], "distribution": [Options(str, {"beta", "gaussian-mixture"})],
         "random_state": ["random_state"]},
        owner="make_market_data",
    )
    if not inequality >= 1:
        raise ValueError(f"inequality (max/min budget) must be >= 1, got {inequality}")
    if not 0 <= label_correlation <= 1:
        raise ValueError(f"label_correlation must be in [0, 1], got {label_correlation}")
    if not feature_signal >= 0:
        raise ValueError(f"feature_signal must be >= 0, got {feature_signal}")
    if not min_budget > 0:
        raise ValueError(f"min_budget must be positive, got {min_budget}")
    rng = check_random_state(random_state)
    y = np.where(np.arange(n_samples) % 2 == 0, 1, -1)
    rng.shuffle(y)
    positive = (y > 0)[:, None]
    if distribution == "beta":
        shape = (n_samples, n_features)
        X = np.where(positive, rng.beta(2 + feature_signal, 2, shape), rng.beta(2, 2 + feature_signal, shape))
    else:
        means = np.where(positive, 0.5 + 0.15 * feature_signal, 0.5 - 0.15 * feature_signal)
        X = np.clip(means + 0.2 * rng.standard_normal((n_samples, n_features)), 0, None)
    q = (1 - label_correlation) * rng.uniform(size=n_samples) + label_correlation * (y > 0)
    budgets = min_budget * 2.0 ** (np.log2(inequality) * q)
    description = (
        f"{distribution} features (d={n_features}, signal {feature_signal:g}), budgets log-uniform "
        f"with max/min {inequality:g}, label correlation {label_correlation:g}"
    )
    return MarketData(X, y.astype(np.int64), budgets, description)


def breast_cancer_proxy() -> MarketData:
    """scikit-learn's bundled breast-cancer set as a market, with a *proxy* budget.

    Features: the ten 'mean ...' measurements scaled to [0, 1]; label +1 = benign; budget: the
    'worst area' column rescaled to [1, 2^10] (a stand-in with a real, skewed distribution; it is not
    about people's money). Documented as a proxy in the package README.

    Returns
    -------
    MarketData
        569 users with 10 features.
    """
    from sklearn.datasets import load_breast_cancer

    bunch = load_breast_cancer()
    X = bunch.data[:, :10] / bunch.data[:, :10].max(axis=0)
    area = bunch.data[:, list(bunch.feature_names).index("worst area")]
    budgets = 2.0 ** (10 * (area - area.min()) / (area.max() - area.min()))
    y = np.where(bunch.target == 1, 1, -1)
    return MarketData(X, y, budgets, "breast cancer (sklearn bundled); budget proxy: worst area")


ADULT_COLUMNS = (
    "age",
    "workclass",
    "fnlwgt",
    "education",
    "education-num",
    "marital-status",
    "occupation",
    "relationship",
    "race",
    "sex",
    "capital-gain",
    "capital-loss",
    "hours-per-week",
    "native-country",
    "income",
)
ADULT_FEATURES = ("age", "education-num", "hours-per-week")


def adult_csv(path: str | Path) -> MarketData:
    """Read a local copy of UCI Adult (``adult.data`` format: 15 comma-separated columns, no header).

    Features: age, education-num, hours-per-week scaled to [0, 1]; label +1 = income >50K; budget:
    ``1 + capital-gain`` (the paper's proxy). Nothing is downloaded: pass the file's path.

    Parameters
    ----------
    path : str or pathlib.Path
        The local ``adult.data`` file.

    Returns
    -------
    MarketData
        One user per row of the file.

    Raises
    ------
    FileNotFoundError
        When ``path`` does not exist.
    ValueError
        On a row without 15 columns, or a file without rows.
    """
    path = Path(path)
    if not path.exists():
        raise FileNotFoundError(f"{path} does not exist; download UCI Adult's adult.data and pass its path")
    rows = []
    with path.open(newline="") as handle:
        for line_number, row in enumerate(csv.reader(handle), start=1):
            row = [cell.strip() for cell in row]
            if not row or not row[0] or row[0].startswith("|"):
                continue
            if len(row) != len(ADULT_COLUMNS):
                raise ValueError(f"{path}:{line_number} has {len(row)} columns, Adult has {len(ADULT_COLUMNS)}")
            rows.append(row)
    if not rows:
        raise ValueError(f"{path} holds no Adult rows")
    index = {name: i for i, name in enumerate(ADULT_COLUMNS)}
    X = np.array([[float(r[index[c]]) for c in ADULT_FEATURES] for r in rows])
    X = X / X.max(axis=0)
    y = np.array([1 if r[index["income"]].rstrip(".") == ">50K" else -1 for r in rows])
    budgets = 1.0 + np.array([float(r[index["capital-gain"]]) for r in rows])
    return MarketData(X, y, budgets, f"UCI Adult from {path.name}; budget proxy: 1 + capital-gain")
