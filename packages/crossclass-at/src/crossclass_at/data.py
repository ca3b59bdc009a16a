"""Offline data: scikit-learn's 8 x 8 digits as image tensors in ``[0, 1]``, split into train / val / test."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch
from icml25_shared.random import RandomStateLike, check_random_state

__all__ = ["DigitsSplit", "load_digits_split"]


@dataclass(frozen=True)
class DigitsSplit:
    """Digits as float32 tensors of shape (n, 1, 8, 8) in ``[0, 1]`` (pixel value / 16) with int64 labels.

    Attributes
    ----------
    x_train, y_train, x_val, y_val, x_test, y_test : Tensor
        The three stratified parts.
    """

    x_train: torch.Tensor
    y_train: torch.Tensor
    x_val: torch.Tensor
    y_val: torch.Tensor
    x_test: torch.Tensor
    y_test: torch.Tensor


def load_digits_split(*, train: float = 0.6, val: float = 0.2, n_train: int | None = None,
                      random_state: RandomStateLike = 0) -> DigitsSplit:
    """scikit-learn's ``load_digits`` (1797 images, 10 classes), stratified into train, val and test.

    Parameters
    ----------
    train, val : float, default 0.6 and 0.2
        Shares of each class in the train and validation parts (the rest is test).
    n_train : int, optional
        Keep only the first ``n_train`` training samples (a smaller set overfits sooner).
    random_state : None, int or numpy Generator, default 0
        Source of the split.

    Returns
    -------
    DigitsSplit
        The tensors.
    """
    from sklearn.datasets import load_digits

    if not (0 < train < 1 and 0 < val < 1 and train + val < 1):
        raise ValueError(f"train and val must be in (0, 1) with train + val < 1, got {train}, {val}")
    rng = check_random_state(random_state)
    data = load_digits()
    x = (data.images / 16.0).astype(np.float32)[:, None]
    y = data.target.astype(np.int64)
    parts: dict[str, list[np.ndarray]] = {"train": [], "val": [], "test": []}
    for k in np.unique(y):
        idx = rng.permutation(np.flatnonzero(y == k))
        a, b = round(train * len(idx)), round((train + val) * len(idx))
        parts["train"].append(idx[:a])
        parts["val"].append(idx[a:b])
        parts["test"].append(idx[b:])
    out = {}
    for name, chunks in parts.items():
        idx = rng.permutation(np.concatenate(chunks))
        if name == "train" and n_train is not None:
            idx = idx[:n_train]
        out[f"x_{name}"], out[f"y_{name}"] = torch.from_numpy(x[idx]), torch.from_numpy(y[idx])
    return DigitsSplit(**out)
