"""Training objectives: TRADES, label smoothing, self-distillation from an EMA teacher, distillation.

The official repository's self-distillation variant was removed from its training script before
release; what remained (its arguments ``--start 90 --end 110 --lam 0.8 --T 1.5 --decay 0.001`` and the
schedules ``lam_schedule`` and ``decay_schedule``) fixes the weight ramp and the EMA decay. The loss itself
is reconstructed as the standard temperature-scaled distillation (Hinton et al., 2015) on the adversarial
example, as in robust soft-label training (Chen et al., 2021):

    (1 - lam_t) CE(f(x_adv), y) + lam_t T^2 KL(softmax(t(x_adv) / T) || softmax(f(x_adv) / T))

with ``lam_t = 0`` before ``start``, ``(epoch - start) / (end - start) * lam`` from ``start`` to ``end``
and ``lam`` after (0-based epochs, the official schedule), and the teacher ``t`` the EMA of the student,
``theta_t <- ema * theta_t + (1 - ema) * theta_s`` after every optimiser step.
"""

from __future__ import annotations

import copy
import numbers
from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import nn

__all__ = ["Distillation", "LabelSmoothing", "SelfDistillation", "distillation_loss", "ema_update", "trades_loss"]


def trades_loss(logits_clean: torch.Tensor, logits_adv: torch.Tensor, y: torch.Tensor, *, beta: float = 6.0) -> torch.Tensor:
    """TRADES objective: ``CE(f(x), y) + beta / B * sum_b KL(p(x_b) || p(x_adv_b))``.

    Parameters
    ----------
    logits_clean : Tensor, shape (B, K)
        Logits of the clean batch (gradients flow through both terms, as in the official code).
    logits_adv : Tensor, shape (B, K)
        Logits of the adversarial batch.
    y : Tensor of int64, shape (B,)
        Labels.
    beta : float, default 6.0
        Weight of the robust term.

    Returns
    -------
    Tensor
        The scalar loss.
    """
    natural = F.cross_entropy(logits_clean, y)
    robust = F.kl_div(F.log_softmax(logits_adv, dim=1), F.softmax(logits_clean, dim=1), reduction="sum")
    return natural + beta * robust / len(y)


def distillation_loss(student_logits: torch.Tensor, teacher_logits: torch.Tensor, y: torch.Tensor, *,
                      temperature: float, lam: float) -> torch.Tensor:
    """``(1 - lam) CE(s, y) + lam T^2 KL(softmax(t / T) || softmax(s / T))`` (KL averaged over the batch).

    Parameters
    ----------
    student_logits, teacher_logits : Tensor, shape (B, K)
        Logits (the teacher's are detached).
    y : Tensor of int64, shape (B,)
        Labels.
    temperature : float
        ``T > 0``.
    lam : float
        Weight of the soft term in ``[0, 1]``.

    Returns
    -------
    Tensor
        The scalar loss.
    """
    hard = F.cross_entropy(student_logits, y)
    if lam == 0:
        return hard
    t = float(temperature)
    soft = F.kl_div(F.log_softmax(student_logits / t, dim=1), F.softmax(teacher_logits.detach() / t, dim=1),
                    reduction="batchmean")
    return (1 - lam) * hard + lam * t * t * soft


@torch.no_grad()
def ema_update(teacher: nn.Module, student: nn.Module, decay: float) -> None:
    """``theta_t <- decay * theta_t + (1 - decay) * theta_s`` for every parameter and floating buffer.

    Integer buffers (BatchNorm's batch counter) are copied.

    Parameters
    ----------
    teacher, student : nn.Module
        Models of the same architecture.
    decay : float
        In ``[0, 1]``.
    """
    for t, s in zip(teacher.state_dict().values(), student.state_dict().values(), strict=True):
        if t.dtype.is_floating_point:
            t.mul_(decay).add_(s.detach(), alpha=1 - decay)
        else:
            t.copy_(s)


def _check_unit(value: float, name: str, *, closed_low: bool = True) -> float:
    if isinstance(value, bool) or not isinstance(value, numbers.Real) or not (0 <= value <= 1):
        raise ValueError(f"{name} must be a number in [0, 1], got {value!r}")
    return float(value)


