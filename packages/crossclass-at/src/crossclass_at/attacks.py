"""White-box attacks: PGD (l-inf and l2), FGSM and TRADES' KL inner maximisation, with a BN-mode switch.

Every attack is a frozen, keyword-only configuration called as ``attack(model, x, y, generator=...)``; it
returns ``x_adv`` in ``[0, 1]`` with ``x_adv - x`` inside the eps-ball. The arithmetic follows torchattacks
3.5.1 step for step (mean cross-entropy, ``autograd.grad`` on the input, clamp to the ball then to
``[0, 1]``), so with the same random start the results are identical. The random start draws from
``generator`` (a :class:`torch.Generator`; ``None`` uses torch's global generator, as torchattacks does).

``bn_mode`` says in which mode the model runs while the attack computes its gradients: ``"eval"`` (frozen
BatchNorm statistics, dropout off; torchattacks' default, the paper's choice for TRADES and for the
metric), ``"train"`` (batch statistics, and BatchNorm's running statistics are updated, as the paper's
PGD-AT does when it crafts training examples) or ``"keep"`` (the mode the model is in). The model's
modes are restored afterwards.
"""

from __future__ import annotations

import contextlib
import math
import numbers
import warnings
from collections.abc import Iterator
from dataclasses import dataclass
from typing import overload

import torch
import torch.nn.functional as F
from icml25_shared.validation import Interval, Options, check_param
from torch import nn

__all__ = ["FGSM", "PGD", "BN_MODES", "Normalized", "TradesKL", "autoattack_accuracy", "bn_mode", "check_generator",
           "check_unit_range", "generator_on", "robust_accuracy", "warn_implausible_budget"]

BN_MODES = ("eval", "train", "keep")
NORMS = ("linf", "l2")


def check_unit_range(x: torch.Tensor, name: str = "x") -> None:
    """Raise when ``x`` leaves ``[0, 1]``.

    Parameters
    ----------
    x : Tensor
        Inputs of an attack.
    name : str, default "x"
        Name used in the error message.

    Raises
    ------
    ValueError
        When a value is NaN, below 0 or above 1 (normalised inputs must go through :class:`Normalized`).
    """
    x = x.detach()
    if x.numel() and bool(torch.isnan(x).any()):
        raise ValueError(f"{name} contains NaN; attacks need inputs in [0, 1]")
    if x.numel() and (float(x.min()) < 0.0 or float(x.max()) > 1.0):
        raise ValueError(f"{name} must lie in [0, 1] (pixel scale), got values in [{float(x.min()):.4g}, "
                         f"{float(x.max()):.4g}]; for a model trained on normalised inputs wrap it as "
                         f"Normalized(model, mean, std) and pass unnormalised inputs")


def generator_on(device: str | torch.device, seed: int) -> torch.Generator:
    """A seeded :class:`torch.Generator` on ``device`` (on the CPU for devices without one, e.g. ``meta``).

    Parameters
    ----------
    device : str or torch.device
        The device of the tensors it will fill (the model's).
    seed : int
        The seed.

    Returns
    -------
    torch.Generator
        The generator.
    """
    device = torch.device(device)
    if device.type == "meta":  # shape-only tensors: their random fills ignore the generator
        device = torch.device("cpu")
    return torch.Generator(device=device).manual_seed(int(seed))


def check_generator(generator: torch.Generator | None, x: torch.Tensor, owner: str = "attack") -> None:
    """Raise when ``generator`` lives on another device than ``x`` (torch would fail or draw elsewhere).

    Parameters
    ----------
    generator : torch.Generator or None
        The source of a random draw into a tensor like ``x``.
    x : Tensor
        The tensor the draw fills.
    owner : str, default "attack"
        Named in the message.

    Raises
    ------
    ValueError
        When the devices differ (``meta`` tensors accept any generator).
    """
    if generator is None or x.device.type == "meta":
        return
    g, d = generator.device, x.device
    if g.type != d.type or (g.index is not None and d.index is not None and g.index != d.index):
        raise ValueError(f"{owner}: generator is on {g} but the inputs are on {d}; create it on the model's device "
                         f"(crossclass_at.attacks.generator_on({str(d)!r}, seed))")


