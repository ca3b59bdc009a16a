"""Models whose last layer is a linear head ``fc`` over penultimate features ``g(x)`` (after ReLU and pooling).

``DigitsMLP`` and ``DigitsCNN`` take scikit-learn's 8 x 8 digits as (batch, 1, 8, 8) in ``[0, 1]``;
``PreActResNet18`` is the paper's CIFAR architecture (He et al., 2016), for 32 x 32 inputs.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

__all__ = ["DigitsCNN", "DigitsMLP", "PreActResNet18"]


class DigitsMLP(nn.Module):
    """Two ReLU layers and a linear head.

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

    def features(self, x: torch.Tensor) -> torch.Tensor:
        """Penultimate features ``g(x)``, shape (batch, hidden).

        Parameters
        ----------
        x : Tensor, shape (batch, 1, 8, 8) or (batch, 64)
            Inputs.

        Returns
        -------
        Tensor
            The features the head reads.
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


class DigitsCNN(nn.Module):
    """Two 3 x 3 convolutions with BatchNorm and ReLU, global average pooling and a linear head.

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

    def features(self, x: torch.Tensor) -> torch.Tensor:
        """Penultimate features ``g(x)``, shape (batch, width).

        Parameters
        ----------
        x : Tensor, shape (batch, 1, H, W)
            Inputs.

        Returns
        -------
        Tensor
            Pooled features.
        """
        return self.body(x)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """Logits.

        Parameters
        ----------
        x : Tensor, shape (batch, 1, H, W)
            Inputs.

        Returns
        -------
        Tensor, shape (batch, n_classes)
            Logits.
        """
        return self.fc(self.features(x))


class _PreActBlock(nn.Module):
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


class PreActResNet18(nn.Module):
    """Pre-activation ResNet-18 for 32 x 32 images; ``g(x)`` is ReLU(BN(.)) then average pooling (512 features).

    Parameters
    ----------
    n_classes : int, default 10
        Rows of the head (10 for CIFAR-10, 100 for CIFAR-100).
    in_channels : int, default 3
        Input channels.
    """

    def __init__(self, n_classes: int = 10, *, in_channels: int = 3) -> None:
        super().__init__()
        self.conv1 = nn.Conv2d(in_channels, 64, 3, stride=1, padding=1, bias=False)
        layers, in_planes = [], 64
        for planes, stride in ((64, 1), (128, 2), (256, 2), (512, 2)):
            layers.append(nn.Sequential(_PreActBlock(in_planes, planes, stride), _PreActBlock(planes, planes, 1)))
            in_planes = planes
        self.layer1, self.layer2, self.layer3, self.layer4 = layers
        self.bn = nn.BatchNorm2d(512)
        self.fc = nn.Linear(512, n_classes)

    def features(self, x: torch.Tensor) -> torch.Tensor:
        """Penultimate features ``g(x)``, shape (batch, 512).

        Parameters
        ----------
        x : Tensor, shape (batch, in_channels, 32, 32)
            Inputs.

        Returns
        -------
        Tensor
            Pooled features.
        """
        out = self.layer4(self.layer3(self.layer2(self.layer1(self.conv1(x)))))
        out = F.relu(self.bn(out))
        return F.adaptive_avg_pool2d(out, 1).flatten(1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """Logits.

        Parameters
        ----------
        x : Tensor, shape (batch, in_channels, 32, 32)
            Inputs.

        Returns
        -------
        Tensor, shape (batch, n_classes)
            Logits.
        """
        return self.fc(self.features(x))
