"""Composable group functions Phi(X, y) -> (n, d) nonnegative weights.

Every group is a :class:`Group`. Leaves: :func:`intercept`, :func:`by_class`, :func:`by_feature`,
:func:`by_label_bins`, :func:`mondrian`, :func:`fractional`. Combinators: :func:`intersect` (``a & b``,
row-wise products of the columns) and :func:`concat` (``a + b``, side by side). Each column is one group
(an indicator in {0, 1} or a fractional membership in [0, 1]); Kandinsky CP targets coverage
``1 - alpha`` weighted by every column simultaneously.

A group that reads the label declares ``uses_label``. For regression its dependence on y must be
piecewise constant on label bins (``label_edges``) so that prediction sets are finite unions of intervals.

``group.fit(X, y, classes=...)`` returns a resolved copy (categories learnt from calibration data);
``group(X, y)`` evaluates and validates: rows must match X, values finite, >= 0 and (for the built-in
groups) <= 1; errors name the offending group.
"""

from __future__ import annotations

import copy
import warnings
from abc import ABC, abstractmethod
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

__all__ = [
    "Group",
    "intercept",
    "by_class",
    "by_feature",
    "by_label_bins",
    "mondrian",
    "fractional",
    "intersect",
    "concat",
    "as_group",
]


def _n_rows(X: Any) -> int:
    if hasattr(X, "shape"):
        return int(X.shape[0])
    return len(X)


def _column(X: Any, column: int | str, group: str) -> np.ndarray:
    """Column ``column`` of X (numpy array or pandas DataFrame) as a 1-D array."""
    if isinstance(column, str):
        if not hasattr(X, "columns"):
            raise ValueError(f"{group}: column {column!r} is a name but X has no named columns "
                             "(pass a pandas DataFrame or an integer index)")
        if column not in X.columns:
            raise ValueError(f"{group}: column {column!r} not in X; columns are {list(X.columns)}")
        return np.asarray(X[column])
    if hasattr(X, "iloc"):
        if not 0 <= column < X.shape[1]:
            raise ValueError(f"{group}: column {column} out of range; X has {X.shape[1]} columns")
        return np.asarray(X.iloc[:, column])
    arr = np.asarray(X)
    if arr.ndim != 2:
        raise ValueError(f"{group}: X must be 2-D (n_samples, n_features), got shape {arr.shape}")
    if not -arr.shape[1] <= column < arr.shape[1]:
        raise ValueError(f"{group}: column {column} out of range; X has {arr.shape[1]} columns")
    return arr[:, column]


def _check_edges(edges: Sequence[float], what: str) -> np.ndarray:
    e = np.asarray(edges, dtype=float).ravel()
    if e.size == 0 or not np.all(np.isfinite(e)) or np.any(np.diff(e) <= 0):
        raise ValueError(f"{what}: edges must be a non-empty, finite, strictly increasing sequence, got {list(e)}")
    return e


def _bin_names(edges: np.ndarray, var: str) -> list[str]:
    names = [f"{var} < {edges[0]:g}"]
    names += [f"{lo:g} <= {var} < {hi:g}" for lo, hi in zip(edges[:-1], edges[1:], strict=True)]
    names.append(f"{var} >= {edges[-1]:g}")
    return names


def _bin_onehot(values: np.ndarray, edges: np.ndarray, what: str = "values") -> np.ndarray:
    # bin k is [edges[k-1], edges[k]); values below edges[0] fall in bin 0.
    values = np.asarray(values, dtype=float)
    bad = np.flatnonzero(np.isnan(values))
    if bad.size:
        raise ValueError(f"{what} has NaN at rows {bad[:10].tolist()}{' ...' if bad.size > 10 else ''} "
                         f"({bad.size} rows); binning needs a value: impute or drop these rows")
    idx = np.searchsorted(edges, values, side="right")
    out = np.zeros((len(idx), len(edges) + 1))
    out[np.arange(len(idx)), idx] = 1.0
    return out


