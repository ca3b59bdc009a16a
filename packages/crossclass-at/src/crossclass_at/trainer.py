"""Adversarial training: PGD-AT (Madry et al.), TRADES (Zhang et al.) or standard training, with soft labels.

The paper's recipe: SGD with lr 0.1, momentum 0.9, weight decay 5e-4, the learning rate divided by 10 at
50% and 75% of the epochs; PGD-10 at ``alpha = eps / 4`` with a random start for training; clean and
PGD-20 robust accuracy on a held-out split after every epoch; the best checkpoint is the one with the
highest held-out robust accuracy. The training attack of PGD-AT runs with the model in train mode
(BatchNorm batch statistics), TRADES' in eval mode, as the official code does (``attack_bn_mode``).
"""

from __future__ import annotations

import copy
import logging
import math
import time
from collections.abc import Callable, Sequence
from typing import Any

import torch
import torch.nn.functional as F
from icml25_shared.cli import progress as _progress
from icml25_shared.random import RandomStateLike, check_random_state, spawn
from icml25_shared.validation import Interval, Options, check_params
from sklearn.exceptions import NotFittedError
from torch import nn

from crossclass_at.attacks import (
    BN_MODES,
    NORMS,
    PGD,
    TradesKL,
    bn_mode,
    check_unit_range,
    generator_on,
    robust_accuracy,
    warn_implausible_budget,
)
from crossclass_at.losses import (
    Distillation,
    LabelSmoothing,
    SelfDistillation,
    distillation_loss,
    ema_update,
    trades_loss,
)

__all__ = ["METHODS", "AdversarialTrainer"]

METHODS = ("pgd-at", "trades", "standard")
logger = logging.getLogger(__name__)


