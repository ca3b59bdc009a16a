"""Linear classifiers trained for (or evaluated in) the feature market, scikit-learn style.

All share one interface: ``fit(X, y, budgets=None)`` (``budgets=None``: every user's budget is 1,
uniform budgets), ``predict(X)`` (non-strategic),
``predict_after_market(X, budgets, price=None)`` (users trade first; ``price=None`` lets sellers
re-price for this classifier, the long term; a number fixes the price, the short term), and
``decision_function``. Labels are any two classes; ``classes_[1]`` (the larger label, scikit-learn's
positive class, e.g. +1 of {-1, +1} or 1 of {0, 1}) is the class users buy features to reach, and
predictions come back in the labels' own encoding.

- :class:`MarketAwareClassifier`: the paper's method; the market hinge loss with the
  differentiable price of the current weights, so training anticipates how sellers re-price, then
  model selection among its candidates by the exact post-market accuracy (sellers re-price for each).
- :class:`NaiveClassifier`: plain hinge loss, ignores the market.
- :class:`BudgetFeatureClassifier`: plain hinge loss with log-budget appended as a feature.
- :class:`MarketLineSearchClassifier`: naive weights, bias chosen by line search on post-market
  training accuracy at each candidate's own equilibrium price.
- :class:`FixedPriceStrategicClassifier`: the market hinge loss at a fixed price (by default the
  naive classifier's equilibrium price): strategic, but blind to re-pricing.
"""

from __future__ import annotations

import numbers
from typing import Any

import numpy as np
import torch
from icml25_shared.random import check_random_state, int_seed
from icml25_shared.validation import Interval, check_params
from sklearn.base import BaseEstimator, ClassifierMixin
from sklearn.utils.multiclass import check_classification_targets
from sklearn.utils.validation import check_array, check_is_fitted, check_X_y

from feature_markets.market import MarketOutcome, market_price_from_scores, simulate_from_scores, simulate_market
from feature_markets.soft import soft_market_price

__all__ = [
    "BudgetFeatureClassifier",
    "FixedPriceStrategicClassifier",
    "MarketAwareClassifier",
    "MarketLineSearchClassifier",
    "NaiveClassifier",
]


def check_market_data(X, y=None, budgets=None, *, owner: str = "feature_markets"):
    """Validate features, labels and budgets.

    Parameters
    ----------
    X : array-like of shape (m, d)
        Features; finite and non-negative (users can only buy increments).
    y : array-like of shape (m,), optional
        Labels of exactly two classes (validated when given).
    budgets : array-like of shape (m,), optional
        Budgets; finite and strictly positive (validated when given).
    owner : str, default "feature_markets"
        The estimator or function named in the error messages.

    Returns
    -------
    list of numpy.ndarray
        ``[X]`` followed by ``y`` and ``budgets`` when they were given.

    Raises
    ------
    ValueError
        On a shape mismatch, negative or non-finite features, labels with other than two classes, or
        non-positive budgets.
    """
    if y is not None:
        X, y = check_X_y(X, y, dtype=np.float64)
        check_classification_targets(y)
        classes = np.unique(y)
        if classes.size > 2:
            raise ValueError(
                f"Only binary classification is supported: {owner} needs labels of two classes, got {classes.size}"
            )
    else:
        X = check_array(X, dtype=np.float64)
    if np.any(X < 0):
        raise ValueError(
            f"Negative values in data passed to {owner}: features must be non-negative (users can only buy increments)"
        )
    out = [X]
    if y is not None:
        out.append(y)
    if budgets is not None:
        budgets = np.asarray(budgets, dtype=np.float64)
        if budgets.shape != (X.shape[0],):
            raise ValueError(f"budgets must have shape ({X.shape[0]},), one per user, got {budgets.shape}")
        if not np.all(np.isfinite(budgets)) or np.any(budgets <= 0):
            raise ValueError("budgets must be finite and strictly positive")
        out.append(budgets)
    return out


def _uniform_budgets(X, budgets):
    """``budgets``, or one unit of budget per user when it is None (uniform budgets)."""
    return np.ones(np.shape(X)[0]) if budgets is None else budgets



