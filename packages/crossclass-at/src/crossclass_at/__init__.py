"""Class-wise feature attribution and the cross-class score (CAS) across adversarial training.

Attacks matching torchattacks (:mod:`crossclass_at.attacks`), the paper's attribution matrix, correlation
matrix and CAS (:mod:`crossclass_at.attribution`) and small models with a linear head
(:mod:`crossclass_at.models`). Nothing heavy is imported here: the names load their module (and torch) on first use.
"""

from importlib import import_module
from importlib.metadata import PackageNotFoundError, version
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from crossclass_at.attacks import FGSM, PGD, Normalized, TradesKL, autoattack_accuracy, bn_mode, robust_accuracy
    from crossclass_at.attribution import CASMonitor, cas, class_attribution, correlation_matrix, find_head
    from crossclass_at.cifar import CifarPreset, cifar_preset, load_cifar
    from crossclass_at.losses import Distillation, LabelSmoothing, SelfDistillation, ema_update, trades_loss
    from crossclass_at.models import DigitsCNN, DigitsMLP, PreActResNet18, ResNet18, WideResNet
    from crossclass_at.trainer import AdversarialTrainer

# torch loads on first use, so that ``import crossclass_at`` and ``python -m crossclass_at --help`` stay fast
_MODULES = {
    "attacks": ("FGSM", "PGD", "Normalized", "TradesKL", "autoattack_accuracy", "bn_mode", "robust_accuracy"),
    "attribution": ("CASMonitor", "cas", "class_attribution", "correlation_matrix", "find_head"),
    "cifar": ("CifarPreset", "cifar_preset", "load_cifar"),
    "losses": ("Distillation", "LabelSmoothing", "SelfDistillation", "ema_update", "trades_loss"),
    "models": ("DigitsCNN", "DigitsMLP", "PreActResNet18", "ResNet18", "WideResNet"),
    "trainer": ("AdversarialTrainer",),
}
_LAZY = {name: module for module, names in _MODULES.items() for name in names}


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        value = getattr(import_module(f"crossclass_at.{_LAZY[name]}"), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'crossclass_at' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_LAZY))


try:
    __version__ = version("crossclass-at")
except PackageNotFoundError:  # source tree without install
    __version__ = "0.0.0"

__all__ = [
    "FGSM",
    "AdversarialTrainer",
    "Distillation",
    "LabelSmoothing",
    "SelfDistillation",
    "PGD",
    "CASMonitor",
    "CifarPreset",
    "DigitsCNN",
    "DigitsMLP",
    "Normalized",
    "PreActResNet18",
    "ResNet18",
    "TradesKL",
    "WideResNet",
    "__version__",
    "autoattack_accuracy",
    "bn_mode",
    "cas",
    "cifar_preset",
    "class_attribution",
    "correlation_matrix",
    "find_head",
    "load_cifar",
    "ema_update",
    "robust_accuracy",
    "trades_loss",
]