def warn_implausible_budget(eps: float, alpha: float | None, norm: str, x: torch.Tensor | None = None, *,
                            owner: str = "attack") -> None:
    """Warn when an attack budget cannot be meant for inputs in ``[0, 1]``.

    Inputs are on the ``[0, 1]`` pixel scale, so an l-inf radius above 0.5 lets the attack move every pixel to
    about any value (``eps=8`` is 8 of 255 written on the 0..255 scale: use ``8 / 255``); a step ``alpha``
    above ``2 eps`` leaves the ball at every step; an l2 radius at least the cube's diameter ``sqrt(d)``
    constrains nothing; and inputs spanning a range no wider than ``eps`` (data divided by 255 twice) can be
    replaced by any other input of the set.

    Parameters
    ----------
    eps : float
        Radius.
    alpha : float or None
        Step size (None: the attack's default).
    norm : {"linf", "l2"}
        Threat model.
    x : Tensor, optional
        Inputs (enables the checks that need their size and range).
    owner : str, default "attack"
        Named in the message.
    """
    problems = []
    if norm == "linf" and eps > 0.5:
        problems.append(f"eps={eps:g} is an l-inf radius above 0.5 on inputs in [0, 1] (pixel units? use "
                        f"eps={eps:g}/255 = {eps / 255:.4g})")
    if alpha is not None and eps > 0 and alpha > 2 * eps:
        problems.append(f"alpha={alpha:g} is more than twice eps={eps:g}: every step leaves the ball")
    if x is not None and x.numel() and x.device.type != "meta":
        if norm == "l2" and eps >= math.sqrt(x[0].numel()):
            problems.append(f"eps={eps:g} is an l2 radius at least the diameter sqrt({x[0].numel()}) of the input "
                            f"cube: the ball constrains nothing")
        spread = float(x.max()) - float(x.min())
        if norm == "linf" and 0 < spread <= eps:
            problems.append(f"the inputs span a range of {spread:.4g}, no wider than eps={eps:g} (divided by 255 "
                            f"twice?): the ball holds every input of the set")
    if problems:
        warnings.warn(f"{owner}: implausible budget for inputs in [0, 1]: " + "; ".join(problems), UserWarning,
                      stacklevel=3)


@contextlib.contextmanager
def bn_mode(model: nn.Module, mode: str) -> Iterator[nn.Module]:
    """Run ``model`` in ``mode`` (``"eval"``, ``"train"`` or ``"keep"``), restoring every module's mode after.

    Parameters
    ----------
    model : nn.Module
        The model.
    mode : {"eval", "train", "keep"}
        The mode inside the block.

    Yields
    ------
    nn.Module
        The same model.
    """
    if mode not in BN_MODES:
        raise ValueError(f"bn_mode must be one of {BN_MODES}, got {mode!r}")
    saved = [(m, m.training) for m in model.modules()]
    try:
        if mode == "eval":
            model.eval()
        elif mode == "train":
            model.train()
        yield model
    finally:
        for module, training in saved:
            module.training = training


_BUDGET = Interval(float, 0, math.inf, closed="left")  # finite and >= 0


def _check_eps(eps: float, name: str = "eps", owner: str | None = None) -> float:
    check_param(name, eps, [_BUDGET], owner=owner)
    return float(eps)


def _check_steps(steps: int, owner: str | None = None) -> int:
    check_param("steps", steps, [Interval(int, 1, None)], owner=owner)
    return int(steps)


def _check_common(attack: PGD | FGSM | TradesKL) -> None:
    owner = type(attack).__name__
    object.__setattr__(attack, "eps", _check_eps(attack.eps, owner=owner))
    check_param("bn_mode", attack.bn_mode, [Options(str, set(BN_MODES))], owner=owner)