class _LinearMarketModel(ClassifierMixin, BaseEstimator):
    """Shared training loop: Adam on a hinge-type loss plus ``alpha ||w||^2``, minibatches, seeded."""

    def __init__(
        self,
        *,
        alpha: float = 1e-3,
        epochs: int = 200,
        batch_size: int = 256,
        lr: float = 0.05,
        random_state: int | None = 0,
    ):
        self.alpha = alpha
        self.epochs = epochs
        self.batch_size = batch_size
        self.lr = lr
        self.random_state = random_state

    # ---- scikit-learn tags: non-negative features, two classes
    def __sklearn_tags__(self):
        """Tags for scikit-learn >= 1.6: non-negative features only, binary classification."""
        tags = super().__sklearn_tags__()
        tags.input_tags.positive_only = True
        tags.classifier_tags.multi_class = False
        return tags

    def _more_tags(self):
        return {"requires_positive_X": True, "binary_only": True}

    # ---- hooks
    def _features(self, X: np.ndarray, budgets: np.ndarray) -> np.ndarray:
        return X

    def _boost(self, w, bias, Xb, bb):
        """Score increase each user in the batch can buy (0 for non-strategic training)."""
        return torch.zeros(Xb.shape[0], dtype=Xb.dtype)

    def _prepare(self, X, signs, budgets) -> None:
        """Called once before training (e.g. to fix a price)."""

    def _checkpoint_loss(self, features, signs, budgets, w, bias) -> float:
        """Full-data loss used to keep the best epoch; -inf keeps the last epoch (the default)."""
        return -np.inf

    def _initial(self, features, signs, budgets) -> tuple[np.ndarray, float]:
        """Starting point: the unit difference of class means, bias at the median score."""
        start = features[signs > 0].mean(0) - features[signs < 0].mean(0)
        w = start / max(float(np.linalg.norm(start)), 1e-12)
        return w, -float(np.median(features @ w))

    def _on_epoch(self, w: np.ndarray, bias: float) -> None:
        """Called with the start (epoch 0) and the weights after every epoch."""

    def _after_fit(self, X, signs, budgets) -> None:
        """Called once after training: record the price sellers set for this model (``price_``)."""
        self.price_ = self.equilibrium_price(X, budgets)

    # ---- sklearn API
    def _check_params(self) -> None:
        check_params(
            {name: getattr(self, name) for name in ("epochs", "batch_size", "alpha", "lr", "random_state")},
            {"epochs": [Interval(int, 1, None)], "batch_size": [Interval(int, 1, None)],
             "alpha": [Interval(float, 0, None)], "lr": [Interval(float, 0, None, closed="neither")],
             "random_state": ["random_state"]},
            owner=type(self).__name__,
        )

    def _validate_fit(self, X, y, budgets):
        if y is None:
            raise ValueError(f"{type(self).__name__} requires y to be passed, but the target y is None")
        X, y = check_market_data(X, y, owner=type(self).__name__)
        (budgets,) = check_market_data(X, budgets=_uniform_budgets(X, budgets))[1:]
        if np.unique(y).size < 2:
            raise ValueError(f"y must contain both classes: {type(self).__name__} can't train on one class")
        return X, y, budgets

    def fit(self, X, y, budgets=None):
        """Train the classifier.

        Parameters
        ----------
        X : array-like of shape (m, d)
            Non-negative features.
        y : array-like of shape (m,)
            Labels of two classes; ``classes_[1]`` is the class users buy features to reach.
        budgets : array-like of shape (m,), optional
            Strictly positive budgets, one per user. None (the default) gives every user a budget of 1
            (uniform budgets), which is what a scikit-learn pipeline that only passes ``X, y`` trains on.

        Returns
        -------
        self
            The fitted estimator (``coef_``, ``intercept_``, ``classes_``, ``price_`` set).
        """
        self._check_params()
        X, y, budgets = self._validate_fit(X, y, budgets)
        return self._fit(X, y, budgets)

    def _fit(self, X, y, budgets):
        self.classes_ = np.unique(y)
        signs = np.where(y == self.classes_[1], 1.0, -1.0)
        self.n_features_in_ = X.shape[1]
        self._prepare(X, signs, budgets)
        features = self._features(X, budgets)
        generator = torch.Generator().manual_seed(int_seed(self.random_state))
        Xt = torch.tensor(features, dtype=torch.float64)  # a copy: read-only inputs stay untouched
        yt = torch.as_tensor(signs, dtype=torch.float64)
        bt = torch.as_tensor(budgets, dtype=torch.float64)
        w0, bias0 = self._initial(features, signs, budgets)
        w = torch.as_tensor(w0, dtype=torch.float64).clone().requires_grad_(True)
        bias = torch.tensor(float(bias0), dtype=torch.float64, requires_grad=True)
        optimizer = torch.optim.Adam([w, bias], lr=self.lr)
        m = Xt.shape[0]
        best = (
            self._checkpoint_loss(features, signs, budgets, w0, float(bias0)),
            np.array(w0, dtype=float),
            float(bias0),
        )
        self._on_epoch(best[1], best[2])
        for _ in range(self.epochs):
            order = torch.randperm(m, generator=generator)
            for start_index in range(0, m, self.batch_size):
                rows = order[start_index : start_index + self.batch_size]
                Xb, yb, bb = Xt[rows], yt[rows], bt[rows]
                margin = yb * (Xb @ w + bias + self._boost(w, bias, Xb, bb))
                loss = torch.relu(1.0 - margin).mean() + self.alpha * (w @ w)
                optimizer.zero_grad()
                loss.backward()
                optimizer.step()
            w_now, bias_now = w.detach().numpy().copy(), float(bias.detach())
            self._on_epoch(w_now, bias_now)
            checkpoint = self._checkpoint_loss(features, signs, budgets, w_now, bias_now)
            if checkpoint <= best[0]:
                best = (checkpoint, w_now, bias_now)
        self.coef_, self.intercept_ = best[1], best[2]
        self._after_fit(X, signs, budgets)
        return self

    def _purchasable(self) -> np.ndarray:
        return self.coef_[: self.n_features_in_]

    def _scores(self, X: np.ndarray, budgets: np.ndarray | None) -> np.ndarray:
        features = self._features(X, _uniform_budgets(X, budgets))
        return features @ self.coef_ + self.intercept_

    def _check_X(self, X, budgets=None):
        check_is_fitted(self, "coef_")
        checked = check_market_data(X, budgets=budgets, owner=type(self).__name__)
        if checked[0].shape[1] != self.n_features_in_:
            raise ValueError(
                f"X has {checked[0].shape[1]} features, but {type(self).__name__} is expecting "
                f"{self.n_features_in_} features as input"
            )
        return checked

    def decision_function(self, X, budgets=None) -> np.ndarray:
        """Scores before the market.

        Parameters
        ----------
        X : array-like of shape (m, d)
            Non-negative features.
        budgets : array-like of shape (m,), optional
            Only used by budget-aware models (None: budgets of 1).

        Returns
        -------
        numpy.ndarray of shape (m,)
            ``w.x + bias``; positive means ``classes_[1]``.

        Raises
        ------
        sklearn.exceptions.NotFittedError
            Before :meth:`fit`.
        """
        (X,) = self._check_X(X)
        return self._scores(X, budgets)

    def _labels(self, signs: np.ndarray) -> np.ndarray:
        return np.where(signs > 0, self.classes_[1], self.classes_[0])

    def predict(self, X, budgets=None) -> np.ndarray:
        """Non-strategic predictions: users do not trade.

        Parameters
        ----------
        X : array-like of shape (m, d)
            Non-negative features.
        budgets : array-like of shape (m,), optional
            Only used by budget-aware models (None: budgets of 1).

        Returns
        -------
        numpy.ndarray of shape (m,)
            Labels from ``classes_``.
        """
        return self._labels(np.where(self.decision_function(X, budgets) >= 0, 1, -1))

    def market_outcome(self, X, budgets, *, price: float | None = None) -> MarketOutcome:
        """The market this classifier induces on ``(X, budgets)``.

        Parameters
        ----------
        X : array-like of shape (m, d)
            Non-negative features.
        budgets : array-like of shape (m,)
            Strictly positive budgets.
        price : float, optional
            A fixed price (the short term); None lets sellers re-price for this classifier (the long term).

        Returns
        -------
        MarketOutcome
            Features after purchases, predictions in {-1, +1}, costs; see :func:`simulate_market`.
        """
        X, budgets = self._check_X(X, budgets)
        return simulate_from_scores(self._scores(X, budgets), self._purchasable(), X, budgets, price=price)

    def predict_after_market(self, X, budgets, *, price: float | None = None) -> np.ndarray:
        """Predictions after users trade.

        Parameters
        ----------
        X : array-like of shape (m, d)
            Non-negative features.
        budgets : array-like of shape (m,)
            Strictly positive budgets.
        price : float, optional
            A fixed price; None uses the equilibrium price for this model on ``(X, budgets)``.

        Returns
        -------
        numpy.ndarray of shape (m,)
            Labels from ``classes_``.
        """
        return self._labels(self.market_outcome(X, budgets, price=price).predictions)

    def equilibrium_price(self, X, budgets) -> float:
        """The revenue-maximising price sellers set for this classifier.

        Parameters
        ----------
        X : array-like of shape (m, d)
            Non-negative features.
        budgets : array-like of shape (m,)
            Strictly positive budgets.

        Returns
        -------
        float
            The price per unit of distance to the boundary (0 when nobody is negative).
        """
        return self.market_outcome(X, budgets).market.price


