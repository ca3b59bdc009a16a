"""Offline data: scikit-learn's digits as image tensors in ``[0, 1]``; a Gaussian mixture with cross-class features."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch
from icml25_shared.random import RandomStateLike, check_random_state

__all__ = ["CrossClassMixture", "DigitsSplit", "cross_class_mixture", "load_digits_split"]


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


@dataclass(frozen=True)
class CrossClassMixture:
    """Samples of :func:`cross_class_mixture`.

    Attributes
    ----------
    x : Tensor of float32, shape (n, d)
        Inputs mapped to ``[0, 1]`` (``0.5 + z / (2 * scale)``, clipped).
    y : Tensor of int64, shape (n,)
        Labels.
    shared : Tensor of bool, shape (d,)
        Coordinates whose mean is shared by two classes (cross-class features).
    specific : Tensor of bool, shape (d,)
        Coordinates whose mean belongs to one class.
    scale : float
        The map's half-width: a perturbation ``e`` of ``z`` is ``e / (2 * scale)`` of ``x``.
    """

    x: torch.Tensor
    y: torch.Tensor
    shared: torch.Tensor
    specific: torch.Tensor
    scale: float


def cross_class_mixture(n: int, *, n_classes: int = 4, d_specific: int = 4, d_shared: int = 2,
                        mu_specific: float = 1.0, mu_shared: float = 1.0, sigma: float = 1.0, scale: float = 5.0,
                        random_state: RandomStateLike = 0) -> CrossClassMixture:
    """Gaussian mixture with class-specific and cross-class (shared) feature coordinates.

    ``z = m_y + sigma * N(0, I)``: every class ``k`` owns ``d_specific`` coordinates with mean ``mu_specific``,
    and every pair of classes ``{k, l}`` shares ``d_shared`` coordinates with mean ``mu_shared`` for both (0
    for the other classes). A shared coordinate separates its two classes from the rest, so a robust
    classifier can use it. The paper's exact data model was not available; this is a reconstruction after
    its description (features shared by several classes vs features of one class).

    Parameters
    ----------
    n : int
        Samples (classes balanced up to rounding, drawn uniformly).
    n_classes : int, default 4
        ``K >= 2``.
    d_specific, d_shared : int, default 4 and 2
        Coordinates per class and per pair of classes (``d = K d_specific + K (K - 1) / 2 d_shared``).
    mu_specific, mu_shared, sigma : float, default 1.0
        Means and noise level.
    scale : float, default 5.0
        ``x = clip(0.5 + z / (2 scale), 0, 1)``.
    random_state : None, int or numpy Generator, default 0
        Source of the labels and the noise.

    Returns
    -------
    CrossClassMixture
        The samples and the coordinate masks.
    """
    if n < 1 or n_classes < 2 or d_specific < 0 or d_shared < 0 or d_specific + d_shared == 0:
        raise ValueError(f"need n >= 1, n_classes >= 2 and some coordinates, got n={n}, n_classes={n_classes}, "
                         f"d_specific={d_specific}, d_shared={d_shared}")
    if sigma <= 0 or scale <= 0:
        raise ValueError(f"sigma and scale must be > 0, got {sigma}, {scale}")
    rng = check_random_state(random_state)
    pairs = [(k, m) for k in range(n_classes) for m in range(k + 1, n_classes)]
    d = n_classes * d_specific + len(pairs) * d_shared
    means = np.zeros((n_classes, d))
    specific = np.zeros(d, dtype=bool)
    specific[: n_classes * d_specific] = True
    for k in range(n_classes):
        means[k, k * d_specific:(k + 1) * d_specific] = mu_specific
    for p, (k, m) in enumerate(pairs):
        cols = slice(n_classes * d_specific + p * d_shared, n_classes * d_specific + (p + 1) * d_shared)
        means[[k, m], cols] = mu_shared
    y = rng.integers(0, n_classes, size=n)
    z = means[y] + sigma * rng.standard_normal((n, d))
    x = np.clip(0.5 + z / (2 * scale), 0.0, 1.0).astype(np.float32)
    return CrossClassMixture(torch.from_numpy(x), torch.from_numpy(y.astype(np.int64)),
                             torch.from_numpy(~specific), torch.from_numpy(specific), float(scale))
