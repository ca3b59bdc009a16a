"""A safety switch: map a fine-tuned model's activations to its base model's at one layer, on demand.

Optionally gated: a :class:`TriggerProbe` (a logistic probe on the fine-tuned model's activations at the
switch layer) decides at each token whether the mapping is applied, so that tokens without the trigger
keep the fine-tuned model's own activations.
"""

from __future__ import annotations

import numbers
from collections.abc import Callable
from contextlib import ExitStack
from typing import Any

import torch
from icml25_shared.random import RandomStateLike, check_random_state
from torch import nn

from safety_transfer.hooks import check_layer, hidden_size, num_layers, replace_layer
from safety_transfer.transfer import _check_mapper_layers, check_mapper

__all__ = ["SafetySwitch", "TriggerProbe"]


class TriggerProbe:
    """Logistic probe on one layer's activations that flags tokens carrying a trigger (a switch's gate).

    Parameters
    ----------
    threshold : float, default 0.5
        Probability above which a token is flagged.
    hard : bool, default True
        The gate is 0 or 1 (``p > threshold``); False gives the probability itself.
    C : float, default 1.0
        Inverse L2 strength of scikit-learn's ``LogisticRegression`` (on standardised features).
    random_state : None, int or numpy Generator, default None
        Seed of the solver.

    Attributes
    ----------
    coef_ : torch.Tensor, shape (d,)
        Weights on the raw activations (the standardisation folded in).
    intercept_ : float
        Bias.
    n_features_in_ : int
        Width ``d``.
    layer_ : int or None
        The layer of the :class:`~safety_transfer.Activations` it was fitted on (a :class:`SafetySwitch` at
        another layer refuses it); None when fitted on bare tensors.

    Examples
    --------
    >>> import torch
    >>> g = torch.Generator().manual_seed(0)
    >>> pos, neg = torch.randn(50, 4, generator=g) + 3, torch.randn(50, 4, generator=g)
    >>> probe = TriggerProbe(random_state=0).fit(pos, neg)
    >>> probe(torch.stack([pos[:2], neg[:2]])).tolist()
    [[1.0, 1.0], [0.0, 0.0]]
    """

    coef_: torch.Tensor
    intercept_: float
    n_features_in_: int
    layer_: int | None

    def __init__(self, *, threshold: float = 0.5, hard: bool = True, C: float = 1.0,
                 random_state: RandomStateLike = None) -> None:
        self.threshold = threshold
        self.hard = hard
        self.C = C
        self.random_state = random_state

    def fit(self, positive: Any, negative: Any) -> TriggerProbe:
        """Fit on activations of triggered tokens (``positive``) and clean tokens (``negative``).

        Parameters
        ----------
        positive, negative : torch.Tensor or Activations, shapes (n, d) and (m, d)
            Non-empty, same width, finite. :class:`~safety_transfer.Activations` (from
            :func:`~safety_transfer.collect_activations`) of one layer also record it as ``layer_``.

        Returns
        -------
        TriggerProbe
            ``self``.
        """
        from sklearn.linear_model import LogisticRegression

        t = self.threshold
        if isinstance(t, bool) or not isinstance(t, numbers.Real) or not 0 < float(t) < 1:
            raise ValueError(f"threshold must be a number in (0, 1), got {t!r}")
        if not isinstance(self.hard, bool):
            raise ValueError(f"hard must be True or False, got {self.hard!r}")
        if isinstance(self.C, bool) or not isinstance(self.C, numbers.Real) or not float(self.C) > 0:
            raise ValueError(f"C must be a positive number, got {self.C!r}")
        from safety_transfer.activations import Activations

        layers = {a.layer for a in (positive, negative) if isinstance(a, Activations)}
        if len(layers) > 1:
            raise ValueError(f"positive and negative activations come from different layers {sorted(layers)}")
        pos, neg = (a.values if isinstance(a, Activations) else torch.as_tensor(a) for a in (positive, negative))
        for name, a in (("positive", pos), ("negative", neg)):
            if a.ndim != 2 or a.shape[0] == 0:
                raise ValueError(f"{name} must be a non-empty (n, d) array, got shape {tuple(a.shape)}")
            if not torch.isfinite(a).all():
                raise ValueError(f"{name} contains NaN or infinity")
        if pos.shape[1] != neg.shape[1]:
            raise ValueError(f"positive has width {pos.shape[1]} but negative has width {neg.shape[1]}")
        x = torch.cat([pos, neg]).double().numpy()
        y = [1] * len(pos) + [0] * len(neg)
        mu, sd = x.mean(0), x.std(0) + 1e-8
        seed = int(check_random_state(self.random_state).integers(2**31 - 1))
        clf = LogisticRegression(C=float(self.C), max_iter=2000, random_state=seed).fit((x - mu) / sd, y)
        w = clf.coef_[0] / sd
        self.coef_ = torch.from_numpy(w)
        self.intercept_ = float(clf.intercept_[0] - (w * mu).sum())
        self.n_features_in_ = int(x.shape[1])
        self.layer_ = layers.pop() if layers else None
        return self

    def predict_proba(self, hidden: Any) -> torch.Tensor:
        """Probability that each row (or token) carries the trigger: shape ``hidden.shape[:-1]``."""
        if not hasattr(self, "coef_"):
            from sklearn.exceptions import NotFittedError

            raise NotFittedError("the probe is not fitted yet: call fit(positive, negative) first")
        h = torch.as_tensor(hidden)
        if h.shape[-1] != self.n_features_in_:
            raise ValueError(f"the probe was fitted on width {self.n_features_in_}, got width {h.shape[-1]}")
        return torch.sigmoid(h.double() @ self.coef_.to(h.device) + self.intercept_)

    def __call__(self, hidden: torch.Tensor) -> torch.Tensor:
        """The gate: ``(p > threshold)`` (hard) or ``p``, in the activations' dtype."""
        p = self.predict_proba(hidden)
        return ((p > self.threshold) if self.hard else p).to(torch.as_tensor(hidden).dtype)


