"""CIFAR-10/100 from a local folder in torchvision's on-disk format, the training augmentation, and the paper's presets.

Nothing is downloaded: point :func:`load_cifar` at the folder that ``torchvision.datasets.CIFAR10(root,
download=True)`` fills (``root/cifar-10-batches-py``; CIFAR-100: ``root/cifar-100-python``). The files are
Python pickles, read as torchvision reads them (``pickle.load(..., encoding="latin1")``): load only files
you trust. The presets are GPU recipes; on a CPU use them with small models or few epochs.
"""

from __future__ import annotations

import pickle
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

__all__ = ["CIFAR_PRESETS", "CifarPreset", "cifar_augment", "cifar_preset", "load_cifar"]

_LAYOUT = {
    "cifar10": ("cifar-10-batches-py", [f"data_batch_{i}" for i in range(1, 6)], ["test_batch"], "labels", 10),
    "cifar100": ("cifar-100-python", ["train"], ["test"], "fine_labels", 100),
}


def load_cifar(root: str | Path, *, dataset: str = "cifar10", train: bool = True) -> tuple[torch.Tensor, torch.Tensor]:
    """Read CIFAR-10 or CIFAR-100 from torchvision's folder layout (no download, no torchvision needed).

    Parameters
    ----------
    root : path-like
        The folder holding ``cifar-10-batches-py`` (or ``cifar-100-python``), as passed to torchvision.
    dataset : {"cifar10", "cifar100"}, default "cifar10"
        Which set (CIFAR-100 uses its 100 fine labels).
    train : bool, default True
        The training batches (50 000 images) or the test batch (10 000).

    Returns
    -------
    x : Tensor of float32, shape (n, 3, 32, 32)
        Pixels / 255, in ``[0, 1]``.
    y : Tensor of int64, shape (n,)
        Labels in ``0..K-1``.

    Raises
    ------
    TypeError
        For a ``train`` that is not a bool (``"test"`` would read as true).
    ValueError
        For an unknown ``dataset``, a batch whose data is not n x 3072 integers in ``0..255``, labels that
        are not integers, do not match the data's length or lie outside ``0..K-1``.
    FileNotFoundError
        When a batch file is missing (the message names it).
    """
    if dataset not in _LAYOUT:
        raise ValueError(f"dataset must be one of {sorted(_LAYOUT)}, got {dataset!r}")
    if not isinstance(train, (bool, np.bool_)):
        raise TypeError(f"train must be True or False, got {train!r}")
    folder, train_files, test_files, label_key, k = _LAYOUT[dataset]
    base = Path(root) / folder
    xs, ys = [], []
    for name in train_files if train else test_files:
        path = base / name
        if not path.is_file():
            raise FileNotFoundError(f"{path} not found: expected torchvision's {dataset} layout under {Path(root)} "
                                    f"(fetch it once elsewhere with torchvision.datasets."
                                    f"{'CIFAR10' if dataset == 'cifar10' else 'CIFAR100'}(root, download=True))")
        with open(path, "rb") as f:
            entry: dict[str, Any] = pickle.load(f, encoding="latin1")
        if "data" not in entry or label_key not in entry:
            raise ValueError(f"{path}: expected the keys 'data' and {label_key!r}, got {sorted(entry)}")
        raw, raw_labels = np.asarray(entry["data"]), np.asarray(entry[label_key])
        # a cast would wrap or truncate without a word: pixels already divided by 255 would read as zeros
        if raw.dtype.kind not in "iub" or (raw.size and (raw.min() < 0 or raw.max() > 255)):
            raise ValueError(f"{path}: data must hold integer bytes in 0..255, got dtype {raw.dtype}"
                             + (f" with values in {raw.min()}..{raw.max()}" if raw.size and raw.dtype.kind in "iufb" else ""))
        if raw_labels.size and raw_labels.dtype.kind not in "iu":
            raise ValueError(f"{path}: labels must be integers, got dtype {raw_labels.dtype}")
        data = raw.astype(np.uint8)
        labels = raw_labels.astype(np.int64)
        if data.ndim != 2 or data.shape[1] != 3 * 32 * 32:
            raise ValueError(f"{path}: data must be (n, 3072) uint8 rows, got shape {data.shape}")
        if labels.shape != (len(data),):
            raise ValueError(f"{path}: {len(labels)} labels for {len(data)} images")
        if len(labels) and (labels.min() < 0 or labels.max() >= k):
            raise ValueError(f"{path}: labels must lie in 0..{k - 1}, got {labels.min()}..{labels.max()}")
        xs.append(data.reshape(-1, 3, 32, 32))
        ys.append(labels)
    x = torch.from_numpy(np.concatenate(xs)).float().div_(255.0)
    return x, torch.from_numpy(np.concatenate(ys))