def _check_temperature(value: float) -> float:
    if isinstance(value, bool) or not isinstance(value, numbers.Real) or not value > 0:
        raise ValueError(f"T must be a number > 0, got {value!r}")
    return float(value)


@dataclass(frozen=True, kw_only=True)
class LabelSmoothing:
    """Cross-entropy against ``(1 - s) onehot(y) + s / K`` (torch's ``label_smoothing``).

    Parameters
    ----------
    smoothing : float, default 0.1
        ``s`` in ``[0, 1]``.
    """

    smoothing: float = 0.1

    def __post_init__(self) -> None:
        object.__setattr__(self, "smoothing", _check_unit(self.smoothing, "smoothing"))

    def loss(self, logits: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        """The smoothed cross-entropy, averaged over the batch.

        Parameters
        ----------
        logits : Tensor, shape (B, K)
            Student logits.
        y : Tensor of int64, shape (B,)
            Labels.

        Returns
        -------
        Tensor
            The scalar loss.
        """
        return F.cross_entropy(logits, y, label_smoothing=self.smoothing)


@dataclass(frozen=True, kw_only=True)
class SelfDistillation:
    """Soft labels from an EMA copy of the model being trained (the paper's removed variant, reconstructed).

    Parameters
    ----------
    ema : float, default 0.999
        Teacher decay per optimiser step (the official ``1 - decay`` with ``decay = 0.001``).
    T : float, default 1.5
        Temperature.
    lam : float, default 0.8
        Final weight of the soft term.
    ramp : tuple of int, optional
        ``(start, end)`` epochs (0-based) of the linear ramp of the weight; default ``(0, 1)`` (full weight
        from the second epoch). The official CIFAR run used ``(90, 110)`` of 200 epochs.
    """

    ema: float = 0.999
    T: float = 1.5
    lam: float = 0.8
    ramp: tuple[int, int] = (0, 1)

    def __post_init__(self) -> None:
        object.__setattr__(self, "ema", _check_unit(self.ema, "ema"))
        object.__setattr__(self, "T", _check_temperature(self.T))
        object.__setattr__(self, "lam", _check_unit(self.lam, "lam"))
        start, end = self.ramp
        if not (0 <= start < end):
            raise ValueError(f"ramp must be (start, end) epochs with 0 <= start < end, got {self.ramp!r}")

    def weight(self, epoch: int) -> float:
        """The soft-term weight at 0-based ``epoch`` (the official ``lam_schedule``; 0 before ``start``).

        Parameters
        ----------
        epoch : int
            0-based epoch.

        Returns
        -------
        float
            ``lam_t``.
        """
        start, end = self.ramp
        if epoch < start:
            return 0.0
        if epoch > end:
            return self.lam
        return (epoch - start) / (end - start) * self.lam

    def make_teacher(self, model: nn.Module) -> nn.Module:
        """A frozen copy of ``model`` to be updated by :func:`ema_update`.

        Parameters
        ----------
        model : nn.Module
            The student.

        Returns
        -------
        nn.Module
            The teacher, in eval mode with ``requires_grad=False``.
        """
        teacher = copy.deepcopy(model).eval()
        for p in teacher.parameters():
            p.requires_grad_(False)
        return teacher


@dataclass(frozen=True, kw_only=True)
class Distillation:
    """Soft labels from a fixed teacher (e.g. a robust or best checkpoint) on the adversarial example.

    Parameters
    ----------
    teacher : nn.Module
        The teacher (run in eval mode, no gradients).
    T : float, default 1.5
        Temperature.
    lam : float, default 0.8
        Weight of the soft term.
    """

    teacher: nn.Module
    T: float = 1.5
    lam: float = 0.8

    def __post_init__(self) -> None:
        if not isinstance(self.teacher, nn.Module):
            raise TypeError(f"teacher must be a torch.nn.Module, got {type(self.teacher).__name__}")
        object.__setattr__(self, "T", _check_temperature(self.T))
        object.__setattr__(self, "lam", _check_unit(self.lam, "lam"))