class NaiveClassifier(_LinearMarketModel):
    """Linear hinge-loss classifier that ignores the market (evaluated strategically).

    Parameters
    ----------
    alpha : float, default 1e-3
        Weight of the ``||w||^2`` penalty.
    epochs : int, default 200
        Passes of Adam over the training users.
    batch_size : int, default 256
        Users per minibatch.
    lr : float, default 0.05
        Adam's learning rate.
    random_state : int, numpy Generator or None, default 0
        Seeds the minibatch order (an int is the torch seed; None or a generator draws one).

    Attributes
    ----------
    coef_ : numpy.ndarray of shape (d,)
        Weights.
    intercept_ : float
        Bias.
    classes_ : numpy.ndarray of shape (2,)
        The two labels; ``classes_[1]`` is positive.
    n_features_in_ : int
        Number of features seen in :meth:`fit`.
    price_ : float
        The equilibrium price sellers set for this classifier on the training users.
    """


class BudgetFeatureClassifier(_LinearMarketModel):
    """Hinge-loss classifier with ``log(budget)`` as an extra (non-purchasable) feature.

    Parameters
    ----------
    alpha : float, default 1e-3
        Weight of the ``||w||^2`` penalty.
    epochs : int, default 200
        Passes of Adam over the training users.
    batch_size : int, default 256
        Users per minibatch.
    lr : float, default 0.05
        Adam's learning rate.
    random_state : int, numpy Generator or None, default 0
        Seeds the minibatch order (an int is the torch seed; None or a generator draws one).

    Attributes
    ----------
    coef_ : numpy.ndarray of shape (d + 1,)
        Weights; the last one multiplies ``log(budget)``.
    intercept_ : float
        Bias.
    classes_ : numpy.ndarray of shape (2,)
        The two labels; ``classes_[1]`` is positive.
    n_features_in_ : int
        Number of features seen in :meth:`fit` (without the budget).
    price_ : float
        The equilibrium price on the training users.
    """

    def _features(self, X, budgets):
        return np.column_stack([X, np.log(budgets)])