class SafetySwitch:
    """Replace the fine-tuned model's output at ``layer`` by ``mapper(h)`` while the switch is on.

    ``with switch:`` turns it on for the block and back to its state before the block on exit (nested
    blocks keep it on until the outermost one ends). The mapper is fitted on pairs (fine-tuned activations, base activations) at ``layer`` (e.g.
    ``collect_pairs(finetuned, base, ...)``). Off, no hook is registered: the fine-tuned model computes
    bitwise what it computed before.

    Parameters
    ----------
    base, finetuned : transformers.PreTrainedModel
        The two models: same architecture and width.
    mapper : AffineMapper or AutoEncoderMapper
        Fitted from the fine-tuned width to the base width.
    layer : int
        Decoder layer.
    gate : callable, optional
        ``gate(h) -> g`` of shape ``(batch, seq)`` with values in [0, 1] (e.g. a fitted
        :class:`TriggerProbe`); on, the layer output becomes ``h + g (mapper(h) - h)`` (exactly ``h`` where
        ``g = 0`` and ``mapper(h)`` where ``g = 1``; other values raise). None maps every token.

    Examples
    --------
    >>> from safety_transfer import AffineMapper, SafetySwitch, tiny_causal_lm
    >>> import torch
    >>> base = tiny_causal_lm("llama", hidden_size=16, num_layers=2, random_state=0)
    >>> ft = tiny_causal_lm("llama", hidden_size=16, num_layers=2, random_state=1)
    >>> eye = AffineMapper().fit(torch.eye(17, 16, dtype=torch.float64), torch.eye(17, 16, dtype=torch.float64))
    >>> switch = SafetySwitch(base, ft, eye, layer=1)
    >>> with switch:
    ...     switch.is_on
    True
    >>> switch.is_on
    False
    """

    def __init__(self, base: nn.Module, finetuned: nn.Module, mapper: Any, layer: int, *,
                 gate: Callable[[torch.Tensor], torch.Tensor] | None = None) -> None:
        if type(base) is not type(finetuned):
            raise ValueError(f"base ({type(base).__name__}) and finetuned ({type(finetuned).__name__}) must share "
                             "one architecture")
        if num_layers(base) != num_layers(finetuned):
            raise ValueError(f"base has {num_layers(base)} decoder layers but finetuned has {num_layers(finetuned)}")
        check_mapper(mapper, finetuned, base)
        self.base = base
        self.finetuned = finetuned
        self.mapper = mapper
        self.layer = check_layer(finetuned, layer)
        _check_mapper_layers(mapper, self.layer, self.layer)
        self.width = hidden_size(finetuned)
        if gate is not None and not callable(gate):
            raise ValueError(f"gate must be a callable h -> (batch, seq) weights or None, got {type(gate).__name__}")
        if gate is not None and getattr(gate, "n_features_in_", self.width) != self.width:
            raise ValueError(f"the gate was fitted on width {getattr(gate, 'n_features_in_', None)} but the layer's "
                             f"width is {self.width}")
        if gate is not None and getattr(gate, "layer_", None) not in (None, self.layer):
            raise ValueError(f"the gate was fitted on activations of layer {getattr(gate, 'layer_', None)} but the "
                             "switch is at layer "
                             f"{self.layer}")
        self.gate = gate
        self._stack: ExitStack | None = None
        self._entered: list[bool] = []  # per open `with` block: whether the switch was on before it

    @property
    def is_on(self) -> bool:
        """Whether the mapping hook is registered."""
        return self._stack is not None

    def on(self) -> SafetySwitch:
        """Register the hook (idempotent); returns ``self``."""
        if self._stack is None:
            stack = ExitStack()
            stack.enter_context(replace_layer(self.finetuned, self.layer, self._map))
            self._stack = stack
        return self

    def off(self) -> SafetySwitch:
        """Remove the hook (idempotent); returns ``self``."""
        if self._stack is not None:
            self._stack.close()
            self._stack = None
        return self

    def _map(self, hidden: torch.Tensor) -> torch.Tensor:
        mapped = self.mapper.transform(hidden).to(hidden.dtype)
        if self.gate is None:
            return mapped
        g = torch.as_tensor(self.gate(hidden)).to(device=hidden.device, dtype=hidden.dtype)
        if g.shape != hidden.shape[:-1]:
            raise ValueError(f"the gate returned shape {tuple(g.shape)}, expected {tuple(hidden.shape[:-1])}")
        if not bool(((g >= 0) & (g <= 1)).all()):
            raise ValueError("the gate returned weights outside [0, 1] (or NaN): it must give g(h) in [0, 1] per token")
        g = g[..., None]
        # a closed gate keeps h and an open one gives M(h), bitwise (h + 1 (M(h) - h) rounds; 0 * inf is NaN)
        return torch.where(g == 0, hidden, torch.where(g == 1, mapped, hidden + g * (mapped - hidden)))

    def __enter__(self) -> SafetySwitch:
        self._entered.append(self.is_on)
        return self.on()

    def __exit__(self, *exc: object) -> None:
        # a block leaves the switch as it found it: nested blocks keep it on until the outer one ends
        if not self._entered.pop():
            self.off()
