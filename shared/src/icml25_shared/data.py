"""scikit-learn's bundled datasets behind one seeded loader: ``load(name, *, n_samples=None, seed=0)``.

Offline (the sets ship inside the scikit-learn wheel; needs ``icml25-shared[sklearn]``). Returns a typed
:class:`Dataset` with its provenance.

Examples
--------
>>> from icml25_shared.data import load
>>> data = load("diabetes", n_samples=100, seed=0)  # doctest: +SKIP
>>> data.X.shape, data.y.shape, data.task  # doctest: +SKIP
((100, 10), (100,), 'regression')
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from icml25_shared.validation import Interval, Options, check_params

__all__ = ["DATASETS", "Dataset", "load"]

# name: (sklearn.datasets loader, task, rows)
DATASETS: dict[str, tuple[str, str, int]] = {
    "diabetes": ("load_diabetes", "regression", 442),
    "iris": ("load_iris", "multiclass", 150),
    "wine": ("load_wine", "multiclass", 178),
    "breast_cancer": ("load_breast_cancer", "binary", 569),
    "digits": ("load_digits", "multiclass", 1797),
}


@dataclass(frozen=True)
class Dataset:
    """A loaded dataset.

    Attributes
    ----------
    name : str
        The name passed to :func:`load`.
    X : numpy.ndarray
        Features, shape (n, d), float64.
    y : numpy.ndarray
        Targets, shape (n,): floats for regression, int labels for classification.
    feature_names : tuple of str
        One name per column of ``X``.
    target_names : tuple of str or None
        Class names (classification sets).
    task : str
        ``"regression"``, ``"binary"`` or ``"multiclass"``.
    source : str
        Where the data comes from (its licence is scikit-learn's BSD-3-Clause).
    """

    name: str
    X: np.ndarray
    y: np.ndarray
    feature_names: tuple[str, ...]
    target_names: tuple[str, ...] | None
    task: str
    source: str


def load(name: str, *, n_samples: int | None = None, seed: int = 0) -> Dataset:
    """Load one of scikit-learn's bundled datasets (:data:`DATASETS`).

    Parameters
    ----------
    name : str
        A key of :data:`DATASETS`.
    n_samples : int, optional
        Rows to return, drawn without replacement (in their original order) with ``seed``; all rows when
        None.
    seed : int, default 0
        Seed of the row draw.

    Returns
    -------
    Dataset
        The data and its provenance.

    Raises
    ------
    TypeError, ValueError
        For an unknown name, a size outside ``[1, rows]`` or a negative seed (the message names what is
        accepted).
    """
    check_params({"name": name, "seed": seed}, {"name": [Options(str, set(DATASETS))], "seed": [Interval(int, 0, None)]},
                 owner="icml25_shared.data.load")
    loader, task, rows = DATASETS[name]
    check_params({"n_samples": n_samples}, {"n_samples": [Interval(int, 1, rows), None]},
                 owner=f"icml25_shared.data.load({name!r})")
    try:
        from sklearn import datasets
    except ImportError:
        raise ImportError('the bundled datasets need scikit-learn: pip install "icml25-shared[sklearn]"') from None
    bunch = getattr(datasets, loader)()
    X, y = np.asarray(bunch.data, dtype=np.float64), np.asarray(bunch.target)
    if n_samples is not None and n_samples < rows:
        keep = np.sort(np.random.default_rng(seed).choice(rows, size=n_samples, replace=False))
        X, y = X[keep], y[keep]
    names = getattr(bunch, "feature_names", None)
    target_names = getattr(bunch, "target_names", None)
    return Dataset(
        name=name,
        X=X,
        y=y,
        feature_names=tuple(str(f) for f in (names if names is not None else range(X.shape[1]))),
        target_names=None if target_names is None else tuple(str(t) for t in target_names),
        task=task,
        source=f"scikit-learn sklearn.datasets.{loader} (shipped in the scikit-learn wheel)",
    )
