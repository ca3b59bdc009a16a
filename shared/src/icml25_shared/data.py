"""Offline datasets behind one loader: ``load(name, *, n_samples=None, seed=0, **options)``.

Three kinds of source, none of which touches the network:

- ``bundled``: datasets that scikit-learn ships inside its wheel (needs ``icml25-shared[sklearn]``);
- ``synthetic``: seeded generators written here with numpy;
- ``file``: small CSV files a package ships, registered with :func:`register_csv` and their provenance.

Every loader returns a :class:`Dataset`. Packages add their own sets with :func:`register`.
"""

from __future__ import annotations

import csv
import numbers
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

__all__ = [
    "Dataset",
    "DatasetInfo",
    "available",
    "describe",
    "load",
    "register",
    "register_csv",
    "read_csv",
]

TASKS = ("regression", "binary", "multiclass", "timeseries")
KINDS = ("bundled", "synthetic", "file")


@dataclass(frozen=True)
class Dataset:
    """A loaded dataset.

    ``X`` has shape (n, d) and dtype float64; ``y`` has shape (n,) (float for regression and time
    series, int labels for classification). ``source`` and ``license`` record provenance.
    """

    name: str
    X: np.ndarray
    y: np.ndarray
    feature_names: tuple[str, ...]
    task: str
    description: str
    source: str
    license: str
    target_names: tuple[str, ...] | None = None
    extras: dict[str, Any] = field(default_factory=dict)

    @property
    def n_samples(self) -> int:
        """Number of rows of ``X``."""
        return int(self.X.shape[0])

    @property
    def n_features(self) -> int:
        """Number of columns of ``X``."""
        return int(self.X.shape[1])

    def split(self, test_size: float = 0.25, *, seed: int = 0) -> tuple[Dataset, Dataset]:
        """Random train/test split (seeded permutation), keeping every other field."""
        if not 0.0 < test_size < 1.0:
            raise ValueError(f"test_size must be in (0, 1), got {test_size!r}")
        order = np.random.default_rng(_check_seed(seed)).permutation(self.n_samples)
        n_test = max(1, int(round(test_size * self.n_samples)))
        return self._take(order[n_test:], "train"), self._take(order[:n_test], "test")

    def _take(self, rows: np.ndarray, suffix: str) -> Dataset:
        return Dataset(
            name=f"{self.name}[{suffix}]",
            X=self.X[rows],
            y=self.y[rows],
            feature_names=self.feature_names,
            task=self.task,
            description=self.description,
            source=self.source,
            license=self.license,
            target_names=self.target_names,
            extras=dict(self.extras),
        )


@dataclass(frozen=True)
class DatasetInfo:
    """What the registry knows about a dataset before loading it."""

    name: str
    kind: str
    task: str
    description: str
    source: str
    license: str
    max_samples: int | None
    options: tuple[str, ...]


Loader = Callable[..., tuple[np.ndarray, np.ndarray, tuple[str, ...], tuple[str, ...] | None]]
_REGISTRY: dict[str, tuple[DatasetInfo, Loader]] = {}


def register(
    name: str,
    *,
    kind: str,
    task: str,
    description: str,
    source: str,
    license: str,
    max_samples: int | None = None,
    options: tuple[str, ...] = (),
) -> Callable[[Loader], Loader]:
    """Decorator adding a loader ``fn(n_samples, rng, **options) -> (X, y, feature_names, target_names)``.

    ``max_samples`` bounds ``n_samples`` for bundled and file sets; ``options`` names the keyword
    options the loader accepts (anything else is rejected by :func:`load`).
    """
    if kind not in KINDS:
        raise ValueError(f"kind must be one of {KINDS}, got {kind!r}")
    if task not in TASKS:
        raise ValueError(f"task must be one of {TASKS}, got {task!r}")

    def decorate(fn: Loader) -> Loader:
        if name in _REGISTRY:
            raise ValueError(f"dataset {name!r} is already registered")
        info = DatasetInfo(name, kind, task, description, source, license, max_samples, tuple(options))
        _REGISTRY[name] = (info, fn)
        return fn

    return decorate


def available(kind: str | None = None) -> list[str]:
    """Names of the registered datasets, optionally of one kind, sorted."""
    if kind is not None and kind not in KINDS:
        raise ValueError(f"kind must be one of {KINDS} or None, got {kind!r}")
    return sorted(n for n, (info, _) in _REGISTRY.items() if kind is None or info.kind == kind)


def describe(name: str) -> DatasetInfo:
    """Registry entry for ``name`` (raises the same error as :func:`load` for unknown names)."""
    return _lookup(name)[0]


