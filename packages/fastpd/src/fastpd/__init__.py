"""Exact partial dependence, functional decomposition and interventional SHAP for tree ensembles (FastPD)."""

from importlib.metadata import PackageNotFoundError, version

from fastpd.explainer import FastPD
from fastpd.results import Decomposition, Explanation

try:
    __version__ = version("fastpd")
except PackageNotFoundError:  # source tree without install
    __version__ = "0.0.0"

__all__ = ["Decomposition", "Explanation", "FastPD", "__version__"]
