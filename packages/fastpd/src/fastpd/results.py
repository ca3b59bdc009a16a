"""Typed results of :class:`fastpd.FastPD` queries."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class Decomposition:
    """Functional decomposition f(x) = intercept + sum over S of m_S(x_S) (Hiabu et al., 2023).

    Attributes
    ----------
    intercept : float or ndarray of shape (K,)
        m_empty, the mean margin over the background.
    components : dict of tuple of int to ndarray
        ``{sorted feature-index tuple S: m_S at the rows, (n,) or (n, K)}``. Only subsets that occur
        on some leaf path are present (all others are identically 0).
    feature_names : list of str or None
        Names of the model's features, when known.
    max_order : int
        The largest |S| that was computed; components of higher order were skipped.
    n_rows : int or None
        Number of rows explained (what :meth:`total` returns for a model without splits).
    """

    intercept: float | np.ndarray
    components: dict[tuple[int, ...], np.ndarray]
    feature_names: list[str] | None
    max_order: int
    n_rows: int | None = None

    def total(self) -> np.ndarray:
        """Sum the intercept and all components.

        Returns
        -------
        ndarray of shape (n,) or (n, K)
            The model margin when nothing was truncated.
        """
        comps = list(self.components.values())
        if not comps:
            if self.n_rows is None:
                raise ValueError("the decomposition has no components to sum")
            intercept = np.asarray(self.intercept, dtype=float)
            return np.broadcast_to(intercept, (self.n_rows, *intercept.shape)).copy()
        return self.intercept + np.sum(comps, axis=0)

    def of_order(self, order: int) -> dict[tuple[int, ...], np.ndarray]:
        """Components with exactly ``order`` features.

        Parameters
        ----------
        order : int
            The number of features |S|.

        Returns
        -------
        dict of tuple of int to ndarray
            The matching components.
        """
        return {s: v for s, v in self.components.items() if len(s) == order}

    def importance(self) -> dict[tuple[int, ...], float]:
        """Mean absolute value of each component over the rows (summed over outputs).

        Returns
        -------
        dict of tuple of int to float
            Largest first.
        """
        imp = {s: float(np.abs(v).mean(axis=0).sum()) for s, v in self.components.items()}
        return dict(sorted(imp.items(), key=lambda kv: -kv[1]))

    def name(self, subset: tuple[int, ...]) -> str:
        """Readable label of a subset, using feature names when known.

        Parameters
        ----------
        subset : tuple of int
            Feature indices.

        Returns
        -------
        str
            For example ``"bmi x s5"``.
        """
        if self.feature_names is None:
            return " x ".join(f"x{j}" for j in subset)
        return " x ".join(self.feature_names[j] for j in subset)


@dataclass(frozen=True)
class Explanation:
    """Everything :meth:`fastpd.FastPD.explain` computes for the same rows in one pass.

    Attributes
    ----------
    prediction : ndarray of shape (n,) or (n, K)
        Model margin at the rows (log-odds for boosted classifiers).
    intercept : float or ndarray of shape (K,)
        Mean margin over the background.
    shap_values : ndarray of shape (n, d) or (n, d, K)
        Rows sum to ``prediction - intercept``.
    shap_interaction_values : ndarray of shape (n, d, d) or (n, d, d, K)
        Summing over the last feature axis gives ``shap_values``.
    decomposition : Decomposition
        The components up to the requested order.
    """

    prediction: np.ndarray
    intercept: float | np.ndarray
    shap_values: np.ndarray
    shap_interaction_values: np.ndarray
    decomposition: Decomposition
