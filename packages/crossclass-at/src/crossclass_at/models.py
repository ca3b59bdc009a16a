"""Models whose last layer is a linear head ``fc`` over penultimate features ``g(x)`` (after ReLU and pooling).

``DigitsMLP`` and ``DigitsCNN`` take scikit-learn's 8 x 8 digits as (batch, 1, 8, 8) in ``[0, 1]``;
``PreActResNet18`` (the paper's CIFAR architecture), ``ResNet18`` and ``WideResNet`` (WRN-34-10 by default)
take 32 x 32 images.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

__all__ = ["DigitsCNN", "DigitsMLP", "PreActResNet18", "ResNet18", "WideResNet"]


class _HeadClassifier(nn.Module):
    """A classifier ``f(x) = fc(g(x))``: subclasses build ``body`` (the features) and ``fc`` (the linear head)."""

    body: nn.Module
    fc: nn.Linear

    def features(self, x: torch.Tensor) -> torch.Tensor:
        """Penultimate features ``g(x)``, the input of the head.

        Parameters
        ----------
        x : Tensor, shape (batch, channels, H, W)
            Inputs (the class docstring gives the sizes it takes).

        Returns
        -------
        Tensor, shape (batch, fc.in_features)
            The features (after the last ReLU and the pooling).
        """
        return self.body(x)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """Logits ``W g(x) + b``.

        Parameters
        ----------
        x : Tensor
            Inputs.

        Returns
        -------
        Tensor, shape (batch, n_classes)
            Logits.
        """
        return self.fc(self.features(x))


class DigitsMLP(_HeadClassifier):
    """Two ReLU layers and a linear head, for (batch, 1, 8, 8) or (batch, 64) inputs.

    Parameters
    ----------
    n_classes : int, default 10
        Rows of the head.
    hidden : int, default 128
        Width of both hidden layers (``g(x)`` has this many features).
    in_features : int, default 64
        Flattened input size.
    """

    def __init__(self, n_classes: int = 10, *, hidden: int = 128, in_features: int = 64) -> None:
        super().__init__()
        self.body = nn.Sequential(nn.Flatten(), nn.Linear(in_features, hidden), nn.ReLU(),
                                   nn.Linear(hidden, hidden), nn.ReLU())
        self.fc = nn.Linear(hidden, n_classes)


class DigitsCNN(_HeadClassifier):
    """Two 3 x 3 convolutions with BatchNorm and ReLU, global average pooling and a linear head.

    Takes (batch, 1, H, W) inputs.

    Parameters
    ----------
    n_classes : int, default 10
        Rows of the head.
    width : int, default 32
        Channels of the second convolution (``g(x)`` has this many features).
    """

    def __init__(self, n_classes: int = 10, *, width: int = 32) -> None:
        super().__init__()
        self.body = nn.Sequential(nn.Conv2d(1, width // 2, 3, padding=1, bias=False), nn.BatchNorm2d(width // 2),
                                   nn.ReLU(), nn.Conv2d(width // 2, width, 3, padding=1, bias=False),
                                   nn.BatchNorm2d(width), nn.ReLU(), nn.AdaptiveAvgPool2d(1), nn.Flatten())
        self.fc = nn.Linear(width, n_classes)


class _PreActBlock(nn.Module):
    """BN-ReLU-conv twice; the shortcut is a 1 x 1 convolution of the activated input when the shape changes."""

    def __init__(self, in_planes: int, planes: int, stride: int) -> None:
        super().__init__()
        self.bn1 = nn.BatchNorm2d(in_planes)
        self.conv1 = nn.Conv2d(in_planes, planes, 3, stride=stride, padding=1, bias=False)
        self.bn2 = nn.BatchNorm2d(planes)
        self.conv2 = nn.Conv2d(planes, planes, 3, stride=1, padding=1, bias=False)
        self.shortcut = None
        if stride != 1 or in_planes != planes:
            self.shortcut = nn.Conv2d(in_planes, planes, 1, stride=stride, bias=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        out = F.relu(self.bn1(x))
        shortcut = self.shortcut(out) if self.shortcut is not None else x
        out = self.conv1(out)
        out = self.conv2(F.relu(self.bn2(out)))
        return out + shortcut


class _BasicBlock(nn.Module):
    """conv-BN-ReLU-conv-BN plus the shortcut (1 x 1 convolution and BN when the shape changes), then ReLU."""

    def __init__(self, in_planes: int, planes: int, stride: int) -> None:
        super().__init__()
        self.conv1 = nn.Conv2d(in_planes, planes, 3, stride=stride, padding=1, bias=False)
        self.bn1 = nn.BatchNorm2d(planes)
        self.conv2 = nn.Conv2d(planes, planes, 3, stride=1, padding=1, bias=False)
        self.bn2 = nn.BatchNorm2d(planes)
        self.shortcut: nn.Module = nn.Identity()
        if stride != 1 or in_planes != planes:
            self.shortcut = nn.Sequential(nn.Conv2d(in_planes, planes, 1, stride=stride, bias=False),
                                          nn.BatchNorm2d(planes))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        out = F.relu(self.bn1(self.conv1(x)))
        return F.relu(self.bn2(self.conv2(out)) + self.shortcut(x))


def _stages(block: type[nn.Module], in_planes: int, widths: tuple[int, ...], strides: tuple[int, ...],
            blocks: int) -> nn.Sequential:
    """Residual stages: ``blocks`` blocks of each width, the first of a stage with that stage's stride."""
    layers: list[nn.Module] = []
    for planes, stride in zip(widths, strides, strict=True):
        layers.append(nn.Sequential(*[block(in_planes if b == 0 else planes, planes, stride if b == 0 else 1)
                                      for b in range(blocks)]))
        in_planes = planes
    return nn.Sequential(*layers)