@overload
def _check_batch(model: nn.Module, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor: ...


@overload
def _check_batch(model: nn.Module, x: torch.Tensor, y: None) -> None: ...


def _check_batch(model: nn.Module, x: torch.Tensor, y: torch.Tensor | None) -> torch.Tensor | None:
    """Validate an attack's arguments; return ``y`` as int64 (None stays None)."""
    if torch.is_inference_mode_enabled():
        raise RuntimeError("attacks need gradients with respect to the input and cannot run under "
                           "torch.inference_mode(); call them outside it (torch.no_grad() is fine)")
    if not isinstance(model, nn.Module):
        raise TypeError(f"model must be a torch.nn.Module, got {type(model).__name__}")
    if not torch.is_tensor(x) or not x.is_floating_point():
        raise TypeError("x must be a floating-point tensor of shape (batch, ...)")
    check_unit_range(x)
    if y is not None and (not torch.is_tensor(y) or y.shape != x.shape[:1]):
        raise ValueError(f"y must be a tensor of shape ({x.shape[0]},), got "
                         f"{tuple(y.shape) if torch.is_tensor(y) else type(y).__name__}")
    if y is None:
        return None
    if y.is_floating_point() or y.is_complex() or y.dtype == torch.bool:
        raise TypeError(f"y must hold integer class labels (int64), got dtype {str(y.dtype).removeprefix('torch.')}; "
                        f"convert integer-valued labels with y.long()")
    return y.long()


def _check_batch_size(batch_size: int) -> int:
    if isinstance(batch_size, bool) or not isinstance(batch_size, numbers.Integral) or batch_size < 1:
        raise ValueError(f"batch_size must be an int >= 1, got {batch_size!r}")
    return int(batch_size)


def _per_sample(v: torch.Tensor, like: torch.Tensor) -> torch.Tensor:
    return v.view(-1, *([1] * (like.dim() - 1)))


@dataclass(frozen=True, kw_only=True)
class PGD:
    """Projected gradient descent on the cross-entropy (Madry et al., 2018), in l-inf or l2.

    Parameters
    ----------
    eps : float, default 8/255
        Radius of the ball (pixel scale).
    alpha : float, optional
        Step size; default ``eps / 4`` (l-inf, the paper's 2/255 at 8/255) or ``eps / 8`` (l2, its 16/255
        at 128/255).
    steps : int, default 10
        Gradient steps.
    norm : {"linf", "l2"}, default "linf"
        The ball.
    random_start : bool, default True
        Start from a uniform point of the l-inf ball, or (l2) a Gaussian direction with a U(0, 1) fraction
        of the radius, clamped to ``[0, 1]`` (torchattacks' and the official code's start).
    bn_mode : {"eval", "train", "keep"}, default "eval"
        The model's mode during the attack (see the module docstring).

    Examples
    --------
    >>> import torch
    >>> from torch import nn
    >>> from crossclass_at import PGD
    >>> model = nn.Sequential(nn.Flatten(), nn.Linear(4, 3))
    >>> x, y = torch.rand(5, 1, 2, 2), torch.tensor([0, 1, 2, 0, 1])
    >>> x_adv = PGD(eps=0.1, steps=5)(model, x, y, generator=torch.Generator().manual_seed(0))
    >>> bool((x_adv - x).abs().max() <= 0.1 + 1e-6 and x_adv.min() >= 0 and x_adv.max() <= 1)
    True
    """

    eps: float = 8 / 255
    alpha: float | None = None
    steps: int = 10
    norm: str = "linf"
    random_start: bool = True
    bn_mode: str = "eval"

    def __post_init__(self) -> None:
        _check_common(self)
        object.__setattr__(self, "steps", _check_steps(self.steps, "PGD"))
        check_param("norm", self.norm, [Options(str, set(NORMS))], owner="PGD")
        if self.alpha is not None:
            object.__setattr__(self, "alpha", _check_eps(self.alpha, "alpha", "PGD"))
        warn_implausible_budget(self.eps, self.alpha, self.norm, owner="PGD")

    @property
    def step_size(self) -> float:
        """The step size in use (``alpha`` or its default)."""
        if self.alpha is not None:
            return self.alpha
        return self.eps / 4 if self.norm == "linf" else self.eps / 8

    def __call__(self, model: nn.Module, x: torch.Tensor, y: torch.Tensor, *,
                 generator: torch.Generator | None = None) -> torch.Tensor:
        """Adversarial examples of ``x`` against ``model``.

        Parameters
        ----------
        model : nn.Module
            Maps ``x`` (pixel scale) to logits of shape (batch, K).
        x : Tensor, shape (batch, ...)
            Inputs in ``[0, 1]``.
        y : Tensor of int64, shape (batch,)
            True labels.
        generator : torch.Generator, optional
            Source of the random start (torch's global generator when None).

        Returns
        -------
        Tensor
            ``x_adv`` with the shape of ``x``.
        """
        y = _check_batch(model, x, y)
        check_generator(generator, x, "PGD")
        if self.norm == "l2" and x.numel() and self.eps >= math.sqrt(x[0].numel()):
            warn_implausible_budget(self.eps, self.alpha, self.norm, x[:1], owner="PGD")
        with bn_mode(model, self.bn_mode), torch.enable_grad():
            if self.norm == "linf":
                return self._linf(model, x, y, generator)
            return self._l2(model, x, y, generator)

    def _grad(self, model: nn.Module, adv: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        adv.requires_grad = True
        cost = F.cross_entropy(model(adv), y)
        return torch.autograd.grad(cost, adv, retain_graph=False, create_graph=False)[0]

    def _linf(self, model, x, y, generator):
        x = x.clone().detach()
        adv = x.clone().detach()
        if self.random_start:
            adv = adv + torch.empty_like(adv).uniform_(-self.eps, self.eps, generator=generator)
            adv = torch.clamp(adv, min=0, max=1).detach()
        for _ in range(self.steps):
            grad = self._grad(model, adv, y)
            adv = adv.detach() + self.step_size * grad.sign()
            delta = torch.clamp(adv - x, min=-self.eps, max=self.eps)
            adv = torch.clamp(x + delta, min=0, max=1).detach()
        return adv

    def _l2(self, model, x, y, generator):
        x = x.clone().detach()
        adv = x.clone().detach()
        n = len(x)
        if self.random_start:
            delta = torch.empty_like(adv).normal_(generator=generator)
            norms = _per_sample(delta.view(n, -1).norm(p=2, dim=1), x)
            r = torch.zeros_like(norms).uniform_(0, 1, generator=generator)
            delta *= r / norms * self.eps
            adv = torch.clamp(adv + delta, min=0, max=1).detach()
        for _ in range(self.steps):
            grad = self._grad(model, adv, y)
            grad_norms = torch.norm(grad.view(n, -1), p=2, dim=1) + 1e-10
            grad = grad / _per_sample(grad_norms, x)
            adv = adv.detach() + self.step_size * grad
            delta = adv - x
            delta_norms = torch.norm(delta.view(n, -1), p=2, dim=1)
            # min(eps / |delta|, 1) as torchattacks, value for value, without its 0 / 0 = NaN at eps = 0
            factor = torch.where(delta_norms > self.eps, self.eps / delta_norms, torch.ones_like(delta_norms))
            delta = delta * _per_sample(factor, x)
            adv = torch.clamp(x + delta, min=0, max=1).detach()
        return adv


@dataclass(frozen=True, kw_only=True)
class FGSM:
    """Fast gradient sign method (Goodfellow et al., 2015): one l-inf step of size ``eps``.

    Parameters
    ----------
    eps : float, default 8/255
        Step and radius (pixel scale).
    bn_mode : {"eval", "train", "keep"}, default "eval"
        The model's mode during the attack.
    """

    eps: float = 8 / 255
    bn_mode: str = "eval"

    def __post_init__(self) -> None:
        _check_common(self)
        warn_implausible_budget(self.eps, None, "linf", owner="FGSM")

    def __call__(self, model: nn.Module, x: torch.Tensor, y: torch.Tensor, *,
                 generator: torch.Generator | None = None) -> torch.Tensor:
        """Adversarial examples of ``x`` (see :meth:`PGD.__call__`; ``generator`` is unused).

        Parameters
        ----------
        model : nn.Module
            Maps ``x`` to logits.
        x : Tensor, shape (batch, ...)
            Inputs in ``[0, 1]``.
        y : Tensor of int64, shape (batch,)
            True labels.
        generator : torch.Generator, optional
            Unused (FGSM is deterministic); accepted so that every attack has one signature.

        Returns
        -------
        Tensor
            ``x_adv``.
        """
        y = _check_batch(model, x, y)
        with bn_mode(model, self.bn_mode), torch.enable_grad():
            x = x.clone().detach()
            x.requires_grad = True
            cost = F.cross_entropy(model(x), y)
            grad = torch.autograd.grad(cost, x, retain_graph=False, create_graph=False)[0]
            return torch.clamp(x + self.eps * grad.sign(), min=0, max=1).detach()


@dataclass(frozen=True, kw_only=True)
class TradesKL:
    """TRADES' inner maximisation (Zhang et al., 2019): l-inf PGD on ``KL(p(x) || p(x'))`` (sum over the batch).

    Starts from ``x + 0.001 * N(0, 1)`` clamped to ``[0, 1]`` (torchattacks' ``TPGD``; the official TRADES
    code clamps only after the first step) and needs no labels.

    Parameters
    ----------
    eps : float, default 8/255
        Radius of the l-inf ball.
    alpha : float, optional
        Step size, default ``eps / 4``.
    steps : int, default 10
        Gradient steps.
    bn_mode : {"eval", "train", "keep"}, default "eval"
        The model's mode during the attack (the paper's TRADES uses eval).
    """

    eps: float = 8 / 255
    alpha: float | None = None
    steps: int = 10
    bn_mode: str = "eval"

    def __post_init__(self) -> None:
        _check_common(self)
        object.__setattr__(self, "steps", _check_steps(self.steps, "TradesKL"))
        if self.alpha is not None:
            object.__setattr__(self, "alpha", _check_eps(self.alpha, "alpha", "TradesKL"))
        warn_implausible_budget(self.eps, self.alpha, "linf", owner="TradesKL")

    @property
    def step_size(self) -> float:
        """The step size in use (``alpha`` or ``eps / 4``)."""
        return self.alpha if self.alpha is not None else self.eps / 4

    def __call__(self, model: nn.Module, x: torch.Tensor, y: torch.Tensor | None = None, *,
                 generator: torch.Generator | None = None) -> torch.Tensor:
        """Adversarial examples of ``x`` maximising the KL divergence from the clean prediction.

        Parameters
        ----------
        model : nn.Module
            Maps ``x`` to logits.
        x : Tensor, shape (batch, ...)
            Inputs in ``[0, 1]``.
        y : Tensor, optional
            Unused (the attack needs no labels).
        generator : torch.Generator, optional
            Source of the Gaussian start.

        Returns
        -------
        Tensor
            ``x_adv``.
        """
        _check_batch(model, x, y)
        check_generator(generator, x, "TradesKL")
        with bn_mode(model, self.bn_mode), torch.enable_grad():
            x = x.clone().detach()
            with torch.no_grad():
                p_clean = F.softmax(model(x), dim=1)
            adv = x + 0.001 * torch.empty_like(x).normal_(generator=generator)
            adv = torch.clamp(adv, min=0, max=1).detach()
            for _ in range(self.steps):
                adv.requires_grad = True
                cost = F.kl_div(F.log_softmax(model(adv), dim=1), p_clean, reduction="sum")
                grad = torch.autograd.grad(cost, adv, retain_graph=False, create_graph=False)[0]
                adv = adv.detach() + self.step_size * grad.sign()
                delta = torch.clamp(adv - x, min=-self.eps, max=self.eps)
                adv = torch.clamp(x + delta, min=0, max=1).detach()
            return adv


class Normalized(nn.Module):
    """``model((x - mean) / std)``: lets attacks work in pixel scale on a model trained on normalised inputs.

    Parameters
    ----------
    model : nn.Module
        The model that expects normalised inputs.
    mean, std : sequence of float
        Per-channel statistics (channel is dimension 1).
    """

    model: nn.Module
    mean: torch.Tensor
    std: torch.Tensor

    def __init__(self, model: nn.Module, mean: tuple[float, ...] | list[float], std: tuple[float, ...] | list[float]):
        super().__init__()
        if len(mean) != len(std) or any(s <= 0 for s in std):
            raise ValueError(f"mean and std need one value per channel and std > 0, got {mean!r}, {std!r}")
        self.model = model
        self.register_buffer("mean", torch.tensor(mean, dtype=torch.float32).view(1, -1, 1, 1))
        self.register_buffer("std", torch.tensor(std, dtype=torch.float32).view(1, -1, 1, 1))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """Logits of the normalised input.

        Parameters
        ----------
        x : Tensor, shape (batch, channels, ...)
            Inputs in pixel scale (``(batch, features)`` works with one statistic per feature or one in all).

        Returns
        -------
        Tensor
            The wrapped model's output.

        Raises
        ------
        ValueError
            When ``x`` has no channel dimension or a channel count other than the statistics'.
        """
        k = self.mean.numel()
        if x.dim() < 2 or (k != 1 and x.shape[1] != k):
            raise ValueError(f"Normalized has statistics for {k} channels (dimension 1 of x), got "
                             f"x of shape {tuple(x.shape)}")
        shape = (1, -1) + (1,) * (x.dim() - 2)
        return self.model((x - self.mean.view(shape)) / self.std.view(shape))


def robust_accuracy(model: nn.Module, x: torch.Tensor, y: torch.Tensor, attack: PGD | FGSM | TradesKL | None = None,
                    *, batch_size: int = 256, generator: torch.Generator | None = None) -> float:
    """Share of ``x`` that ``model`` classifies correctly after ``attack`` (clean accuracy when None).

    The model is evaluated in eval mode; the attack runs in its own ``bn_mode``.

    Parameters
    ----------
    model : nn.Module
        The classifier.
    x : Tensor, shape (n, ...)
        Inputs in ``[0, 1]``.
    y : Tensor of int64, shape (n,)
        Labels.
    attack : PGD, FGSM or TradesKL, optional
        The attack; None measures clean accuracy.
    batch_size : int, default 256
        Batch size of the attack and the evaluation.
    generator : torch.Generator, optional
        Source of the attack's random start.

    Returns
    -------
    float
        Accuracy in ``[0, 1]``.
    """
    y = _check_batch(model, x, y)
    batch_size = _check_batch_size(batch_size)
    if len(x) == 0:
        raise ValueError("x is empty")
    device = next((p.device for p in model.parameters()), x.device)
    if attack is not None:
        check_generator(generator, torch.empty(0, device=device), "robust_accuracy")
    correct = 0
    for start in range(0, len(x), batch_size):
        xb, yb = x[start:start + batch_size].to(device), y[start:start + batch_size].to(device)
        if attack is not None:
            xb = attack(model, xb, yb, generator=generator)
        with bn_mode(model, "eval"), torch.no_grad():
            correct += int((model(xb).argmax(1) == yb).sum())
    return correct / len(x)


def autoattack_accuracy(model: nn.Module, x: torch.Tensor, y: torch.Tensor, *, eps: float, norm: str = "linf",
                        version: str = "standard", seed: int = 0, batch_size: int = 256) -> float:
    """Accuracy under AutoAttack (Croce and Hein, 2020), run by torchattacks with the model in eval mode.

    Parameters
    ----------
    model : nn.Module
        The classifier over inputs in ``[0, 1]``; its number of classes is read from one forward pass.
    x : Tensor, shape (n, ...)
        Inputs in ``[0, 1]``.
    y : Tensor of int64, shape (n,)
        Labels.
    eps : float
        Radius.
    norm : {"linf", "l2"}, default "linf"
        The ball.
    version : {"standard", "plus", "rand"}, default "standard"
        torchattacks' AutoAttack suite (standard: APGD-CE, APGD-T, FAB-T, Square with 5000 queries).
    seed : int, default 0
        torchattacks' seed.
    batch_size : int, default 256
        Samples per call.

    Returns
    -------
    float
        Accuracy in ``[0, 1]``.

    Raises
    ------
    ImportError
        When torchattacks is missing (the ``peers`` extra).
    """
    try:
        import torchattacks
    except ImportError as err:  # pragma: no cover - exercised in a venv without the extra
        raise ImportError("autoattack_accuracy needs torchattacks: pip install 'crossclass-at[peers]' "
                          "(or pip install --no-deps 'torchattacks>=3.5')") from err
    y = _check_batch(model, x, y)
    batch_size = _check_batch_size(batch_size)
    _check_eps(eps)
    if norm not in NORMS:
        raise ValueError(f"norm must be one of {NORMS}, got {norm!r}")
    device = next((p.device for p in model.parameters()), x.device)
    with bn_mode(model, "eval"), torch.no_grad():
        n_classes = int(model(x[:1].to(device)).shape[1])
    attack = torchattacks.AutoAttack(model, norm="Linf" if norm == "linf" else "L2", eps=float(eps), version=version,
                                     n_classes=n_classes, seed=seed)
    correct = 0
    with bn_mode(model, "eval"):
        for start in range(0, len(x), batch_size):
            xb, yb = x[start:start + batch_size].to(device), y[start:start + batch_size].to(device)
            adv = attack(xb, yb)
            with torch.no_grad():
                correct += int((model(adv).argmax(1) == yb).sum())
    return correct / len(x)
