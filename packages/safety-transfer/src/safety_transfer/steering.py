"""Steering vectors computed on one model: difference in means, PCA, prompt steering, refusal direction.

Contrastive activations are read at each prompt's last token after a decoder layer (the
``steering-vectors`` library's defaults for ``train_steering_vector``).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import torch
from torch import nn

from safety_transfer.activations import Activations, collect_activations
from safety_transfer.hooks import _boolean, _check_alpha, add_vector, check_layer

__all__ = ["SteeringVector", "SweepResult", "diff_in_means", "pca_direction", "steering_vector", "sweep"]

METHODS = ("mean", "pca")


def _pair(positive: Any, negative: Any, paired: bool) -> tuple[torch.Tensor, torch.Tensor]:
    _boolean("paired", paired)
    pos, neg = torch.as_tensor(positive), torch.as_tensor(negative)
    for name, t in (("positive", pos), ("negative", neg)):
        if t.ndim != 2 or t.shape[0] == 0:
            raise ValueError(f"{name} activations must be a non-empty (n, d) array, got shape {tuple(t.shape)}")
        if not t.is_floating_point():
            raise ValueError(f"{name} activations must be floating point, got dtype {t.dtype}")
    if pos.shape[1] != neg.shape[1]:
        raise ValueError(f"positive has width {pos.shape[1]} but negative has width {neg.shape[1]}")
    if paired and pos.shape[0] != neg.shape[0]:
        raise ValueError(f"paired=True needs as many positive as negative rows, got {pos.shape[0]} and "
                         f"{neg.shape[0]}; pass paired=False for unpaired sets")
    return pos, neg


def diff_in_means(positive: Any, negative: Any, *, paired: bool = True) -> torch.Tensor:
    """Difference in means of two activation sets.

    Parameters
    ----------
    positive, negative : torch.Tensor, shape (n, d) and (m, d)
        Activations of the two sides.
    paired : bool, default True
        ``mean(positive - negative)`` over aligned rows (``n == m``), or ``mean(positive) -
        mean(negative)`` (any ``n``, ``m``).

    Returns
    -------
    torch.Tensor, shape (d,)
        The vector, in the inputs' dtype.
    """
    pos, neg = _pair(positive, negative, paired)
    return (pos - neg).mean(dim=0) if paired else pos.mean(dim=0) - neg.mean(dim=0)


def pca_direction(positive: Any, negative: Any) -> torch.Tensor:
    """First principal direction of the paired differences, of unit norm, signed to agree with them.

    The differences and their negatives are stacked (so the data are centred by construction) and the
    first left singular vector of their transpose is returned, flipped so that its mean projection on
    the differences is positive.

    Parameters
    ----------
    positive, negative : torch.Tensor, shape (n, d)
        Paired activations.

    Returns
    -------
    torch.Tensor, shape (d,)
        Unit vector, in the inputs' dtype (float16 / bfloat16 inputs are solved in float32).
    """
    pos, neg = _pair(positive, negative, True)
    deltas = pos - neg
    if deltas.dtype in (torch.float16, torch.bfloat16):  # no half-precision SVD on CPU: solve in float32
        return pca_direction(pos.float(), neg.float()).to(deltas.dtype)
    u = torch.linalg.svd(torch.cat([deltas, -deltas]).T, full_matrices=False).U[:, 0]
    return torch.sign(torch.mean(deltas @ u)) * u


@dataclass(frozen=True)
class SteeringVector:
    """A steering vector of one model at one layer.

    Attributes
    ----------
    vector : torch.Tensor, shape (d,)
        The direction to add (scaled by ``alpha`` when applied).
    layer : int
        Decoder layer whose output it is added to.
    method : str
        ``"mean"`` or ``"pca"``.
    n_pairs : int
        Contrastive prompts used.
    """

    vector: torch.Tensor
    layer: int
    method: str
    n_pairs: int

    def apply(self, model: nn.Module, *, alpha: float = 1.0, tokens: slice | None = None) -> Any:
        """Context manager adding ``alpha * vector`` at the layer (see :func:`safety_transfer.hooks.add_vector`).

        Parameters
        ----------
        model : transformers.PreTrainedModel
            The model (the vector's width must equal its hidden size).
        alpha : float, default 1.0
            Finite multiplier.
        tokens : slice or None, default None
            Positions steered (None: all).

        Returns
        -------
        contextlib.AbstractContextManager
            The hook, removed on exit.
        """
        return add_vector(model, self.layer, self.vector, alpha=alpha, tokens=tokens)


def _last(model: nn.Module, tokenizer: Any, texts: Sequence[str], layer: int, batch_size: int,
          special: bool) -> torch.Tensor:
    acts = collect_activations(model, tokenizer, texts, layer, positions="last", batch_size=batch_size,
                               add_special_tokens=special)
    assert isinstance(acts, Activations)
    return acts.values


def steering_vector(model: nn.Module, tokenizer: Any, positive: Sequence[str], negative: Sequence[str], layer: int,
                    *, method: str = "mean", paired: bool = True, batch_size: int = 8,
                    add_special_tokens: bool = True) -> SteeringVector:
    """A steering vector from contrastive prompts, read at each prompt's last token.

    Prompt steering (trigger minus clean), the refusal direction (harmful minus harmless, Arditi et al.)
    and contrastive-activation steering are all this function with the two prompt sets.

    Parameters
    ----------
    model : transformers.PreTrainedModel
        A supported causal LM.
    tokenizer : transformers tokenizer
        With a pad token.
    positive, negative : sequence of str
        The two prompt sets (aligned when ``paired``).
    layer : int
        Decoder layer.
    method : {"mean", "pca"}, default "mean"
        :func:`diff_in_means` or :func:`pca_direction` (PCA needs ``paired=True``).
    paired : bool, default True
        Whether the prompt sets are aligned pairs.
    batch_size : int, default 8
        Prompts per forward pass.
    add_special_tokens : bool, default True
        Encode the prompts with the tokenizer's special tokens (a Llama or Gemma tokenizer's BOS), as
        ``steering_vectors.train_steering_vector`` does.

    Returns
    -------
    SteeringVector
        The vector and its provenance.

    Raises
    ------
    ValueError
        For an empty prompt set, unequal paired sets, an unknown method or an out-of-range layer.
    """
    if method not in METHODS:
        raise ValueError(f"method must be one of {METHODS}, got {method!r}")
    if method == "pca" and not paired:
        raise ValueError("method='pca' needs paired prompts (paired=True)")
    layer = check_layer(model, layer)
    for name, texts in (("positive", positive), ("negative", negative)):
        if len(texts) == 0:
            raise ValueError(f"the {name} prompt set is empty")
    if _boolean("paired", paired) and len(positive) != len(negative):
        raise ValueError(f"paired=True needs as many positive as negative prompts, got {len(positive)} and "
                         f"{len(negative)}")
    special = _boolean("add_special_tokens", add_special_tokens)
    pos = _last(model, tokenizer, positive, layer, batch_size, special)
    neg = _last(model, tokenizer, negative, layer, batch_size, special)
    vec = diff_in_means(pos, neg, paired=paired) if method == "mean" else pca_direction(pos, neg)
    return SteeringVector(vector=vec, layer=layer, method=method, n_pairs=min(len(positive), len(negative)))


@dataclass(frozen=True)
class SweepResult:
    """Scores of a steering vector over layers and strengths.

    Attributes
    ----------
    scores : dict of (int, float) to float
        ``metric`` at each ``(layer, alpha)``.
    best_layer, best_alpha : int, float
        The pair with the lowest score.
    """

    scores: dict[tuple[int, float], float]
    best_layer: int
    best_alpha: float


def sweep(model: nn.Module, vectors: dict[int, torch.Tensor], alphas: Sequence[float],
          metric: Callable[[nn.Module], float]) -> SweepResult:
    """Apply each layer's vector at each strength and score the steered model (lower is better).

    Parameters
    ----------
    model : transformers.PreTrainedModel
        The model steered.
    vectors : dict of int to torch.Tensor
        One vector per layer (e.g. ``steering_vector(...).vector`` at each layer).
    alphas : sequence of float
        Strengths tried.
    metric : callable
        ``metric(model) -> float`` evaluated while the vector is applied (e.g. a trigger rate).

    Returns
    -------
    SweepResult
        Every score and the best pair.
    """
    if not vectors or len(alphas) == 0:
        raise ValueError("sweep needs at least one layer vector and one alpha")
    scores = {}
    for layer, vec in vectors.items():
        for a in alphas:
            with add_vector(model, layer, vec, alpha=_check_alpha(a)):
                scores[(int(layer), float(a))] = float(metric(model))
    best = min(scores, key=lambda k: scores[k])
    return SweepResult(scores=scores, best_layer=best[0], best_alpha=best[1])