def _check_width(name: str, value: int) -> int:
    if not isinstance(value, int) or isinstance(value, bool) or value < 1:
        raise ValueError(f"{name} must be a positive int, got {value!r}")
    return value


class PreActResNet18(_HeadClassifier):
    """Pre-activation ResNet-18 (He et al., 2016), the paper's CIFAR model; ``g(x)`` is ReLU(BN(.)) then pooling.

    Takes (batch, in_channels, 32, 32) inputs; ``g(x)`` has ``8 * width`` features (512 by default).

    Parameters
    ----------
    n_classes : int, default 10
        Rows of the head (10 for CIFAR-10, 100 for CIFAR-100).
    in_channels : int, default 3
        Input channels.
    width : int, default 64
        Channels of the first stage (the stages have width, 2, 4 and 8 times width); small values are for tests.
    """

    def __init__(self, n_classes: int = 10, *, in_channels: int = 3, width: int = 64) -> None:
        super().__init__()
        w = _check_width("width", width)
        self.body = nn.Sequential(nn.Conv2d(in_channels, w, 3, stride=1, padding=1, bias=False),
                                   _stages(_PreActBlock, w, (w, 2 * w, 4 * w, 8 * w), (1, 2, 2, 2), 2),
                                   nn.BatchNorm2d(8 * w), nn.ReLU(), nn.AdaptiveAvgPool2d(1), nn.Flatten())
        self.fc = nn.Linear(8 * w, n_classes)


class ResNet18(_HeadClassifier):
    """ResNet-18 for 32 x 32 images (3 x 3 stem, no max-pool, as in the CIFAR adversarial-training literature).

    Takes (batch, in_channels, 32, 32) inputs; ``g(x)`` is the average-pooled output of the last stage,
    ``8 * width`` features (512 by default).

    Parameters
    ----------
    n_classes : int, default 10
        Rows of the head.
    in_channels : int, default 3
        Input channels.
    width : int, default 64
        Channels of the first stage (the stages have width, 2, 4 and 8 times width).
    """

    def __init__(self, n_classes: int = 10, *, in_channels: int = 3, width: int = 64) -> None:
        super().__init__()
        w = _check_width("width", width)
        self.body = nn.Sequential(nn.Conv2d(in_channels, w, 3, stride=1, padding=1, bias=False), nn.BatchNorm2d(w),
                                   nn.ReLU(), _stages(_BasicBlock, w, (w, 2 * w, 4 * w, 8 * w), (1, 2, 2, 2), 2),
                                   nn.AdaptiveAvgPool2d(1), nn.Flatten())
        self.fc = nn.Linear(8 * w, n_classes)


class WideResNet(_HeadClassifier):
    """Wide ResNet (Zagoruyko and Komodakis, 2016) for 32 x 32 images; WRN-34-10 by default.

    Three stages of ``(depth - 4) / 6`` pre-activation blocks with 16k, 32k and 64k channels (k the widen
    factor), strides 1, 2, 2, then BN, ReLU and average pooling: ``g(x)`` has ``64 k`` features (640 for
    WRN-34-10). No dropout (the adversarial-training recipes use none).

    Parameters
    ----------
    n_classes : int, default 10
        Rows of the head.
    depth : int, default 34
        Total depth; ``depth - 4`` must be a positive multiple of 6.
    widen_factor : int, default 10
        k.
    in_channels : int, default 3
        Input channels.
    """

    def __init__(self, n_classes: int = 10, *, depth: int = 34, widen_factor: int = 10, in_channels: int = 3) -> None:
        super().__init__()
        if not isinstance(depth, int) or depth < 10 or (depth - 4) % 6:
            raise ValueError(f"depth must be 6 n + 4 with n >= 1 (10, 16, 22, 28, 34, ...), got {depth!r}")
        k = _check_width("widen_factor", widen_factor)
        self.body = nn.Sequential(nn.Conv2d(in_channels, 16, 3, stride=1, padding=1, bias=False),
                                   _stages(_PreActBlock, 16, (16 * k, 32 * k, 64 * k), (1, 2, 2), (depth - 4) // 6),
                                   nn.BatchNorm2d(64 * k), nn.ReLU(), nn.AdaptiveAvgPool2d(1), nn.Flatten())
        self.fc = nn.Linear(64 * k, n_classes)