def load(name: str, *, n_samples: int | None = None, seed: int | None = 0, **options: Any) -> Dataset:
    """Load dataset ``name`` offline.

    ``n_samples``: rows to return (all rows of a bundled/file set when None; the generator default
    for synthetic sets); bundled/file sets subsample rows without replacement with ``seed``.
    ``seed``: int (or None for 0). Raises ValueError/TypeError naming the accepted values.
    """
    info, fn = _lookup(name)
    seed = _check_seed(seed)
    if n_samples is not None:
        if isinstance(n_samples, bool) or not isinstance(n_samples, numbers.Integral):
            raise TypeError(f"n_samples must be a positive int or None, got {type(n_samples).__name__}")
        if n_samples <= 0:
            raise ValueError(f"n_samples must be a positive int or None, got {n_samples}")
        if info.max_samples is not None and n_samples > info.max_samples:
            raise ValueError(
                f"dataset {name!r} has {info.max_samples} rows; n_samples must be in [1, {info.max_samples}] "
                f"or None, got {n_samples}"
            )
    unknown = sorted(set(options) - set(info.options))
    if unknown:
        accepted = ", ".join(info.options) or "none"
        raise TypeError(f"dataset {name!r} got unknown options {unknown}; accepted options: {accepted}")
    rng = np.random.default_rng(seed)
    X, y, feature_names, target_names = fn(n_samples, rng, **options)
    X = np.asarray(X, dtype=np.float64)
    if X.ndim == 1:
        X = X[:, None]
    y = np.asarray(y)
    if info.kind != "synthetic" and n_samples is not None and n_samples < X.shape[0]:
        rows = np.sort(rng.choice(X.shape[0], size=n_samples, replace=False))
        X, y = X[rows], y[rows]
    return Dataset(
        name=name,
        X=X,
        y=y,
        feature_names=tuple(feature_names),
        task=info.task,
        description=info.description,
        source=info.source,
        license=info.license,
        target_names=None if target_names is None else tuple(target_names),
    )


def read_csv(path: str | Path, *, target: str) -> tuple[np.ndarray, np.ndarray, tuple[str, ...]]:
    """Read a numeric CSV with a header row; return (X, y, feature_names) with ``target`` as y."""
    path = Path(path)
    with path.open(newline="") as handle:
        reader = csv.reader(handle)
        header = next(reader, None)
        if header is None:
            raise ValueError(f"{path} is empty")
        rows = [row for row in reader if row]
    if target not in header:
        raise ValueError(f"{path} has no column {target!r}; columns: {header}")
    try:
        table = np.array(rows, dtype=np.float64)
    except ValueError as err:
        raise ValueError(f"{path} has a non-numeric cell: {err}") from None
    j = header.index(target)
    features = tuple(h for i, h in enumerate(header) if i != j)
    return np.delete(table, j, axis=1), table[:, j], features


def register_csv(
    name: str,
    path: str | Path,
    *,
    target: str,
    task: str,
    description: str,
    source: str,
    license: str,
) -> None:
    """Register a small CSV file that a package ships (provenance goes in its DATA.md too)."""
    path = Path(path)
    with path.open() as handle:
        max_samples = max(sum(1 for line in handle if line.strip()) - 1, 0)

    @register(name, kind="file", task=task, description=description, source=source, license=license,
              max_samples=max_samples)
    def _load(n_samples: int | None, rng: np.random.Generator):
        X, y, features = read_csv(path, target=target)
        return X, y, features, None


def _lookup(name: str) -> tuple[DatasetInfo, Loader]:
    if not isinstance(name, str):
        raise TypeError(f"dataset name must be a str, got {type(name).__name__}; available: {available()}")
    if name not in _REGISTRY:
        raise ValueError(f"unknown dataset {name!r}; available: {', '.join(available())}")
    return _REGISTRY[name]


def _check_seed(seed: Any) -> int:
    if seed is None:
        return 0
    if isinstance(seed, bool) or not isinstance(seed, numbers.Integral):
        raise TypeError(f"seed must be an int or None, got {type(seed).__name__}")
    if seed < 0:
        raise ValueError(f"seed must be a non-negative int or None, got {seed}")
    return int(seed)


# ----------------------------------------------------------------------------------- bundled sets
def _sklearn_loader(loader_name: str) -> Loader:
    def load_bundled(n_samples: int | None, rng: np.random.Generator):
        try:
            from sklearn import datasets
        except ImportError:  # pragma: no cover - exercised only without the extra
            raise ImportError(
                "bundled datasets need scikit-learn: pip install 'icml25-shared[sklearn]'"
            ) from None
        bunch = getattr(datasets, loader_name)()
        target_names = getattr(bunch, "target_names", None)
        names = [str(f) for f in getattr(bunch, "feature_names", range(bunch.data.shape[1]))]
        return bunch.data, bunch.target, names, None if target_names is None else [str(t) for t in target_names]

    return load_bundled