class AdversarialTrainer:
    """Train ``model`` adversarially and keep its best (held-out robust accuracy) and last checkpoints.

    Parameters
    ----------
    model : nn.Module
        Classifier over inputs in ``[0, 1]`` (wrap normalised models in :class:`~crossclass_at.Normalized`);
        trained in place.
    method : {"pgd-at", "trades", "standard"}, default "pgd-at"
        Training objective.
    soft_labels : LabelSmoothing, SelfDistillation, Distillation or None
        Soft-label target for ``"pgd-at"`` and ``"standard"`` (None: one-hot cross-entropy).
    eps : float, default 8/255
        Attack radius for training and evaluation.
    alpha : float, optional
        Training step size (default ``eps / 4`` in l-inf, ``eps / 8`` in l2).
    steps : int, default 10
        Training attack steps.
    norm : {"linf", "l2"}, default "linf"
        Threat model (TRADES supports ``"linf"``).
    beta : float, default 6.0
        TRADES' weight of the KL term.
    epochs : int, default 10
        Training epochs.
    batch_size : int, default 128
        Minibatch size.
    lr, momentum, weight_decay : float, default 0.1, 0.9, 5e-4
        SGD settings.
    milestones : sequence of float, default (0.5, 0.75)
        Fractions of ``epochs`` after which the learning rate is divided by 10.
    eval_steps : int, default 20
        Steps of the held-out PGD evaluation (step ``eps / 4`` in l-inf, ``eps / 8`` in l2, random start).
    attack_bn_mode : {"eval", "train", "keep"}, optional
        Mode of the model while the training attack runs; default ``"train"`` for PGD-AT, ``"eval"`` for TRADES.
    augment : callable, optional
        ``augment(x_batch, generator) -> x_batch`` applied to each training batch before the attack (e.g.
        :func:`crossclass_at.cifar.cifar_augment`), drawing from its own random stream; must return the batch's shape in ``[0, 1]`` (checked).
    callbacks : sequence, default ()
        Objects with an ``on_epoch_end(trainer, record)`` method (e.g. :class:`~crossclass_at.CASMonitor`).
    device : str or torch.device, optional
        Where to train (default: where the model's parameters are).
    progress : bool, default False
        Show a tqdm bar over epochs.
    random_state : None, int or numpy Generator, default None
        Source of the shuffling, the training attack's and the evaluation attack's random starts (three
        independent streams). The model's initial weights are the caller's.

    Attributes
    ----------
    history_ : list of dict
        One row per epoch: ``epoch`` (1-based), ``lr``, ``train_loss``, ``train_accuracy`` (on the training
        inputs the model was fit on: adversarial for PGD-AT), ``clean_accuracy``, ``robust_accuracy``,
        ``seconds``, plus what callbacks add.
    best_epoch_ : int
        The epoch with the highest held-out robust accuracy (the first of ties).
    best_state_dict_, last_state_dict_ : dict
        Copies of the model's weights at the best and the last epoch.

    Examples
    --------
    >>> import torch
    >>> from crossclass_at import AdversarialTrainer, DigitsMLP
    >>> from crossclass_at.data import load_digits_split
    >>> d = load_digits_split(random_state=0)
    >>> _ = torch.manual_seed(0)
    >>> trainer = AdversarialTrainer(DigitsMLP(hidden=32), eps=0.1, steps=3, epochs=2, lr=0.05, eval_steps=5,
    ...                              random_state=0).fit(d.x_train, d.y_train, d.x_val, d.y_val)
    >>> len(trainer.history_), trainer.best_epoch_ in (1, 2)
    (2, True)
    """

    def __init__(self, model: nn.Module, *, method: str = "pgd-at",
                 soft_labels: LabelSmoothing | SelfDistillation | Distillation | None = None, eps: float = 8 / 255,
                 alpha: float | None = None, steps: int = 10, norm: str = "linf", beta: float = 6.0,
                 epochs: int = 10, batch_size: int = 128, lr: float = 0.1, momentum: float = 0.9,
                 weight_decay: float = 5e-4, milestones: Sequence[float] = (0.5, 0.75), eval_steps: int = 20,
                 attack_bn_mode: str | None = None, augment: Callable[..., torch.Tensor] | None = None,
                 callbacks: Sequence[Any] = (),
                 device: str | torch.device | None = None, progress: bool = False,
                 random_state: RandomStateLike = None) -> None:
        self.model = model
        self.method = method
        self.soft_labels = soft_labels
        self.eps = eps
        self.alpha = alpha
        self.steps = steps
        self.norm = norm
        self.beta = beta
        self.epochs = epochs
        self.batch_size = batch_size
        self.lr = lr
        self.momentum = momentum
        self.weight_decay = weight_decay
        self.milestones = milestones
        self.eval_steps = eval_steps
        self.attack_bn_mode = attack_bn_mode
        self.augment = augment
        self.callbacks = callbacks
        self.device = device
        self.progress = progress
        self.random_state = random_state

    _parameter_constraints: dict = {
        "method": [Options(str, set(METHODS))],
        "norm": [Options(str, set(NORMS))],
        "eps": [Interval(float, 0, math.inf, closed="left")],
        "alpha": [None, Interval(float, 0, math.inf, closed="neither")],
        "steps": [Interval(int, 1, None)],
        "epochs": [Interval(int, 1, None)],
        "batch_size": [Interval(int, 1, None)],
        "eval_steps": [Interval(int, 1, None)],
        "lr": [Interval(float, 0, math.inf, closed="neither")],
        "beta": [Interval(float, 0, math.inf, closed="left")],
        "momentum": [Interval(float, 0, math.inf, closed="left")],
        "weight_decay": [Interval(float, 0, math.inf, closed="left")],
        "milestones": [list, tuple],
        "attack_bn_mode": [None, Options(str, set(BN_MODES))],
        "augment": [None, "callable"],
        "progress": ["boolean"],
        "random_state": ["random_state"],
    }

    def _validate(self) -> None:
        if not isinstance(self.model, nn.Module):
            raise TypeError(f"model must be a torch.nn.Module, got {type(self.model).__name__}")
        if self.soft_labels is not None:
            if not isinstance(self.soft_labels, (LabelSmoothing, SelfDistillation, Distillation)):
                raise TypeError(f"soft_labels must be None, LabelSmoothing, SelfDistillation or Distillation, got "
                                f"{type(self.soft_labels).__name__}")
            if self.method == "trades":
                raise ValueError("soft_labels apply to method='pgd-at' and 'standard'; TRADES has its own soft target")
        check_params({name: getattr(self, name) for name in self._parameter_constraints}, self._parameter_constraints,
                     owner="AdversarialTrainer")
        if self.method == "trades" and self.norm != "linf":
            raise ValueError("AdversarialTrainer: method='trades' supports norm='linf' only")
        if any(not 0 < float(m) <= 1 for m in self.milestones):
            raise ValueError(f"AdversarialTrainer: milestones must be fractions of the epochs in (0, 1]; got "
                             f"{tuple(self.milestones)!r}")
        for cb in self.callbacks:
            if not callable(getattr(cb, "on_epoch_end", None)):
                raise TypeError(f"callback {cb!r} has no on_epoch_end(trainer, record) method")

    @staticmethod
    def _check_data(x: torch.Tensor, y: torch.Tensor, n_classes: int | None, name: str) -> None:
        if not torch.is_tensor(x) or not torch.is_tensor(y) or len(x) != len(y) or len(x) == 0:
            raise ValueError(f"{name}: x and y must be non-empty tensors of equal length")
        check_unit_range(x, f"x_{name}" if name != "train" else "x")
        if y.is_floating_point() or y.is_complex() or y.dtype == torch.bool:
            raise TypeError(f"{name} labels must be integer class labels (int64), got dtype "
                            f"{str(y.dtype).removeprefix('torch.')}; convert integer-valued labels with y.long()")
        if n_classes is not None and (int(y.min()) < 0 or int(y.max()) >= n_classes):
            raise ValueError(f"{name} labels must lie in 0..{n_classes - 1} (the model's head has {n_classes} "
                             f"outputs), got {int(y.min())}..{int(y.max())}")

    def _augmented(self, xb: torch.Tensor, generator: torch.Generator | None) -> torch.Tensor:
        out = self.augment(xb, generator)  # type: ignore[misc]
        if not torch.is_tensor(out) or out.shape != xb.shape:
            raise ValueError(f"augment must return a tensor of the batch's shape {tuple(xb.shape)}, got "
                             f"{tuple(out.shape) if torch.is_tensor(out) else type(out).__name__}")
        lo, hi = float(out.min()), float(out.max())
        if lo < 0.0 or hi > 1.0 or lo != lo or hi != hi:
            raise ValueError(f"augment returned values in [{lo:.4g}, {hi:.4g}]; it must keep inputs in [0, 1] (put a "
                             "normalisation inside the model, e.g. Normalized(model, mean, std))")
        return out

    def train_attack(self) -> PGD | TradesKL | None:
        """The attack that crafts training inputs (None for standard training).

        Returns
        -------
        PGD, TradesKL or None
            The configured attack.
        """
        if self.method == "standard":
            return None
        if self.method == "trades":
            return TradesKL(eps=self.eps, alpha=self.alpha, steps=self.steps, bn_mode=self.attack_bn_mode or "eval")
        return PGD(eps=self.eps, alpha=self.alpha, steps=self.steps, norm=self.norm,
                   bn_mode=self.attack_bn_mode or "train")

    def eval_attack(self) -> PGD:
        """The held-out evaluation attack: PGD-``eval_steps`` at the default step, random start, eval mode.

        Returns
        -------
        PGD
            The attack.
        """
        return PGD(eps=self.eps, steps=self.eval_steps, norm=self.norm)

    def fit(self, x: torch.Tensor, y: torch.Tensor, x_val: torch.Tensor, y_val: torch.Tensor) -> AdversarialTrainer:
        """Train for ``epochs`` epochs, evaluating on ``(x_val, y_val)`` after each.

        Parameters
        ----------
        x : Tensor, shape (n, ...)
            Training inputs in ``[0, 1]``.
        y : Tensor of int64, shape (n,)
            Training labels.
        x_val, y_val : Tensor
            Held-out split for the clean and robust accuracy that selects the best checkpoint.

        Returns
        -------
        AdversarialTrainer
            ``self``.
        """
        self._validate()
        model = self.model
        device = torch.device(self.device) if self.device is not None else next(model.parameters()).device
        model.to(device)
        if not any(p.requires_grad for p in model.parameters()):
            raise ValueError("the model has no trainable parameters (every requires_grad is False)")
        with bn_mode(model, "eval"), torch.no_grad():  # a shape probe: no BatchNorm statistics change
            out = model(x[:2].to(device)) if torch.is_tensor(x) and len(x) else None
        n_classes = int(out.shape[1]) if out is not None and out.dim() == 2 else None
        self._check_data(x, y, n_classes, "train")
        self._check_data(x_val, y_val, n_classes, "val")
        y, y_val = y.long(), y_val.long()
        rng = check_random_state(self.random_state)
        seeds = [int(g.integers(2**62)) for g in spawn(rng, 3 if self.augment is None else 4)]
        if self.method != "standard":
            warn_implausible_budget(self.eps, self.alpha, self.norm, x, owner="AdversarialTrainer")
        shuffle = torch.Generator(device="cpu").manual_seed(seeds[0])  # permutes indices of x, which stays on the CPU
        attack_gen = generator_on(device, seeds[1])  # every draw into a batch happens on the model's device
        augment_gen = generator_on(device, seeds[3]) if self.augment is not None else None
        attack, evaluator = self.train_attack(), self.eval_attack()
        opt = torch.optim.SGD(model.parameters(), lr=self.lr, momentum=self.momentum, weight_decay=self.weight_decay)
        steps_at = sorted({max(1, int(round(float(m) * self.epochs))) for m in self.milestones})
        sched = torch.optim.lr_scheduler.MultiStepLR(opt, milestones=steps_at, gamma=0.1)
        soft = self.soft_labels
        teacher = soft.make_teacher(model) if isinstance(soft, SelfDistillation) else None
        if isinstance(soft, Distillation):
            teacher = soft.teacher.to(device).eval()
        self.history_: list[dict[str, Any]] = []
        best = -1.0
        for epoch in _progress(range(self.epochs), enabled=self.progress, desc=f"{self.method}", total=self.epochs):
            start = time.perf_counter()
            model.train()
            total_loss, correct, seen = 0.0, 0, 0
            lam = soft.weight(epoch) if isinstance(soft, SelfDistillation) else getattr(soft, "lam", 0.0)
            for idx in torch.randperm(len(x), generator=shuffle).split(self.batch_size):
                xb, yb = x[idx].to(device), y[idx].to(device)
                if self.augment is not None:
                    xb = self._augmented(xb, augment_gen)
                inputs = xb if attack is None else attack(model, xb, yb, generator=attack_gen)
                model.train()
                if self.method == "trades":
                    logits_clean, logits = model(xb), model(inputs)
                    loss = trades_loss(logits_clean, logits, yb, beta=self.beta)
                else:
                    logits = model(inputs)
                    if isinstance(soft, LabelSmoothing):
                        loss = soft.loss(logits, yb)
                    elif teacher is not None and lam > 0:
                        assert isinstance(soft, (SelfDistillation, Distillation))  # a teacher comes from soft labels
                        with torch.no_grad():
                            teacher_logits = teacher(inputs)
                        loss = distillation_loss(logits, teacher_logits, yb, temperature=soft.T, lam=lam)
                    else:
                        loss = F.cross_entropy(logits, yb)
                opt.zero_grad(set_to_none=True)
                loss.backward()
                opt.step()
                if isinstance(soft, SelfDistillation):
                    assert teacher is not None  # make_teacher above
                    ema_update(teacher, model, soft.ema)
                total_loss += float(loss.detach()) * len(idx)
                correct += int((logits.argmax(1) == yb).sum())
                seen += len(idx)
            lr = opt.param_groups[0]["lr"]
            sched.step()
            eval_gen = generator_on(device, seeds[2])  # the same starts every epoch
            record = {"epoch": epoch + 1, "lr": lr, "train_loss": total_loss / seen, "train_accuracy": correct / seen,
                      "clean_accuracy": robust_accuracy(model, x_val, y_val),
                      "robust_accuracy": robust_accuracy(model, x_val, y_val, evaluator, generator=eval_gen)}
            if record["robust_accuracy"] > best:
                best = record["robust_accuracy"]
                self.best_epoch_ = epoch + 1
                self.best_state_dict_ = copy.deepcopy(model.state_dict())
            for cb in self.callbacks:
                cb.on_epoch_end(self, record)
            record["seconds"] = time.perf_counter() - start
            self.history_.append(record)
            logger.info("epoch %d: %s", epoch + 1, record)
        self.last_state_dict_ = copy.deepcopy(model.state_dict())
        model.eval()
        return self

    def best_model(self) -> nn.Module:
        """A copy of the model holding the best checkpoint's weights.

        Returns
        -------
        nn.Module
            In eval mode.
        """
        if not hasattr(self, "best_state_dict_"):
            raise NotFittedError("This AdversarialTrainer is not fitted yet; call fit(x, y, x_val, y_val) first")
        best = copy.deepcopy(self.model)
        best.load_state_dict(self.best_state_dict_)
        return best.eval()
