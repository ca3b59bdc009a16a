"""Full-information multiplicative-weights learners, vectorised over many agents.

All four learners share one interface::

    x = learner.act(context)      # (n_agents, max_actions) mixed strategies
    learner.update(losses)        # (n_agents, max_actions) loss vectors observed after play

Agents may have different numbers of actions; strategies and losses are padded to
``max_actions`` columns and padded entries are ignored (strategies there are exactly 0).

* :class:`Hedge`: multiplicative weights (MWU), ignores the context.
* :class:`OptimisticHedge`: optimistic MWU (OMWU) of Syrgkanis et al. (2015), ignores the context.
* :class:`ContextualHedge`: one Hedge state per context (the cHedge baseline of Sessa et al., 2020).
* :class:`POMWU`: one optimistic-MWU state per *predicted* context (Capitaine et al., ICML 2025).

For a context-aware learner, ``act`` receives the context the agent believes in (a prediction).
``update`` files the observed loss under that same context by default (``file_under="prediction"``);
with ``file_under="truth"`` it files it under the true context, revealed after the round and passed
as ``update(losses, true_context=z)``. Which of the two the paper's Algorithm 1 does could not be
checked (see the README); the default follows the research notes' reconstruction.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
from icml25_shared.validation import Interval, Options, check_params

__all__ = ["POMWU", "ContextualHedge", "Hedge", "OptimisticHedge", "MultiplicativeWeights"]


class MultiplicativeWeights:
    """Shared engine: exponential weights over cumulative losses, per agent and per context.

    With cumulative loss ``L[z]`` and last loss ``m[z]`` filed under context ``z``, an agent in
    context ``z`` plays ``x ∝ exp(-step_size * (L[z] + optimism * m[z]))``.

    Parameters
    ----------
    n_actions : int or sequence of int
        Number of actions of every agent (int, with ``n_agents``) or of each agent (sequence).
    n_agents : int, optional
        Number of agents when ``n_actions`` is an int (default 1).
    n_contexts : int
        Size of the finite context set ``{0, ..., n_contexts - 1}``.
    step_size : float
        Learning rate ``eta > 0`` (losses are expected in [0, 1]).
    optimistic : bool
        Add the last loss seen in the same context as the optimistic prediction.
    contextual : bool
        Keep one state per context; otherwise every context shares state 0.
    file_under : {"prediction", "truth"}
        Which state receives a round's loss: the one played (the context given to ``act``), or the
        true context revealed after the round (``update(losses, true_context=z)``). The two agree
        whenever the prediction is right; no effect on non-contextual learners.
    """

    FILE_UNDER = ("prediction", "truth")

    def __init__(
        self,
        *,
        n_actions: int | Sequence[int],
        n_agents: int | None = None,
        n_contexts: int = 1,
        step_size: float = 0.1,
        optimistic: bool = False,
        contextual: bool = False,
        file_under: str = "prediction",
    ) -> None:
        self.n_actions = n_actions
        self.n_agents = n_agents
        self.n_contexts = n_contexts
        self.step_size = step_size
        self.optimistic = optimistic
        self.contextual = contextual
        self.file_under = file_under

    # -- validation and state ------------------------------------------------------------------
    def _validate(self) -> None:
        if isinstance(self.n_actions, (int, np.integer)) and not isinstance(self.n_actions, bool):
            n_agents = 1 if self.n_agents is None else self.n_agents
            if isinstance(n_agents, bool) or not isinstance(n_agents, (int, np.integer)) or n_agents < 1:
                raise ValueError(f"n_agents must be a positive int, got {self.n_agents!r}")
            counts = np.full(int(n_agents), int(self.n_actions))
        else:
            counts = np.asarray(self.n_actions)
            if counts.ndim != 1 or counts.size == 0 or not np.issubdtype(counts.dtype, np.integer):
                raise ValueError(
                    f"n_actions must be a positive int or a non-empty sequence of ints, got {self.n_actions!r}"
                )
            if self.n_agents is not None and self.n_agents != counts.size:
                raise ValueError(f"n_agents={self.n_agents} but n_actions lists {counts.size} agents")
        if np.any(counts < 1):
            raise ValueError(f"every agent needs at least one action, got counts {counts.tolist()}")
        check_params(
            {"n_contexts": self.n_contexts, "step_size": self.step_size, "file_under": self.file_under},
            {"n_contexts": [Interval(int, 1, None)], "step_size": [Interval(float, 0, math.inf, closed="neither")],
             "file_under": [Options(str, set(self.FILE_UNDER))]},
            owner=type(self).__name__,
        )
        self.n_actions_ = counts.astype(np.int64)

    def reset(self) -> MultiplicativeWeights:
        """Validate the hyperparameters and start from uniform play; returns self."""
        self._validate()
        n_states = int(self.n_contexts) if self.contextual else 1
        n, k = self.n_actions_.size, int(self.n_actions_.max())
        self.mask_ = np.arange(k)[None, :] < self.n_actions_[:, None]
        self._pad = np.where(self.mask_, 0.0, -np.inf)  # added to logits: padded actions get weight 0
        self.cum_loss_ = np.zeros((n_states, n, k))
        self.last_loss_ = np.zeros((n_states, n, k))
        self.rounds_ = 0
        self._state_idx: np.ndarray | None = None
        return self

    @property
    def shape(self) -> tuple[int, int]:
        """``(n_agents, max_actions)`` of strategies and losses."""
        self._ensure()
        return self.mask_.shape

    def _ensure(self) -> None:
        if not hasattr(self, "cum_loss_"):
            self.reset()

    def _contexts(self, context: int | np.ndarray | None) -> np.ndarray:
        n = self.mask_.shape[0]
        if context is None:
            if self.contextual and self.n_contexts > 1:
                raise ValueError("this learner is contextual: pass the (predicted) context to act()")
            z = np.zeros(n, dtype=np.int64)
        else:
            z = np.asarray(context)
            if not np.issubdtype(z.dtype, np.integer):
                raise ValueError(f"context must be an int or an int array of shape ({n},), got dtype {z.dtype}")
            if z.ndim == 0:
                z = np.full(n, int(z))
            elif z.shape != (n,):
                raise ValueError(f"context must be an int or an int array of shape ({n},), got shape {z.shape}")
            if np.any(z < 0) or np.any(z >= self.n_contexts):
                bad = z[(z < 0) | (z >= self.n_contexts)][0]
                raise ValueError(f"context {bad} is outside the declared set {{0, ..., {self.n_contexts - 1}}}")
        return z if self.contextual else np.zeros(n, dtype=np.int64)

    # -- the two calls ---------------------------------------------------------------------------
    def act(self, context: int | np.ndarray | None = None) -> np.ndarray:
        """Mixed strategies for the current round, shape ``(n_agents, max_actions)``.

        ``context`` is one int shared by all agents or an int array ``(n_agents,)`` (each agent's
        own prediction), checked against ``{0, ..., n_contexts - 1}``; non-contextual learners
        check it and then ignore it (give them the same ``n_contexts`` as the others).
        """
        self._ensure()
        s = self._contexts(context)
        rows = np.arange(s.size)
        score = self.cum_loss_[s, rows]
        if self.optimistic:
            score = score + self.last_loss_[s, rows]
        logits = score * -self.step_size
        logits += self._pad
        logits -= logits.max(axis=1, keepdims=True)
        w = np.exp(logits)
        self._state_idx = s
        return w / w.sum(axis=1, keepdims=True)

    def update(self, losses: np.ndarray, true_context: int | np.ndarray | None = None) -> MultiplicativeWeights:
        """File the loss vectors of the round just played.

        ``losses`` has shape ``(n_agents, max_actions)`` (padded entries are ignored); for a
        single agent a 1-D vector of length ``max_actions`` is accepted. They are filed under the
        context given to ``act`` (``file_under="prediction"``, where ``true_context`` is only
        checked) or under ``true_context`` (``file_under="truth"``, where it is required): an int or
        an int array ``(n_agents,)`` in ``{0, ..., n_contexts - 1}``.
        """
        self._ensure()
        if self._state_idx is None:
            raise RuntimeError("call act() before update(): the loss is filed under the context played")
        loss = np.asarray(losses, dtype=np.float64)
        n, k = self.mask_.shape
        if loss.ndim == 1 and n == 1:
            loss = loss[None, :]
        if loss.shape != (n, k):
            raise ValueError(f"losses must have shape ({n}, {k}) (n_agents, max_actions), got {np.shape(losses)}")
        loss = np.where(self.mask_, loss, 0.0)
        if not np.all(np.isfinite(loss)):
            raise ValueError("losses contain NaN or inf")
        if true_context is not None:
            truth = self._contexts(true_context)
        elif self.file_under == "truth" and self.contextual:
            raise ValueError(
                "file_under='truth' needs the context revealed after the round: update(losses, true_context=z)"
            )
        s = truth if self.file_under == "truth" and self.contextual else self._state_idx
        rows = np.arange(n)
        self.cum_loss_[s, rows] += loss
        self.last_loss_[s, rows] = loss
        self.rounds_ += 1
        self._state_idx = None
        return self


class Hedge(MultiplicativeWeights):
    """Multiplicative weights / Hedge: ``x_t ∝ exp(-eta * L_{t-1})``; ignores contexts."""

    def __init__(
        self,
        *,
        n_actions: int | Sequence[int],
        n_agents: int | None = None,
        n_contexts: int = 1,
        step_size: float = 0.1,
    ) -> None:
        super().__init__(
            n_actions=n_actions,
            n_agents=n_agents,
            n_contexts=n_contexts,
            step_size=step_size,
            optimistic=False,
            contextual=False,
        )


class OptimisticHedge(MultiplicativeWeights):
    """Optimistic MWU: ``x_t ∝ exp(-eta * (L_{t-1} + l_{t-1}))``; ignores contexts."""

    def __init__(
        self,
        *,
        n_actions: int | Sequence[int],
        n_agents: int | None = None,
        n_contexts: int = 1,
        step_size: float = 0.1,
    ) -> None:
        super().__init__(
            n_actions=n_actions,
            n_agents=n_agents,
            n_contexts=n_contexts,
            step_size=step_size,
            optimistic=True,
            contextual=False,
        )


class ContextualHedge(MultiplicativeWeights):
    """Hedge with one state per context: ``x_t ∝ exp(-eta * L^{z}_{t-1})`` for the context ``z`` given."""

    def __init__(
        self,
        *,
        n_actions: int | Sequence[int],
        n_agents: int | None = None,
        n_contexts: int = 1,
        step_size: float = 0.1,
        file_under: str = "prediction",
    ) -> None:
        super().__init__(
            n_actions=n_actions,
            n_agents=n_agents,
            n_contexts=n_contexts,
            step_size=step_size,
            optimistic=False,
            contextual=True,
            file_under=file_under,
        )


class POMWU(MultiplicativeWeights):
    """Optimistic MWU with predicted contexts (Capitaine et al., ICML 2025, Algorithm 1).

    Each agent keeps, for every context ``z``, the cumulative loss ``L^z`` and the last loss
    ``l^z`` filed under ``z``. With prediction ``ẑ_t`` it plays
    ``x_t ∝ exp(-eta * (L^{ẑ_t} + l^{ẑ_t}))`` and then adds the observed loss to state ``ẑ_t``
    (``file_under="prediction"``, default) or to the state of the true context ``z_t`` revealed after
    the round (``file_under="truth"``). With one context (or perfect predictions of a single
    context) it is exactly optimistic MWU.

    Parameters
    ----------
    n_actions : int or sequence of int
        Actions per agent: one int for ``n_agents`` identical agents, or one count per agent.
    n_agents : int, optional
        Number of agents when ``n_actions`` is an int (default 1).
    n_contexts : int, default 1
        Number of contexts ``m``; predictions are ints in ``{0, ..., m - 1}``.
    step_size : float, default 0.1
        The constant step size ``eta`` (positive).
    file_under : {"prediction", "truth"}, default "prediction"
        Which context's state receives a round's loss.

    Examples
    --------
    Two players of a 2x2 game with two contexts: ``act`` takes the predicted context and returns
    one mixed strategy per agent, ``update`` takes the full-information loss vectors.

    >>> import numpy as np
    >>> from pomwu import POMWU
    >>> learner = POMWU(n_actions=[2, 2], n_contexts=2, step_size=0.5)
    >>> learner.act(0)
    array([[0.5, 0.5],
           [0.5, 0.5]])
    >>> _ = learner.update(np.array([[1.0, 0.0], [0.0, 1.0]]))
    >>> learner.act(0).round(3)  # 0.5 * (cumulative + last loss) = 1 on the costly action
    array([[0.269, 0.731],
           [0.731, 0.269]])
    >>> learner.act(1)  # context 1 has seen nothing yet
    array([[0.5, 0.5],
           [0.5, 0.5]])
    """

    def __init__(
        self,
        *,
        n_actions: int | Sequence[int],
        n_agents: int | None = None,
        n_contexts: int = 1,
        step_size: float = 0.1,
        file_under: str = "prediction",
    ) -> None:
        super().__init__(
            n_actions=n_actions,
            n_agents=n_agents,
            n_contexts=n_contexts,
            step_size=step_size,
            optimistic=True,
            contextual=True,
            file_under=file_under,
        )
