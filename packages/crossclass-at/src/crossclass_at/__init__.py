"""Class-wise feature attribution and the cross-class score (CAS) across adversarial training.

Attacks matching torchattacks (:mod:`crossclass_at.attacks`), the paper's attribution matrix, correlation
matrix and CAS (:mod:`crossclass_at.attribution`) and small models with a linear head
(:mod:`crossclass_at.models`). Nothing heavy is imported here beyond torch.
"""

from importlib.metadata import PackageNotFoundError, version

from crossclass_at.attacks import FGSM, PGD, Normalized, TradesKL, autoattack_accuracy, bn_mode, robust_accuracy
from crossclass_at.attribution import CASMonitor, cas, class_attribution, correlation_matrix, find_head
from crossclass_at.cifar import CifarPreset, cifar_preset, load_cifar
from crossclass_at.losses import Distillation, LabelSmoothing, SelfDistillation, ema_update, trades_loss
from crossclass_at.models import DigitsCNN, DigitsMLP, PreActResNet18, ResNet18, WideResNet
from crossclass_at.trainer import AdversarialTrainer

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