class MarketLineSearchClassifier(_LinearMarketModel):
    """Naive weights with the bias chosen by post-market training accuracy.

    The bias is picked from ``bias_grid`` (added to the naive bias) to maximise the post-market
    training accuracy, each candidate at its own equilibrium price.

    Parameters
    ----------
    alpha : float, default 1e-3
        Weight of the ``||w||^2`` penalty.
    epochs : int, default 200
        Passes of Adam over the training users.
    batch_size : int, default 256
        Users per minibatch.
    lr : float, default 0.05
        Adam's learning rate.
    random_state : int, numpy Generator or None, default 0
        Seeds the minibatch order (an int is the torch seed; None or a generator draws one).
    bias_grid : array-like of float, optional
        Offsets tried (default ``linspace(-3, 3, 121)``).

    Attributes
    ----------
    coef_, intercept_, classes_, n_features_in_, price_
        As for :class:`NaiveClassifier`.
    line_search_accuracy_ : float
        Post-market training accuracy of the chosen bias.
    """

    def __init__(
        self,
        *,
        alpha: float = 1e-3,
        epochs: int = 200,
        batch_size: int = 256,
        lr: float = 0.05,
        random_state: int | None = 0,
        bias_grid=None,
    ):
        super().__init__(alpha=alpha, epochs=epochs, batch_size=batch_size, lr=lr, random_state=random_state)
        self.bias_grid = bias_grid

    def _after_fit(self, X, signs, budgets):
        grid = np.linspace(-3, 3, 121) if self.bias_grid is None else np.asarray(self.bias_grid, dtype=float)
        base = self.intercept_
        best = (-1.0, base)
        purchasable = np.any(self.coef_ > 0)
        for delta in grid:
            if purchasable:
                predictions = simulate_market(self.coef_, base + delta, X, budgets).predictions
            else:  # no positive weight: nobody can buy their way across
                predictions = np.where(X @ self.coef_ + base + delta >= 0, 1, -1)
            accuracy = float(np.mean(predictions == signs))
            if accuracy > best[0] + 1e-12:
                best = (accuracy, base + delta)
        self.intercept_ = float(best[1])
        self.line_search_accuracy_ = best[0]
        super()._after_fit(X, signs, budgets)


