"""The paper's class-wise feature attribution, its correlation matrix and the cross-class score (CAS).

Write the classifier as ``f(x) = W g(x) + b`` with ``W`` (K x n) its last linear layer and ``g`` the
penultimate features. For class ``i`` with samples ``D_i``,

    A_i = mean_{x in D_i} g(x_adv) * W[i]          (element-wise; the own-class row, no bias)
    C[i, j] = <A_i / |A_i|, A_j / |A_j|>
    CAS = sum_{i, j} clamp(C[i, j], 0, 1) - K      (the positive off-diagonal cosines)

with ``x_adv`` from PGD-20 at ``alpha = eps / 4`` with a random start, the model in eval mode (the
official ``evaluate_matrix.py``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
import torch
from torch import nn

from crossclass_at.attacks import FGSM, PGD, TradesKL, _check_batch, _check_batch_size, bn_mode, generator_on

__all__ = ["CASMonitor", "cas", "class_attribution", "correlation_matrix", "find_head"]


def find_head(model: nn.Module, head: str | nn.Module | None = None) -> nn.Linear:
    """The linear head of ``model``: the module named ``head``, ``head`` itself, or the last ``nn.Linear``.

    Parameters
    ----------
    model : nn.Module
        The classifier.
    head : str, nn.Module or None
        A submodule name (``"fc"``, ``"linear"``), a submodule, or None for the last ``nn.Linear`` in
        ``model.modules()`` order.

    Returns
    -------
    nn.Linear
        The head, whose input is ``g(x)`` and whose weight is ``W``.

    Raises
    ------
    ValueError
        When no module has that name or the model has no ``nn.Linear``.
    TypeError
        When the named module is not an ``nn.Linear`` (the message names it and its type).
    """
    if head is None:
        linears = [(name, m) for name, m in model.named_modules() if isinstance(m, nn.Linear)]
        if not linears:
            raise ValueError(f"{type(model).__name__} has no nn.Linear layer; pass head= the module or its name")
        return linears[-1][1]
    if isinstance(head, str):
        modules = dict(model.named_modules())
        if head not in modules:
            raise ValueError(f"model has no module named {head!r}; its modules are "
                             f"{[n for n in modules if n][:20]}")
        name, module = head, modules[head]
    else:
        name, module = type(head).__name__, head
    if not isinstance(module, nn.Linear):
        raise TypeError(f"the head must be an nn.Linear whose input is the penultimate features; module {name!r} "
                        f"is a {type(module).__name__}")
    return module


def class_attribution(model: nn.Module, x: torch.Tensor, y: torch.Tensor, *, head: str | nn.Module | None = None,
                      on: str = "adv", attack: PGD | FGSM | TradesKL | None = None, batch_size: int = 100,
                      generator: torch.Generator | None = None) -> np.ndarray:
    """Class attribution matrix ``A`` (K x n): per class the mean of ``g(x_adv) * W[i]`` over its samples.

    Parameters
    ----------
    model : nn.Module
        The classifier; ``g(x)`` is read as the input of its head by a forward hook.
    x : Tensor, shape (N, ...)
        Inputs in ``[0, 1]`` (every class of the head needs at least one sample).
    y : Tensor of int64, shape (N,)
        Labels in ``0..K-1``.
    head : str, nn.Module or None
        The linear head (see :func:`find_head`).
    on : {"adv", "clean"}, default "adv"
        Attribute the adversarial examples (the paper) or the clean inputs.
    attack : PGD, FGSM or TradesKL, optional
        The attack for ``on="adv"``; default ``PGD(eps=8/255, alpha=2/255, steps=20)``, the paper's CIFAR
        setting (pass your dataset's eps).
    batch_size : int, default 100
        Samples per attack batch.
    generator : torch.Generator, optional
        Source of the attack's random start.

    Returns
    -------
    ndarray of float64, shape (K, n)
        Row ``i`` is class ``i``'s attribution ``A_i``.

    Raises
    ------
    ValueError
        For a label outside ``0..K-1``, a class without samples, or ``on`` not in {"adv", "clean"}.
    TypeError
        For a head that is not linear.

    Examples
    --------
    >>> import torch
    >>> from crossclass_at import DigitsMLP, class_attribution, correlation_matrix, cas
    >>> _ = torch.manual_seed(0)
    >>> model = DigitsMLP(3, hidden=8)
    >>> x, y = torch.rand(30, 1, 8, 8), torch.arange(30) % 3
    >>> A = class_attribution(model, x, y, on="clean")
    >>> A.shape
    (3, 8)
    >>> C = correlation_matrix(A)
    >>> bool(abs(cas(C) - (C.clip(0, 1).sum() - 3)) < 1e-12)
    True
    """
    return _attribution_pass(model, x, y, head=head, on=on, attack=attack, batch_size=batch_size,
                             generator=generator)[0]


def _attribution_pass(model: nn.Module, x: torch.Tensor, y: torch.Tensor, *, head: Any, on: str, attack: Any,
                      batch_size: int, generator: torch.Generator | None) -> tuple[np.ndarray, float]:
    """``A`` and the accuracy on the attributed inputs (one attack per sample)."""
    if on not in ("adv", "clean"):
        raise ValueError(f"on must be 'adv' or 'clean', got {on!r}")
    y = _check_batch(model, x, y)
    batch_size = _check_batch_size(batch_size)
    fc = find_head(model, head)
    k = fc.out_features
    y_cpu = y.detach().cpu().long()
    if len(y_cpu) and (int(y_cpu.min()) < 0 or int(y_cpu.max()) >= k):
        raise ValueError(f"labels must lie in 0..{k - 1} (the head has {k} classes), got labels in "
                         f"{int(y_cpu.min())}..{int(y_cpu.max())}")
    counts = torch.bincount(y_cpu, minlength=k)
    empty = torch.nonzero(counts == 0).flatten().tolist()
    if empty:
        raise ValueError(f"class {empty[0]} has no samples (classes without samples: {empty}); A_i is a mean over "
                         f"the class's samples")
    if on == "adv" and attack is None:
        attack = PGD(eps=8 / 255, alpha=2 / 255, steps=20)
    captured: list[torch.Tensor] = []
    hook = fc.register_forward_hook(lambda module, inputs, output: captured.append(inputs[0].detach()))
    device = fc.weight.device
    sums = torch.zeros(k, fc.in_features, dtype=torch.float64)
    correct = 0
    try:
        for start in range(0, len(x), batch_size):
            xb, yb = x[start:start + batch_size].to(device), y[start:start + batch_size].to(device)
            if on == "adv":
                xb = attack(model, xb, yb, generator=generator)
            captured.clear()
            with bn_mode(model, "eval"), torch.no_grad():
                correct += int((model(xb).argmax(1) == yb).sum())
            if len(captured) != 1:
                raise ValueError(f"the head was called {len(captured)} times in one forward; class_attribution needs "
                                 f"a head applied once to the penultimate features")
            g = captured[0].reshape(len(xb), -1).double().cpu()
            sums.index_add_(0, yb.cpu(), g)
    finally:
        hook.remove()
    weight = fc.weight.detach().double().cpu()
    return ((sums / counts[:, None].double()) * weight).numpy(), correct / len(x)


def correlation_matrix(attribution: np.ndarray) -> np.ndarray:
    """Cosine similarities of the rows of ``A``: ``C[i, j] = <A_i/|A_i|, A_j/|A_j|>``.

    Parameters
    ----------
    attribution : array-like, shape (K, n)
        Class attributions (:func:`class_attribution`).

    Returns
    -------
    ndarray of float64, shape (K, K)
        Symmetric, unit diagonal, entries in ``[-1, 1]``.

    Raises
    ------
    ValueError
        For a row of zeros (its direction is undefined) or a non-finite value.
    """
    a = np.asarray(attribution, dtype=np.float64)
    if a.ndim != 2 or a.shape[0] < 1:
        raise ValueError(f"attribution must be a 2-D array (K, n), got shape {a.shape}")
    if not np.all(np.isfinite(a)):
        raise ValueError("attribution contains NaN or infinity")
    peak = np.abs(a).max(axis=1)
    if np.any(peak == 0):
        raise ValueError(f"class {int(np.argmin(peak))} has an all-zero attribution; its cosine is undefined")
    a = a / peak[:, None]  # each row's largest entry becomes 1: its norm cannot overflow or underflow
    unit = a / np.linalg.norm(a, axis=1)[:, None]
    c = unit @ unit.T
    c = (c + c.T) / 2
    np.fill_diagonal(c, 1.0)
    return np.clip(c, -1.0, 1.0)


def cas(correlation: np.ndarray, *, atol: float = 1e-4) -> float:
    """Cross-class score: ``sum(clamp(C, 0, 1)) - K``, the sum of the positive off-diagonal cosines.

    Parameters
    ----------
    correlation : array-like, shape (K, K)
        A correlation matrix with unit diagonal (:func:`correlation_matrix`).

    atol : float, default 1e-4
        Tolerance of the checks below (cosines computed in float32 over long vectors are off by a few 1e-6;
        a covariance or ``A`` itself is off by far more).

    Returns
    -------
    float
        In ``[0, K (K - 1)]``.

    Raises
    ------
    ValueError
        For a matrix that is not a cosine matrix and would give a meaningless score: not square, NaN or
        infinite entries, a diagonal other than 1 (e.g. the attribution ``A`` itself passed for ``C``, or
        a covariance matrix), not symmetric, or entries outside ``[-1, 1]``.
    """
    if not (isinstance(atol, (int, float)) and np.isfinite(atol) and atol >= 0):
        raise ValueError(f"atol must be a finite number >= 0, got {atol!r}")
    c = np.asarray(correlation, dtype=np.float64)
    if c.ndim != 2 or c.shape[0] != c.shape[1] or c.shape[0] < 1:
        raise ValueError(f"correlation must be a square (K, K) matrix, got shape {c.shape}")
    if not np.all(np.isfinite(c)):
        raise ValueError("correlation contains NaN or infinity")
    diag = np.diagonal(c)
    if np.max(np.abs(diag - 1.0)) > atol:
        i = int(np.argmax(np.abs(diag - 1.0)))
        raise ValueError(f"correlation must have a unit diagonal (each class's cosine with itself), but C[{i}, {i}] = "
                         f"{diag[i]:.9g}; pass correlation_matrix(A), not A or a covariance")
    asym = np.abs(c - c.T)
    if np.max(asym) > atol:
        row, col = np.unravel_index(int(np.argmax(asym)), c.shape)
        raise ValueError(f"correlation must be symmetric, but C[{row}, {col}] = {c[row, col]:.9g} and C[{col}, {row}] = "
                         f"{c[col, row]:.9g}")
    if c.min() < -1.0 - atol or c.max() > 1.0 + atol:
        raise ValueError(f"correlation entries are cosines in [-1, 1], got entries in [{c.min():.6g}, {c.max():.6g}]")
    return float(np.clip(c, 0.0, 1.0).sum() - c.shape[0])


@dataclass
class CASMonitor:
    """Trainer callback: the correlation matrix and CAS of the model after every epoch.

    Parameters
    ----------
    x, y : Tensor
        The monitored set (the paper uses the test set), inputs in ``[0, 1]``.
    attack : PGD, FGSM or TradesKL, optional
        The attribution attack (default as :func:`class_attribution`).
    on : {"adv", "clean"}, default "adv"
        Attribute adversarial or clean inputs.
    head : str, nn.Module or None
        The linear head.
    seed : int, default 0
        Seed of the attack's random start, the same every epoch.
    every : int, default 1
        Record every ``every`` epochs (and the last).

    Attributes
    ----------
    epochs_ : list of int
        The recorded epochs (1-based).
    matrices_ : list of ndarray (K, K)
        ``C`` at each recorded epoch.
    cas_ : list of float
        CAS at each recorded epoch.
    robust_accuracy_ : list of float
        Accuracy on the attributed inputs (the same adversarial examples; clean accuracy for ``on="clean"``).
    """

    x: torch.Tensor = field(repr=False)
    y: torch.Tensor = field(repr=False)
    attack: Any = None
    on: str = "adv"
    head: Any = None
    seed: int = 0
    every: int = 1
    epochs_: list[int] = field(default_factory=list, init=False)
    matrices_: list[np.ndarray] = field(default_factory=list, init=False, repr=False)
    cas_: list[float] = field(default_factory=list, init=False)
    robust_accuracy_: list[float] = field(default_factory=list, init=False)

    def on_epoch_end(self, trainer: Any, record: dict[str, Any]) -> None:
        """Compute ``C`` and CAS for the trainer's model and add ``cas`` to the epoch's record.

        Parameters
        ----------
        trainer : AdversarialTrainer
            The trainer (its ``model`` is read).
        record : dict
            The epoch's history row; gets the key ``"cas"``.
        """
        epoch = record["epoch"]
        if epoch % self.every and epoch != trainer.epochs:
            return
        device = find_head(trainer.model, self.head).weight.device  # the attack's start is drawn there
        a, accuracy = _attribution_pass(trainer.model, self.x, self.y, head=self.head, on=self.on,
                                        attack=self.attack, batch_size=100, generator=generator_on(device, self.seed))
        c = correlation_matrix(a)
        self.epochs_.append(epoch)
        self.matrices_.append(c)
        self.cas_.append(cas(c))
        self.robust_accuracy_.append(accuracy)
        record["cas"] = self.cas_[-1]
