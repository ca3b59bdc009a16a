"""The synthetic label-and-covariate group benchmark of the research notes.

x ~ U[0, 1]^2, y ~ Bernoulli(0.3 + 0.4 x1), score S = |N(0, 1)| * (0.5 + x2 + y (1 + x1)): its scale depends
on a covariate and on the label, so marginal split CP over-covers some groups and under-covers others.
Groups (d = 6): everyone, {x1 > .5}, {x2 > .5}, {y = 1}, {x1 > .5 and y = 1}, and the fractional weight x2.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from kandinsky_cp import groups as G

__all__ = ["SyntheticScores", "synthetic_groups", "make_synthetic_scores"]


def synthetic_groups() -> G.Group:
    """The six groups of the benchmark as a Group on (X (n, 2), y (n,) in {0, 1})."""
    x1_high = G.fractional(lambda X, y: np.asarray(X)[:, 0] > 0.5, names="x1 > .5")
    x2_high = G.fractional(lambda X, y: np.asarray(X)[:, 1] > 0.5, names="x2 > .5")
    y1 = G.fractional(lambda X, y: np.asarray(y) == 1, names="y = 1", uses_label=True, label_edges=[0.5])
    x2_weight = G.fractional(lambda X, y: np.asarray(X)[:, 1], names="weight x2")
    return G.concat(G.intercept(), x1_high, x2_high, y1, G.intersect(x1_high, y1), x2_weight)


@dataclass(frozen=True)
class SyntheticScores:
    """X: (n, 2) covariates; y: (n,) labels in {0, 1}; scores: (n,) S(X, y); phi: (n, 6) group weights."""

    X: np.ndarray
    y: np.ndarray
    scores: np.ndarray
    phi: np.ndarray
    names: list[str]


def make_synthetic_scores(n: int, rng: np.random.Generator) -> SyntheticScores:
    """Draw n points of the benchmark."""
    X = rng.uniform(size=(n, 2))
    y = (rng.uniform(size=n) < 0.3 + 0.4 * X[:, 0]).astype(float)
    scores = np.abs(rng.normal(size=n)) * (0.5 + X[:, 1] + y * (1.0 + X[:, 0]))
    groups = synthetic_groups()
    return SyntheticScores(X=X, y=y, scores=scores, phi=groups(X, y), names=groups.names)