def _market_boost(price: torch.Tensor, w: torch.Tensor, budgets: torch.Tensor) -> torch.Tensor:
    """Score increase each user's budget buys at ``price``: distance ``b / price`` times ``||w||``."""
    return budgets / price.clamp_min(1e-12) * torch.linalg.vector_norm(w)


class FixedPriceStrategicClassifier(_LinearMarketModel):
    """Strategic training against a fixed price: anticipates purchases, not re-pricing.

    Parameters
    ----------
    alpha : float, default 1e-3
        Weight of the ``||w||^2`` penalty.
    epochs : int, default 200
        Passes of Adam over the training users.
    batch_size : int, default 256
        Users per minibatch.
    lr : float, default 0.05
        Adam's learning rate.
    random_state : int, numpy Generator or None, default 0
        Seeds the minibatch order (an int is the torch seed; None or a generator draws one).
    price : float, optional
        The price trained against. None (default): the naive classifier's equilibrium price on the
        training data, i.e. the market before this classifier is deployed.

    Attributes
    ----------
    coef_, intercept_, classes_, n_features_in_
        As for :class:`NaiveClassifier`.
    price_ : float
        The fixed price trained against.
    equilibrium_price_ : float
        The price sellers actually set for this classifier on the training users.
    """

    def __init__(
        self,
        *,
        alpha: float = 1e-3,
        epochs: int = 200,
        batch_size: int = 256,
        lr: float = 0.05,
        random_state: int | None = 0,
        price: float | None = None,
    ):
        super().__init__(alpha=alpha, epochs=epochs, batch_size=batch_size, lr=lr, random_state=random_state)
        self.price = price

    def _prepare(self, X, signs, budgets):
        if self.price is None:
            naive = NaiveClassifier(
                alpha=self.alpha,
                epochs=self.epochs,
                batch_size=self.batch_size,
                lr=self.lr,
                random_state=self.random_state,
            ).fit(X, signs, budgets)
            self.price_ = naive.price_
        else:
            if not np.isfinite(self.price) or self.price <= 0:
                raise ValueError(f"price must be a positive number or None, got {self.price!r}")
            self.price_ = float(self.price)

    def _after_fit(self, X, signs, budgets):
        # price_ stays the fixed price trained against; sellers' answer is recorded separately.
        self.equilibrium_price_ = self.equilibrium_price(X, budgets)

    def _boost(self, w, bias, Xb, bb):
        return _market_boost(torch.tensor(self.price_, dtype=Xb.dtype), w, bb)