def cifar_augment(x: torch.Tensor, generator: torch.Generator | None = None, *, padding: int = 4) -> torch.Tensor:
    """The CIFAR training augmentation: random crop after reflect padding, and a random horizontal flip.

    Parameters
    ----------
    x : Tensor, shape (batch, C, H, W)
        Images.
    generator : torch.Generator, optional
        Source of the crops and flips (on ``x``'s device).
    padding : int, default 4
        Pixels of reflect padding on each side.

    Returns
    -------
    Tensor
        Augmented images, same shape.

    Examples
    --------
    >>> import torch
    >>> x = torch.rand(5, 3, 32, 32)
    >>> cifar_augment(x, torch.Generator().manual_seed(0)).shape
    torch.Size([5, 3, 32, 32])
    """
    if x.dim() != 4:
        raise ValueError(f"x must be (batch, C, H, W), got shape {tuple(x.shape)}")
    if not isinstance(padding, int) or padding < 0 or padding >= min(x.shape[-2:]):
        raise ValueError(f"padding must be an int in [0, {min(x.shape[-2:]) - 1}], got {padding!r}")
    n, c, h, w = x.shape
    padded = F.pad(x, (padding,) * 4, mode="reflect") if padding else x
    dy = torch.randint(0, 2 * padding + 1, (n,), generator=generator, device=x.device)
    dx = torch.randint(0, 2 * padding + 1, (n,), generator=generator, device=x.device)
    rows = dy[:, None] + torch.arange(h, device=x.device)  # (n, h) rows of the padded image
    cols = dx[:, None] + torch.arange(w, device=x.device)
    out = padded.gather(2, rows[:, None, :, None].expand(n, c, h, padded.shape[-1]))
    out = out.gather(3, cols[:, None, None, :].expand(n, c, h, w))
    flip = torch.rand(n, generator=generator, device=x.device) < 0.5
    return torch.where(flip[:, None, None, None], out.flip(-1), out)


@dataclass(frozen=True)
class CifarPreset:
    """A CIFAR adversarial-training recipe: the model to build and the :class:`AdversarialTrainer` settings.

    Attributes
    ----------
    name : str
        Preset name.
    dataset : str
        ``"cifar10"`` or ``"cifar100"``.
    model : callable
        ``model(n_classes) -> nn.Module``.
    trainer : dict
        Keyword arguments of :class:`~crossclass_at.AdversarialTrainer` (augmentation included).
    attribution_eps : float
        The radius of the attribution attack, in the preset's norm (``trainer["norm"]``); use
        :meth:`attribution_attack`, which carries that norm.
    mean, std : tuple of float
        The dataset's per-channel statistics, with which the official training script normalises the
        model's inputs; :meth:`build` puts that normalisation inside the model.
    """

    name: str
    dataset: str
    model: Callable[..., nn.Module]
    trainer: dict[str, Any]
    attribution_eps: float
    mean: tuple[float, ...] = ()
    std: tuple[float, ...] = ()

    def build(self, **model_kwargs: Any) -> nn.Module:
        """The preset's model for its dataset, normalising its ``[0, 1]`` inputs as the official script does.

        Parameters
        ----------
        **model_kwargs
            Passed to the model class (e.g. ``width=`` for a small ResNet).

        Returns
        -------
        Normalized
            ``Normalized(model(n_classes, **model_kwargs), mean, std)``: attacks and the trainer keep working
            in pixel scale; the head is ``.model.fc``.
        """
        from crossclass_at.attacks import Normalized

        return Normalized(self.model(self.n_classes, **model_kwargs), self.mean, self.std)

    @property
    def n_classes(self) -> int:
        """Classes of the dataset."""
        return 10 if self.dataset == "cifar10" else 100

    def attribution_attack(self) -> Any:
        """The attack of :func:`~crossclass_at.class_attribution` and :class:`~crossclass_at.CASMonitor` for this preset.

        Returns
        -------
        PGD
            PGD-20 at ``attribution_eps`` in the preset's norm, PGD's default step (``eps / 4`` in l-inf,
            ``eps / 8`` in l2), random start.
        """
        from crossclass_at.attacks import PGD

        return PGD(eps=self.attribution_eps, steps=20, norm=self.trainer["norm"])