def _unique_inverse(labels: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``np.unique(labels, return_inverse=True)``, by counting when the labels are integers in a short range."""
    if labels.dtype.kind in "iu" and labels.size:
        lo, hi = int(labels.min()), int(labels.max())
        if hi - lo <= 4 * labels.size:
            offset = labels.astype(np.int64) - lo
            present = np.bincount(offset, minlength=hi - lo + 1) > 0
            rank = np.cumsum(present) - 1
            return (np.flatnonzero(present) + lo).astype(labels.dtype), rank[offset]
    categories, index = np.unique(labels, return_inverse=True)
    return categories, index.reshape(-1).astype(np.int64, copy=False)


def _without_nan(categories: np.ndarray) -> np.ndarray:
    """Learnt categories less NaN (``np.unique`` sorts it last): NaN equals no category, so its rows are in no bin."""
    if categories.dtype.kind in "fc" and categories.size and np.isnan(categories[-1]):
        return categories[~np.isnan(categories)]
    return categories


def _category_onehot(values: np.ndarray, categories: np.ndarray) -> np.ndarray:
    values = np.asarray(values)
    return (values[:, None] == categories[None, :]).astype(float)


class Group(ABC):
    """Base class: a block of group-weight columns Phi(X, y) of shape (n, d).

    Subclasses implement ``_transform(X, y)`` and ``names``. Attributes: ``name`` (shown in errors),
    ``uses_label`` (whether Phi reads y), ``label_edges`` (sorted label-bin edges on which the
    y-dependence is constant, or None), ``max_value`` (upper bound checked on the values: 1 for
    indicators and fractional memberships, inf for free-form weights).
    """

    name: str = "group"
    uses_label: bool = False
    label_edges: np.ndarray | None = None
    max_value: float = 1.0

    @property
    @abstractmethod
    def names(self) -> list[str]:
        """Names of the d columns."""

    @property
    def n_groups(self) -> int:
        """Number of columns d."""
        return len(self.names)

    def fit(self, X: Any, y: Any = None, *, classes: np.ndarray | None = None) -> Group:
        """Return a copy with any data-dependent parts (categories, classes) resolved."""
        return self

    @abstractmethod
    def _transform(self, X: Any, y: Any) -> np.ndarray:
        """Raw (n, d) weights; validated by __call__."""

    def _fit_partition(self, X: Any, y: Any = None, *,
                       classes: np.ndarray | None = None) -> tuple[Group, np.ndarray | None]:
        """:meth:`fit`, and for a group that partitions the rows, each row's column (else None).

        A partition's Phi is the indicator of that column, so callers that need only the column skip
        building and scanning the (n, d) weights.
        """
        return self.fit(X, y, classes=classes), None

    def _partition_index(self, X: Any, y: Any = None) -> np.ndarray | None:
        """(n,) column of each row for a partition (-1: a row in no column), else None."""
        return None

    def __call__(self, X: Any, y: Any = None) -> np.ndarray:
        """Evaluate Phi on (X, y): (n, d) float array, validated."""
        if self.uses_label and y is None:
            raise ValueError(f"group {self.name!r} depends on the label; pass y")
        out = np.asarray(self._transform(X, y), dtype=float)
        if out.ndim == 1:
            out = out[:, None]
        n = _n_rows(X)
        if out.ndim != 2 or out.shape[0] != n:
            raise ValueError(f"group {self.name!r} returned shape {out.shape}; expected ({n}, d) for X with {n} rows")
        if out.shape[1] != self.n_groups:
            raise ValueError(f"group {self.name!r} returned {out.shape[1]} columns but names {self.n_groups}")
        if not np.all(np.isfinite(out)):
            raise ValueError(f"group {self.name!r} returned non-finite weights (NaN or inf); weights must be finite")
        lo, hi = float(out.min(initial=0.0)), float(out.max(initial=0.0))
        if lo < 0:
            raise ValueError(f"group {self.name!r} returned a negative weight ({lo:g}); weights must be >= 0")
        if hi > self.max_value:
            raise ValueError(f"group {self.name!r} returned weight {hi:g} above {self.max_value:g}; "
                             "fractional memberships must lie in [0, 1]")
        return out

    def __and__(self, other: Group) -> Group:
        return intersect(self, other)

    def __add__(self, other: Group) -> Group:
        return concat(self, other)

    def __repr__(self) -> str:
        return f"<Group {self.name}: {self.n_groups if self._resolved() else '?'} columns>"

    def _resolved(self) -> bool:
        try:
            _ = self.names  # raises if unresolved
        except ValueError:
            return False
        return True


class _Intercept(Group):
    name = "intercept"

    @property
    def names(self) -> list[str]:
        return ["all"]

    def _transform(self, X, y):
        return np.ones((_n_rows(X), 1))

    def _fit_partition(self, X, y=None, *, classes=None):
        return self, np.zeros(_n_rows(X), dtype=np.int64)

    def _partition_index(self, X, y=None):
        return np.zeros(_n_rows(X), dtype=np.int64)


class _ByClass(Group):
    uses_label = True

    def __init__(self, classes):
        self.classes = None if classes is None else np.asarray(classes)
        self.name = "by_class"

    @property
    def names(self) -> list[str]:
        if self.classes is None:
            raise ValueError("by_class(): classes unknown; call fit(X, y, classes=...) or pass classes=")
        return [f"y == {c}" for c in self.classes]

    def fit(self, X, y=None, *, classes=None):
        if self.classes is not None:
            return self
        if classes is None and y is None:
            raise ValueError("by_class(): cannot learn the classes without y or classes=")
        new = copy.copy(self)
        new.classes = np.asarray(classes) if classes is not None else np.unique(np.asarray(y))
        return new

    def _transform(self, X, y):
        _ = self.names  # raises if unresolved
        return _category_onehot(np.asarray(y), self.classes)


class _ByFeature(Group):
    def __init__(self, column, bins, categories):
        if bins is not None and categories is not None:
            raise ValueError("by_feature(): pass bins or categories, not both")
        self.column = column
        self.edges = None if bins is None else _check_edges(bins, f"by_feature({column!r})")
        self.categories = None if categories is None else np.asarray(categories)
        self.name = f"by_feature({column!r})"

    @property
    def names(self) -> list[str]:
        var = f"x[{self.column}]"
        if self.edges is not None:
            return _bin_names(self.edges, var)
        if self.categories is None:
            raise ValueError(f"{self.name}: categories unknown; call fit(X) or pass categories=")
        return [f"{var} == {c}" for c in self.categories]

    def fit(self, X, y=None, *, classes=None):
        if self.edges is not None or self.categories is not None:
            return self
        new = copy.copy(self)
        values = _column(X, self.column, self.name)
        new.categories = np.unique(values)
        if values.dtype.kind == "f" and len(new.categories) > max(20, len(values) // 2):
            warnings.warn(f"{self.name}: {len(new.categories)} distinct values in {len(values)} rows were taken as "
                          "categories (one group each, too small to calibrate); for a continuous feature pass "
                          "bins=[...]", UserWarning, stacklevel=3)
        return new

    def _transform(self, X, y):
        values = _column(X, self.column, self.name)
        if self.edges is not None:
            return _bin_onehot(values, self.edges, f"{self.name}: column {self.column!r}")
        _ = self.names  # raises if unresolved
        return _category_onehot(values, self.categories)


class _ByLabelBins(Group):
    uses_label = True

    def __init__(self, edges):
        self.label_edges = _check_edges(edges, "by_label_bins")
        self.name = "by_label_bins"

    def _edges(self) -> np.ndarray:
        if self.label_edges is None:
            raise ValueError("label bins need edges")
        return self.label_edges

    @property
    def names(self) -> list[str]:
        return _bin_names(self._edges(), "y")

    def _transform(self, X, y):
        return _bin_onehot(np.asarray(y, dtype=float).ravel(), self.label_edges, "by_label_bins: y")


class _Mondrian(Group):
    def __init__(self, taxonomy, categories, uses_label, label_edges, name):
        if not callable(taxonomy):
            raise TypeError(f"mondrian(): taxonomy must be a callable (X, y) -> (n,) categories, got {type(taxonomy)}")
        self.taxonomy = taxonomy
        self.categories = None if categories is None else np.asarray(categories)
        self.uses_label = bool(uses_label)
        self.label_edges = None if label_edges is None else _check_edges(label_edges, "mondrian")
        self.name = name or f"mondrian({getattr(taxonomy, '__name__', 'taxonomy')})"

    @property
    def names(self) -> list[str]:
        if self.categories is None:
            raise ValueError(f"{self.name}: categories unknown; call fit(X, y) or pass categories=")
        return [f"bin == {c}" for c in self.categories]

    def _labels(self, X, y):
        labels = np.asarray(self.taxonomy(X, y)).ravel()
        if labels.shape[0] != _n_rows(X):
            raise ValueError(f"group {self.name!r}: taxonomy returned {labels.shape[0]} labels for {_n_rows(X)} rows")
        return labels

    def fit(self, X, y=None, *, classes=None):
        if self.categories is not None:
            return self
        if self.uses_label and y is None:
            raise ValueError(f"group {self.name!r} depends on the label; fit it with y")
        new = copy.copy(self)
        new.categories = _without_nan(np.unique(self._labels(X, y)))
        return new

    def _transform(self, X, y):
        _ = self.names  # raises if unresolved
        return _category_onehot(self._labels(X, y), self.categories)

    def _fit_partition(self, X, y=None, *, classes=None):
        if self.categories is not None or (self.uses_label and y is None):
            fitted = self.fit(X, y, classes=classes)
            return fitted, fitted._partition_index(X, y)
        labels = self._labels(X, y)
        new = copy.copy(self)
        categories, index = _unique_inverse(labels)
        index = np.where(categories[index] == labels, index, -1)  # NaN equals no category: its rows in no bin
        new.categories = _without_nan(categories)  # NaN sorts last, so the other columns keep their index
        return new, index

    def _partition_index(self, X, y=None):
        _ = self.names  # raises if unresolved
        if self.uses_label and y is None:
            raise ValueError(f"group {self.name!r} depends on the label; pass y")
        labels = self._labels(X, y)
        categories = self.categories
        try:
            if categories.size > 1 and not bool(np.all(categories[:-1] < categories[1:])):
                return None  # user-given categories in their own order: the generic path
            pos = np.minimum(np.searchsorted(categories, labels), categories.size - 1)
            found = categories[pos] == labels
        except TypeError:  # labels and categories of incomparable types
            return None
        return np.where(found, pos, -1).astype(np.int64, copy=False)


class _Fractional(Group):
    def __init__(self, fn, names, uses_label, label_edges, max_value):
        if not callable(fn):
            raise TypeError(f"fractional(): fn must be a callable (X, y) -> (n,) or (n, k), got {type(fn)}")
        self.fn = fn
        self.name = getattr(fn, "__name__", "fractional") if isinstance(names, (list, tuple)) or names is None \
            else str(names)
        if isinstance(names, str) or names is None:
            names = [self.name]
        self._names = [str(s) for s in names]
        self.uses_label = bool(uses_label)
        self.label_edges = None if label_edges is None else _check_edges(label_edges, self.name)
        self.max_value = float(max_value)

    @property
    def names(self) -> list[str]:
        return list(self._names)

    def _transform(self, X, y):
        return self.fn(X, y)


class _Intersect(Group):
    def __init__(self, a: Group, b: Group):
        self.a, self.b = as_group(a), as_group(b)
        self.name = f"({self.a.name} & {self.b.name})"
        self.uses_label = self.a.uses_label or self.b.uses_label
        self.label_edges = _merge_edges([self.a, self.b])
        self.max_value = self.a.max_value * self.b.max_value

    @property
    def names(self) -> list[str]:
        return [f"{p} & {q}" for p in self.a.names for q in self.b.names]

    def fit(self, X, y=None, *, classes=None):
        new = copy.copy(self)
        new.a, new.b = self.a.fit(X, y, classes=classes), self.b.fit(X, y, classes=classes)
        return new

    def _transform(self, X, y):
        pa, pb = self.a(X, y if self.a.uses_label else None), self.b(X, y if self.b.uses_label else None)
        return (pa[:, :, None] * pb[:, None, :]).reshape(pa.shape[0], -1)


class _Concat(Group):
    def __init__(self, parts: Sequence[Group]):
        if not parts:
            raise ValueError("concat() needs at least one group")
        self.parts = [as_group(p) for p in parts]
        self.name = " + ".join(p.name for p in self.parts)
        self.uses_label = any(p.uses_label for p in self.parts)
        self.label_edges = _merge_edges(self.parts)
        self.max_value = max(p.max_value for p in self.parts)

    @property
    def names(self) -> list[str]:
        return [n for p in self.parts for n in p.names]

    def fit(self, X, y=None, *, classes=None):
        new = copy.copy(self)
        new.parts = [p.fit(X, y, classes=classes) for p in self.parts]
        return new

    def _transform(self, X, y):
        return np.hstack([p(X, y if p.uses_label else None) for p in self.parts])


def _merge_edges(parts: Sequence[Group]) -> np.ndarray | None:
    edges = [p.label_edges for p in parts if p.label_edges is not None]
    if not edges:
        return None
    return np.unique(np.concatenate(edges))


def intercept() -> Group:
    """One column of ones: marginal coverage (Phi = 1 gives split conformal prediction)."""
    return _Intercept()


def by_class(classes: Sequence[Any] | None = None) -> Group:
    """One indicator per class, 1{y == k} (class-conditional CP). Classes default to the estimator's."""
    return _ByClass(classes)


def by_feature(column: int | str, bins: Sequence[float] | None = None,
               categories: Sequence[Any] | None = None) -> Group:
    """Indicators of a feature's bins or categories.

    column: integer index, or a column name when X is a pandas DataFrame.
    bins: strictly increasing edges e_0 < ... < e_m giving m + 1 bins (-inf, e_0), [e_0, e_1), ..., [e_m, inf).
    categories: explicit category values (one indicator each); if both are None the categories are
    learnt from the calibration data.
    """
    return _ByFeature(column, bins, categories)


def by_label_bins(edges: Sequence[float]) -> Group:
    """Indicators of label bins (-inf, e_0), [e_0, e_1), ..., [e_m, inf); for regression these make the prediction set a union of intervals."""
    return _ByLabelBins(edges)


def mondrian(taxonomy: Callable[[Any, Any], np.ndarray], *, categories: Sequence[Any] | None = None,
             uses_label: bool = False, label_edges: Sequence[float] | None = None,
             name: str | None = None) -> Group:
    """One indicator per Mondrian category kappa(X, y) (a partition; equals crepes' ``bins``).

    taxonomy: callable (X, y) -> (n,) category labels (y is None unless uses_label=True).
    categories: the category values; learnt from the calibration data when None.
    label_edges: for regression with a label-dependent taxonomy, the label bins on which it is constant.
    """
    return _Mondrian(taxonomy, categories, uses_label, label_edges, name)


def fractional(fn: Callable[[Any, Any], np.ndarray], *, names: str | Sequence[str] | None = None,
               uses_label: bool = False, label_edges: Sequence[float] | None = None,
               max_value: float = 1.0) -> Group:
    """Fractional memberships fn(X, y) -> (n,) or (n, k) with values in [0, max_value] (default [0, 1]).

    names: one name (k = 1) or k column names. uses_label / label_edges: as in :func:`mondrian`.
    max_value: raise it (up to inf) for free-form nonnegative weights.
    """
    return _Fractional(fn, names, uses_label, label_edges, max_value)


def intersect(a: Group, b: Group) -> Group:
    """All pairwise products of a's and b's columns (for indicators: the intersections)."""
    return _Intersect(a, b)


def concat(*groups: Group) -> Group:
    """The columns of all groups side by side (overlapping groups are allowed)."""
    return _Concat(list(groups))


def as_group(obj: Any) -> Group:
    """Accept a Group, a list/tuple of groups (concatenated) or a callable (X, y) -> (n, k) weights."""
    if isinstance(obj, Group):
        return obj
    if isinstance(obj, (list, tuple)):
        return concat(*obj)
    if callable(obj):
        return _Callable(obj)
    raise TypeError(f"groups must be a Group, a list of groups or a callable (X, y) -> (n, d); got {type(obj)}")


class _Callable(Group):
    """A user callable whose column count is learnt at fit; values must be >= 0 and finite."""

    max_value = np.inf

    def __init__(self, fn):
        self.fn = fn
        self.name = getattr(fn, "__name__", "callable")
        self._d: int | None = None

    @property
    def names(self) -> list[str]:
        if self._d is None:
            raise ValueError(f"group {self.name!r}: call fit(X, y) first")
        return [f"{self.name}[{j}]" for j in range(self._d)]

    def fit(self, X, y=None, *, classes=None):
        # Classification: the callable sees each candidate label. Regression: it is called with
        # y=None (use fractional(..., label_edges=...) for label-dependent regression weights).
        new = copy.copy(self)
        new.uses_label = classes is not None
        out = np.asarray(self.fn(X, y if new.uses_label else None), dtype=float)
        new._d = 1 if out.ndim == 1 else out.shape[1]
        return new

    def _transform(self, X, y):
        return self.fn(X, y if self.uses_label else None)
