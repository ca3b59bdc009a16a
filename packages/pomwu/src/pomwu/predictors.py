"""Online predictors of the state of nature (the context) from covariates.

Every predictor has ``predict(covariates, true_context) -> int`` (called before play) and
``update(covariates, true_context)`` (called after the round reveals the context).
``true_context`` is read by the oracles only; the learned predictors see covariates alone.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from icml25_shared.random import RandomStateLike, check_random_state
from icml25_shared.validation import Interval, check_param, check_params

__all__ = [
    "OracleContext",
    "NoisyOracle",
    "OnlineLogisticRegression",
    "SGDContextPredictor",
    "CovariateModel",
    "make_covariates",
]


def _check_context(z: int, n_contexts: int) -> int:
    if isinstance(z, bool) or not isinstance(z, (int, np.integer)) or not 0 <= z < n_contexts:
        raise ValueError(f"context {z!r} is outside the declared set {{0, ..., {n_contexts - 1}}}")
    return int(z)


def _check_n_contexts(n_contexts: int, owner: str) -> None:
    check_param("n_contexts", n_contexts, [Interval(int, 1, None)], owner=owner)


class OracleContext:
    """Perfect predictions: returns the true context.

    Parameters
    ----------
    n_contexts : int
        Number of contexts ``m``; contexts are ``0, ..., m - 1``.
    """

    def __init__(self, *, n_contexts: int) -> None:
        self.n_contexts = n_contexts

    def predict(self, covariates: np.ndarray | None, true_context: int) -> int:
        """Return ``true_context`` (checked against ``n_contexts``); ``covariates`` are ignored."""
        _check_n_contexts(self.n_contexts, "OracleContext")
        return _check_context(true_context, self.n_contexts)

    def update(self, covariates: np.ndarray | None, true_context: int) -> OracleContext:
        """Do nothing (nothing to learn); return ``self``."""
        return self


class NoisyOracle:
    """The true context with probability ``1 - error_rate``, otherwise a uniformly drawn *other* context.

    Parameters
    ----------
    n_contexts : int
        Number of contexts.
    error_rate : float, default 0.1
        Probability of a wrong prediction, in [0, 1].
    random_state : None, int or numpy Generator, default 0
        Source of the errors (scikit-learn semantics, :func:`icml25_shared.random.check_random_state`).
    """

    def __init__(
        self, *, n_contexts: int, error_rate: float = 0.1, random_state: RandomStateLike = 0
    ) -> None:
        self.n_contexts = n_contexts
        self.error_rate = error_rate
        self.random_state = random_state

    def predict(self, covariates: np.ndarray | None, true_context: int) -> int:
        """Return ``true_context`` or, with probability ``error_rate``, another context."""
        if not hasattr(self, "rng_"):
            check_params(
                {"n_contexts": self.n_contexts, "error_rate": self.error_rate, "random_state": self.random_state},
                {"n_contexts": [Interval(int, 1, None)], "error_rate": [Interval(float, 0, 1)],
                 "random_state": ["random_state"]},
                owner="NoisyOracle",
            )
            if self.n_contexts == 1 and self.error_rate > 0:
                raise ValueError("NoisyOracle: error_rate > 0 needs n_contexts >= 2 to err between; got n_contexts 1")
            self.rng_ = check_random_state(self.random_state)
        z = _check_context(true_context, self.n_contexts)
        if self.rng_.random() < self.error_rate:
            other = int(self.rng_.integers(self.n_contexts - 1))
            return other + (other >= z)
        return z

    def update(self, covariates: np.ndarray | None, true_context: int) -> NoisyOracle:
        """Do nothing (the error rate is fixed); return ``self``."""
        return self


class OnlineLogisticRegression:
    """Multinomial logistic regression fitted online by SGD on the cross-entropy (one step per round).

    The same model as scikit-learn's ``SGDClassifier(loss="log_loss").partial_fit`` up to the
    multinomial (softmax) link instead of one-vs-rest; about 20 µs a round.

    Parameters
    ----------
    n_contexts : int
        Number of classes.
    step_size : float
        SGD learning rate (constant, or divided by sqrt(t) when ``decay=True``).
    l2 : float
        L2 penalty on the weights (not on the intercept).
    decay : bool
        Use ``step_size / sqrt(t)``.
    """

    def __init__(self, *, n_contexts: int, step_size: float = 0.5, l2: float = 1e-4, decay: bool = True) -> None:
        self.n_contexts = n_contexts
        self.step_size = step_size
        self.l2 = l2
        self.decay = decay

    def _init(self, dim: int) -> None:
        check_params(
            {"n_contexts": self.n_contexts, "step_size": self.step_size, "l2": self.l2, "decay": self.decay},
            {"n_contexts": [Interval(int, 1, None)], "step_size": [Interval(float, 0, None, closed="neither")],
             "l2": [Interval(float, 0, None)], "decay": ["boolean"]},
            owner="OnlineLogisticRegression",
        )
        self.coef_ = np.zeros((self.n_contexts, dim))
        self.intercept_ = np.zeros(self.n_contexts)
        self.n_seen_ = 0

    def _x(self, covariates: np.ndarray | None) -> np.ndarray:
        if covariates is None:
            raise ValueError("OnlineLogisticRegression predicts from covariates; got None")
        x = np.asarray(covariates, dtype=np.float64).ravel()
        if not hasattr(self, "coef_"):
            self._init(x.size)
        elif x.size != self.coef_.shape[1]:
            raise ValueError(f"covariates have {x.size} features but the model was started with {self.coef_.shape[1]}")
        return x

    def predict_proba(self, covariates: np.ndarray | None) -> np.ndarray:
        """Class probabilities ``(n_contexts,)`` for one covariate vector."""
        x = self._x(covariates)
        s = self.coef_ @ x + self.intercept_
        s -= s.max()
        p = np.exp(s)
        return p / p.sum()

    def predict(self, covariates: np.ndarray | None, true_context: int | None = None) -> int:
        """Return the most probable context given ``covariates`` (``true_context`` is not read)."""
        return int(np.argmax(self.predict_proba(covariates)))

    def update(self, covariates: np.ndarray | None, true_context: int) -> OnlineLogisticRegression:
        """Take one SGD step on ``(covariates, true_context)``; return ``self``."""
        p = self.predict_proba(covariates)
        z = _check_context(true_context, self.n_contexts)
        x = np.asarray(covariates, dtype=np.float64).ravel()
        self.n_seen_ += 1
        lr = self.step_size / np.sqrt(self.n_seen_) if self.decay else self.step_size
        p[z] -= 1.0
        self.coef_ -= lr * (np.outer(p, x) + self.l2 * self.coef_)
        self.intercept_ -= lr * p
        return self


class SGDContextPredictor:
    """scikit-learn's ``SGDClassifier(loss="log_loss")`` trained by ``partial_fit`` one round at a time.

    One-vs-rest logistic regression; predicts context 0 until the first update. Slower than
    :class:`OnlineLogisticRegression` (about 0.5 ms a round) but the reference implementation.
    Extra keyword arguments go to ``SGDClassifier``.
    """

    def __init__(self, *, n_contexts: int, random_state: int | None = 0, **sgd_params) -> None:
        self.n_contexts = n_contexts
        self.random_state = random_state
        self.sgd_params = sgd_params

    def _model(self):
        if not hasattr(self, "model_"):
            from sklearn.linear_model import SGDClassifier

            _check_n_contexts(self.n_contexts, "SGDContextPredictor")
            params = {"loss": "log_loss", "random_state": self.random_state, **self.sgd_params}
            self.model_ = SGDClassifier(**params)
            self.fitted_ = False
        return self.model_

    def predict(self, covariates: np.ndarray | None, true_context: int | None = None) -> int:
        """Return the most probable context given ``covariates`` (``true_context`` is not read)."""
        model = self._model()
        if covariates is None:
            raise ValueError("SGDContextPredictor predicts from covariates; got None")
        if not self.fitted_:
            return 0
        return int(model.predict(np.asarray(covariates, dtype=np.float64).reshape(1, -1))[0])

    def update(self, covariates: np.ndarray | None, true_context: int) -> SGDContextPredictor:
        """Take one SGD step on ``(covariates, true_context)``; return ``self``."""
        model = self._model()
        z = _check_context(true_context, self.n_contexts)
        x = np.asarray(covariates, dtype=np.float64).reshape(1, -1)
        model.partial_fit(x, [z], classes=np.arange(self.n_contexts))
        self.fitted_ = True
        return self


@dataclass(frozen=True)
class CovariateModel:
    """Gaussian covariates ``X_t = means[z_t] + noise * N(0, I)``; ``means`` has shape (n_contexts, dim)."""

    means: np.ndarray
    noise: float

    def sample(self, contexts: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        """Covariates ``(T, dim)`` for the context sequence ``contexts`` ``(T,)``."""
        contexts = np.asarray(contexts)
        return self.means[contexts] + self.noise * rng.standard_normal((contexts.size, self.means.shape[1]))


def make_covariates(
    contexts: np.ndarray, *, n_contexts: int, dim: int = 5, noise: float = 0.5, rng: np.random.Generator
) -> tuple[np.ndarray, CovariateModel]:
    """Noisy covariates for a context sequence: class means drawn N(0, I), then ``CovariateModel.sample``.

    Returns ``(covariates (T, dim), model)``. Larger ``noise`` lowers the attainable accuracy.
    """
    _check_n_contexts(n_contexts, "make_covariates")
    if dim < 1 or noise < 0:
        raise ValueError(f"need dim >= 1 and noise >= 0, got dim={dim}, noise={noise}")
    model = CovariateModel(means=rng.standard_normal((n_contexts, dim)), noise=float(noise))
    return model.sample(contexts, rng), model
