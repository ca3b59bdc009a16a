"""The visibility score: a softmax over the five level words, weighted 5 (invisible) to 1 (obvious)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

__all__ = ["SCORE_PROMPT_SUFFIX", "VISIBILITY_LEVELS", "VISIBILITY_WEIGHTS", "check_visibility", "predict_score",
           "visibility_token_ids"]

VISIBILITY_LEVELS: tuple[str, ...] = ("invisible", "faint", "moderate", "visible", "obvious")
"""The five visibility levels, least visible first."""

VISIBILITY_WEIGHTS: tuple[float, ...] = (5.0, 4.0, 3.0, 2.0, 1.0)
"""Score weight of each level (higher = less visible, as ``gt_score``)."""

SCORE_PROMPT_SUFFIX = "The watermark visibility is: "
"""Appended (after a space) to the conversation prompt before the one forward pass of the score."""


def check_visibility(label: Any) -> str:
    """Return ``label`` when it is one of the five levels, else raise.

    Parameters
    ----------
    label : str
        A visibility label.

    Returns
    -------
    str
        The label.

    Raises
    ------
    ValueError
        When ``label`` is not one of ``VISIBILITY_LEVELS``.
    """
    if label not in VISIBILITY_LEVELS:
        raise ValueError(f"visibility {label!r} is not one of {', '.join(VISIBILITY_LEVELS)}")
    return label


def predict_score(logits: Mapping[str, float] | Sequence[float] | np.ndarray) -> float | np.ndarray:
    """Expected visibility weight under the softmax of the five level logits.

    Parameters
    ----------
    logits : mapping, sequence or array
        A mapping from the five level words to their logits (as in ``wmarkgpt_qscore.json``), or an array
        whose last axis holds the logits in ``VISIBILITY_LEVELS`` order, shape ``(5,)`` or ``(n, 5)``.

    Returns
    -------
    float or numpy.ndarray
        ``sum_k softmax(logits)_k * weight_k`` in [1, 5]; an array of shape ``(n,)`` for 2-D input.

    Raises
    ------
    ValueError
        When a level is missing or extra, the last axis is not 5 long, or a logit is not finite.

    Examples
    --------
    >>> predict_score([10.0, -1e9, -1e9, -1e9, -1e9])
    5.0
    >>> round(predict_score({"invisible": 0.0, "faint": 0.0, "moderate": 0.0, "visible": 0.0, "obvious": 0.0}), 12)
    3.0
    """
    if isinstance(logits, Mapping):
        keys = set(logits)
        if keys != set(VISIBILITY_LEVELS):
            raise ValueError(f"logits must have exactly the keys {VISIBILITY_LEVELS}; missing "
                             f"{sorted(set(VISIBILITY_LEVELS) - keys)}, extra {sorted(keys - set(VISIBILITY_LEVELS))}")
        arr = np.array([float(logits[k]) for k in VISIBILITY_LEVELS], dtype=np.float64)
    else:
        arr = np.asarray(logits, dtype=np.float64)
    if arr.ndim not in (1, 2) or arr.shape[-1] != len(VISIBILITY_LEVELS):
        raise ValueError(f"logits must have shape (5,) or (n, 5), got {arr.shape}")
    if not np.all(np.isfinite(arr)):
        raise ValueError("logits contain NaN or infinity")
    shifted = np.exp(arr - arr.max(axis=-1, keepdims=True))
    probs = shifted / shifted.sum(axis=-1, keepdims=True)
    if arr.ndim == 1:
        return float(sum(float(w) * float(p) for w, p in zip(VISIBILITY_WEIGHTS, probs, strict=True)))
    return probs @ np.asarray(VISIBILITY_WEIGHTS)


def visibility_token_ids(tokenizer: Any) -> list[int]:
    """Id of the first sub-token of each level word (after any BOS the tokenizer adds).

    Parameters
    ----------
    tokenizer : transformers tokenizer
        Called as ``tokenizer(word, add_special_tokens=False).input_ids``.

    Returns
    -------
    list of int
        Five ids in ``VISIBILITY_LEVELS`` order.

    Raises
    ------
    ValueError
        When a word encodes to nothing, to the unknown token, or two words share their first sub-token.
    """
    ids = []
    unk = getattr(tokenizer, "unk_token_id", None)
    for word in VISIBILITY_LEVELS:
        enc = tokenizer(word, add_special_tokens=False).input_ids
        if not enc or enc[0] == unk:
            raise ValueError(f"the tokenizer cannot encode the visibility word {word!r}")
        ids.append(int(enc[0]))
    if len(set(ids)) != len(ids):
        raise ValueError(f"visibility words share a first sub-token: {dict(zip(VISIBILITY_LEVELS, ids, strict=True))}")
    return ids