_SKLEARN_SETS = {
    # name: (loader, task, rows, description)
    "diabetes": ("load_diabetes", "regression", 442, "Diabetes progression after one year, 10 baseline variables."),
    "iris": ("load_iris", "multiclass", 150, "Fisher's iris flowers, 4 measurements, 3 species."),
    "wine": ("load_wine", "multiclass", 178, "Wine recognition, 13 chemical measurements, 3 cultivars."),
    "breast_cancer": ("load_breast_cancer", "binary", 569, "Wisconsin diagnostic breast cancer, 30 features."),
    "digits": ("load_digits", "multiclass", 1797, "8x8 handwritten digits, 64 pixel intensities, 10 classes."),
}
for _name, (_loader, _task, _rows, _desc) in _SKLEARN_SETS.items():
    register(
        _name,
        kind="bundled",
        task=_task,
        description=_desc,
        source=f"scikit-learn sklearn.datasets.{_loader} (shipped in the scikit-learn wheel)",
        license="BSD-3-Clause (scikit-learn); see the scikit-learn dataset docs for the original source",
        max_samples=_rows,
    )(_sklearn_loader(_loader))


# --------------------------------------------------------------------------------- synthetic sets
_SYNTHETIC = dict(kind="synthetic", source="generated by icml25_shared.data", license="CC0-1.0")


@register("friedman1", task="regression", options=("n_features", "noise"),
          description="Friedman #1: y = 10 sin(pi x1 x2) + 20 (x3 - 0.5)^2 + 10 x4 + 5 x5 + noise, x ~ U[0,1]^d.",
          **_SYNTHETIC)
def _friedman1(n_samples, rng, n_features: int = 10, noise: float = 1.0):
    n = 1000 if n_samples is None else n_samples
    if n_features < 5:
        raise ValueError(f"friedman1 needs n_features >= 5, got {n_features}")
    X = rng.uniform(size=(n, n_features))
    y = (10 * np.sin(np.pi * X[:, 0] * X[:, 1]) + 20 * (X[:, 2] - 0.5) ** 2 + 10 * X[:, 3] + 5 * X[:, 4]
         + noise * rng.standard_normal(n))
    return X, y, [f"x{i}" for i in range(n_features)], None


@register("gaussian-linear", task="regression", options=("n_features", "noise", "correlation"),
          description="y = X beta + noise with X ~ N(0, Sigma), Sigma_ij = correlation^|i-j|, beta ~ N(0, I/d).",
          **_SYNTHETIC)
def _gaussian_linear(n_samples, rng, n_features: int = 20, noise: float = 0.5, correlation: float = 0.0):
    n = 500 if n_samples is None else n_samples
    if not -1.0 < correlation < 1.0:
        raise ValueError(f"correlation must be in (-1, 1), got {correlation}")
    idx = np.arange(n_features)
    cov = correlation ** np.abs(idx[:, None] - idx[None, :])
    X = rng.standard_normal((n, n_features)) @ np.linalg.cholesky(cov).T
    beta = rng.standard_normal(n_features) / np.sqrt(n_features)
    y = X @ beta + noise * rng.standard_normal(n)
    return X, y, [f"x{i}" for i in range(n_features)], None


@register("gaussian-mixture", task="multiclass", options=("n_features", "n_classes", "separation"),
          description="Balanced Gaussian classes with unit covariance and means on a sphere of radius separation.",
          **_SYNTHETIC)
def _gaussian_mixture(n_samples, rng, n_features: int = 2, n_classes: int = 2, separation: float = 2.0):
    n = 600 if n_samples is None else n_samples
    if n_classes < 2:
        raise ValueError(f"gaussian-mixture needs n_classes >= 2, got {n_classes}")
    means = rng.standard_normal((n_classes, n_features))
    means *= separation / np.linalg.norm(means, axis=1, keepdims=True)
    y = np.arange(n) % n_classes
    rng.shuffle(y)
    X = means[y] + rng.standard_normal((n, n_features))
    return X, y.astype(np.int64), [f"x{i}" for i in range(n_features)], [f"class{k}" for k in range(n_classes)]


@register("ar1", task="timeseries", options=("n_features", "phi", "noise"),
          description="Rows are consecutive times: x_t = phi x_{t-1} + sqrt(1-phi^2) e_t (stationary AR(1) per "
                      "feature, unit variance), y_t = x_t beta + noise.",
          **_SYNTHETIC)
def _ar1(n_samples, rng, n_features: int = 10, phi: float = 0.8, noise: float = 0.5):
    n = 500 if n_samples is None else n_samples
    if not -1.0 < phi < 1.0:
        raise ValueError(f"phi must be in (-1, 1) for a stationary AR(1), got {phi}")
    X = np.empty((n, n_features))
    X[0] = rng.standard_normal(n_features)
    shocks = rng.standard_normal((n, n_features)) * np.sqrt(1 - phi**2)
    for t in range(1, n):
        X[t] = phi * X[t - 1] + shocks[t]
    beta = rng.standard_normal(n_features) / np.sqrt(n_features)
    y = X @ beta + noise * rng.standard_normal(n)
    return X, y, [f"x{i}" for i in range(n_features)], None