_STATS = {  # per-channel mean and std of the training images, as in the official utils.py
    "cifar10": ((0.4914, 0.4822, 0.4465), (0.2471, 0.2435, 0.2616)),
    "cifar100": ((0.5070751592371323, 0.48654887331495095, 0.4409178433670343),
                 (0.2673342858792401, 0.2564384629170883, 0.27615047132568404)),
}


def _recipe(method: str, norm: str) -> dict[str, Any]:
    eps, alpha = (8 / 255, 2 / 255) if norm == "linf" else (128 / 255, 16 / 255)
    return {"method": method, "eps": eps, "alpha": alpha, "steps": 10, "norm": norm, "beta": 6.0, "epochs": 200,
            "batch_size": 128, "lr": 0.1, "momentum": 0.9, "weight_decay": 5e-4, "milestones": (0.5, 0.75),
            "eval_steps": 20, "augment": cifar_augment}


def _models() -> dict[str, Callable[[int], nn.Module]]:
    from crossclass_at.models import PreActResNet18, ResNet18, WideResNet

    return {"prn18": PreActResNet18, "resnet18": ResNet18, "wrn34-10": WideResNet}


CIFAR_PRESETS: tuple[str, ...] = tuple(
    f"{ds}-{arch}-{method}-{norm}" for ds in ("cifar10", "cifar100") for arch in ("prn18", "resnet18", "wrn34-10")
    for method in ("pgd-at", "trades") for norm in ("linf", "l2") if not (method == "trades" and norm == "l2"))
"""Names ``<dataset>-<model>-<method>-<norm>`` accepted by :func:`cifar_preset`."""


def cifar_preset(name: str) -> CifarPreset:
    """The paper's CIFAR recipe for a dataset, model, objective and threat model.

    SGD (lr 0.1, momentum 0.9, weight decay 5e-4), batch 128, 200 epochs with the learning rate divided by
    10 at 50% and 75%; PGD-10 training attack at l-inf 8/255 (step 2/255) or l2 128/255 (step 16/255);
    TRADES with beta 6; PGD-20 held-out evaluation; random crop (4, reflect) and flip; inputs normalised
    with the dataset's mean and std inside the model (:meth:`CifarPreset.build`).

    Parameters
    ----------
    name : str
        One of :data:`CIFAR_PRESETS`, e.g. ``"cifar10-prn18-pgd-at-linf"``.

    Returns
    -------
    CifarPreset

    Raises
    ------
    ValueError
        For an unknown name (the message lists the accepted ones).

    Examples
    --------
    >>> p = cifar_preset("cifar10-wrn34-10-trades-linf")
    >>> p.trainer["beta"], round(p.trainer["eps"] * 255), p.n_classes
    (6.0, 8, 10)
    """
    if name not in CIFAR_PRESETS:
        raise ValueError(f"unknown preset {name!r}; accepted: {list(CIFAR_PRESETS)}")
    dataset, rest = name.split("-", 1)
    arch = next(a for a in ("prn18", "resnet18", "wrn34-10") if rest.startswith(a + "-"))
    method, norm = rest[len(arch) + 1:].rsplit("-", 1)
    mean, std = _STATS[dataset]
    return CifarPreset(name=name, dataset=dataset, model=_models()[arch], trainer=_recipe(method, norm),
                       attribution_eps=8 / 255 if norm == "linf" else 128 / 255, mean=mean, std=std)
