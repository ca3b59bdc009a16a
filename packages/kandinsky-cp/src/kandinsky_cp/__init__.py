"""Kandinsky conformal prediction: coverage over overlapping, fractional, covariate-and-label groups."""

from importlib.metadata import PackageNotFoundError, version

from kandinsky_cp import groups, metrics
from kandinsky_cp.core import GroupQuantileFit, IntervalUnion, KandinskyCP, group_quantile_regression
from kandinsky_cp.scores import ClassificationScore, RegressionScore

try:
    __version__ = version("kandinsky-cp")
except PackageNotFoundError:  # source tree without install
    __version__ = "0.0.0"

__all__ = [
    "__version__",
    "KandinskyCP",
    "GroupQuantileFit",
    "IntervalUnion",
    "group_quantile_regression",
    "RegressionScore",
    "ClassificationScore",
    "groups",
    "metrics",
]