class MarketAwareClassifier(_LinearMarketModel):
    """The paper's market-aware strategic classifier (MASC).

    Loss: ``mean max(0, 1 - y (w.x + bias + (b / p(w, bias)) ||w||)) + alpha ||w||^2`` where
    ``p(w, bias)`` is :func:`soft_market_price` on the minibatch (revenue normalised by its maximum,
    so ``tau_softmax`` is unit-free), and the gradient accounts for how sellers re-price when the
    classifier moves.

    Training has three steps:

    1. *Starts*: the naive and the fixed-price strategic weights, each with a grid of biases
       (``bias + ||w|| * linspace(-1.5, 1.5, 61)``). The price jumps as the threshold moves, so
       gradient steps from a cold start stall in poor basins.
    2. *Soft-price descent*: Adam on the market hinge loss from the start with the lowest market hinge
       loss at the exact price; every epoch's weights are kept.
    3. *Selection*: among all those candidates (both grids, the start, every epoch) keep the one with
       the highest exact long-term post-market accuracy on the selection users (sellers re-price for
       each candidate on them), ties broken by the exact-price market hinge loss. This is the official
       code's recipe of monitoring the hard post-market accuracy, applied as model selection.

    Parameters
    ----------
    alpha : float, default 1e-3
        Weight of the ``||w||^2`` penalty.
    epochs : int, default 200
        Passes of Adam over the training users.
    batch_size : int, default 256
        Users per minibatch.
    lr : float, default 0.05
        Adam's learning rate.
    random_state : int, numpy Generator or None, default 0
        Seeds the minibatch order (an int is the torch seed; None or a generator draws one).
    tau_sort : float, default 0.1
        SoftSort temperature of the soft price.
    tau_softmax : float, default 50.0
        Inverse temperature of the softmax over (normalised) revenue.
    validation_fraction : float, default 0.0
        0 selects on the training users themselves; a value in (0, 1) trains steps 1-2 on the rest and
        selects on a stratified held-out part of that size (drawn with ``random_state``).

    Attributes
    ----------
    coef_, intercept_, classes_, n_features_in_
        As for :class:`NaiveClassifier`.
    price_ : float
        The equilibrium price on all training users after fitting.
    selected_ : str
        Names the chosen candidate.
    selection_accuracy_ : float
        Its post-market accuracy on the selection users.

    Examples
    --------
    >>> from feature_markets import MarketAwareClassifier, make_market_data, market_report
    >>> data = make_market_data(300, inequality=2**10, label_correlation=0.5, feature_signal=0.0, random_state=0)
    >>> train, test = data.split(0.3, random_state=0)
    >>> model = MarketAwareClassifier(epochs=5).fit(train.X, train.y, budgets=train.budgets)
    >>> report = market_report(model, test.X, test.y, test.budgets)
    >>> bool(report.accuracy_long > 0.6)
    True
    """

    _bias_offsets = np.linspace(-1.5, 1.5, 61)

    def __init__(
        self,
        *,
        alpha: float = 1e-3,
        epochs: int = 200,
        batch_size: int = 256,
        lr: float = 0.05,
        random_state: int | None = 0,
        tau_sort: float = 0.1,
        tau_softmax: float = 50.0,
        validation_fraction: float = 0.0,
    ):
        super().__init__(alpha=alpha, epochs=epochs, batch_size=batch_size, lr=lr, random_state=random_state)
        self.tau_sort = tau_sort
        self.tau_softmax = tau_softmax
        self.validation_fraction = validation_fraction

    def fit(self, X, y, budgets=None):
        """Train MASC (see the class docstring for the three steps).

        Parameters
        ----------
        X : array-like of shape (m, d)
            Non-negative features.
        y : array-like of shape (m,)
            Labels of two classes; ``classes_[1]`` is the class users buy features to reach.
        budgets : array-like of shape (m,), optional
            Strictly positive budgets. None (the default) gives every user a budget of 1.

        Returns
        -------
        self
            The fitted estimator.
        """
        fraction = self.validation_fraction
        if isinstance(fraction, bool) or not isinstance(fraction, numbers.Real) or not 0 <= fraction < 1:
            raise ValueError(f"validation_fraction must be a number in [0, 1), got {fraction!r}")
        self._check_params()
        X, y, budgets = self._validate_fit(X, y, budgets)
        fit_rows, select_rows = self._split_rows(y, fraction)
        self._candidates: list[tuple[np.ndarray, float, str]] = []
        self._fit(X[fit_rows], y[fit_rows], budgets[fit_rows])
        self.n_features_in_ = X.shape[1]
        signs = np.where(y == self.classes_[1], 1.0, -1.0)
        self.selection_accuracy_, self.coef_, self.intercept_, self.selected_ = self._select(
            X[select_rows], signs[select_rows], budgets[select_rows]
        )
        del self._candidates
        self.price_ = self.equilibrium_price(X, budgets)
        return self

    def _select(self, Xs, ys, bs) -> tuple[float, np.ndarray, float, str]:
        """Return the best candidate on (Xs, ys, bs) as (accuracy, w, bias, name).

        Best: the highest exact post-market accuracy, ties broken by the exact-price market hinge loss.
        """
        best: tuple[tuple[float, Any], np.ndarray, float, str] | None = None
        for w, bias, name in self._candidates:
            scores = Xs @ w + bias
            if np.any(w > 0):
                predictions = simulate_from_scores(scores, w, Xs, bs).predictions
            else:  # no positive weight: nobody can buy their way across
                predictions = np.where(scores >= 0, 1, -1)
            accuracy = float(np.mean(predictions == ys))
            key = (-accuracy, self._checkpoint_loss(Xs, ys, bs, w, bias))
            if best is None or key < best[0]:
                best = (key, w, bias, name)
        if best is None:  # there is always at least one candidate
            raise RuntimeError("no candidate model to choose from")
        return -best[0][0], best[1], best[2], best[3]

    def _split_rows(self, y: np.ndarray, fraction: float) -> tuple[np.ndarray, np.ndarray]:
        everyone = np.arange(y.shape[0])
        if fraction == 0:
            return everyone, everyone
        rng = check_random_state(0 if self.random_state is None else self.random_state)
        parts = []
        for label in np.unique(y):
            rows = rng.permutation(np.flatnonzero(y == label))
            parts.append(rows[: int(round(fraction * rows.size))])
        held = np.sort(np.concatenate(parts))
        rest = np.setdiff1d(everyone, held)
        if held.size == 0 or np.unique(y[held]).size < 2 or np.unique(y[rest]).size < 2:
            raise ValueError(f"validation_fraction={fraction} leaves a part without both classes")
        return rest, held

    def _boost(self, w, bias, Xb, bb):
        price = soft_market_price(
            w, bias, Xb, bb, tau_sort=self.tau_sort, tau_softmax=self.tau_softmax, normalize_revenue=True
        )
        return _market_boost(price, w, bb)

    def _initial(self, features, signs, budgets):
        # Candidates: the naive weights and the fixed-price strategic weights (one step of the market's
        # response), each with a bias grid; descent starts from the lowest exact-price market hinge loss.
        settings = dict(
            alpha=self.alpha, epochs=self.epochs, batch_size=self.batch_size, lr=self.lr, random_state=self.random_state
        )
        best = (np.inf, None, 0.0)
        for name, cls in (("naive", NaiveClassifier), ("strategic", FixedPriceStrategicClassifier)):
            start = cls(**settings).fit(features, signs, budgets)
            w = start.coef_
            for offset in self._bias_offsets:
                bias = start.intercept_ + float(np.linalg.norm(w)) * offset
                self._candidates.append((w, float(bias), f"{name} weights, bias offset {offset:+.2f} ||w||"))
                loss = self._checkpoint_loss(features, signs, budgets, w, bias)
                if loss < best[0]:
                    best = (loss, w, float(bias))
        if best[1] is None:  # every start's loss is infinite (no purchasable weight): take the first
            best = (np.inf, self._candidates[0][0], self._candidates[0][1])
        self._epoch = 0
        return best[1], best[2]

    def _checkpoint_loss(self, features, signs, budgets, w, bias):
        """Market hinge loss on all given users at the exact equilibrium price (plus the penalty)."""
        norm = float(np.linalg.norm(w))
        scores = features @ w + bias
        price = market_price_from_scores(scores, norm, budgets).price if norm > 0 else 0.0
        boost = budgets / price * norm if price > 0 else np.full_like(budgets, np.inf)
        hinge = np.maximum(0.0, 1.0 - signs * (scores + boost))
        return float(np.mean(hinge) + self.alpha * norm**2)

    def _on_epoch(self, w, bias):
        self._candidates.append((w, bias, f"soft-price descent, epoch {self._epoch}"))
        self._epoch += 1
