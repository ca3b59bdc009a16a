"""The owner's own training images, read from disk, for scoring an audit against them.

A checkpoint owner has the fine-tuning images. ``load_images`` reads them once (so a bad path fails before any
sampling) and ``ImageSet.fit`` brings them to the generated images' shape: grey or RGB, the centre crop of the
target's aspect ratio (as DreamBooth preprocessing crops), antialiased bicubic resize, values in [-1, 1].
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import torch
import torch.nn.functional as F

__all__ = ["IMAGE_SUFFIXES", "ImageSet", "load_images"]

IMAGE_SUFFIXES = (".png", ".jpg", ".jpeg", ".webp", ".bmp")
_LUMA = torch.tensor([0.299, 0.587, 0.114])  # ITU-R BT.601, what PIL's convert("L") uses


@dataclass
class ImageSet:
    """Images at their native size.

    ``images[i]`` is a (C, H, W) float tensor in [0, 1], C = 1 or 3; ``names[i]`` is its file name (or
    ``"<file>[i]"`` for an array file).
    """

    names: list[str]
    images: list[torch.Tensor] = field(repr=False)

    def __len__(self) -> int:
        return len(self.images)

    def fit(self, shape: tuple[int, int, int]) -> torch.Tensor:
        """All images as one (n, C, H, W) tensor in [-1, 1] for ``shape`` = (C, H, W), C = 1 or 3."""
        channels, height, width = (int(s) for s in shape)
        if channels not in (1, 3):
            raise ValueError(f"generated images have {channels} channels; only grey (1) or RGB (3) can be matched")
        return torch.stack([_fit_one(img, channels, height, width) for img in self.images]) * 2 - 1


def _fit_one(img: torch.Tensor, channels: int, height: int, width: int) -> torch.Tensor:
    if img.shape[0] != channels:
        img = (img * _LUMA[:, None, None]).sum(0, keepdim=True) if channels == 1 else img.expand(3, -1, -1)
    h, w = img.shape[1:]
    crop_h, crop_w = min(h, round(w * height / width)), min(w, round(h * width / height))
    top, left = (h - crop_h) // 2, (w - crop_w) // 2
    img = img[:, top : top + crop_h, left : left + crop_w]
    if (crop_h, crop_w) != (height, width):
        img = F.interpolate(img[None], size=(height, width), mode="bicubic", antialias=True, align_corners=False)[0]
    return img.clamp(0, 1)


def load_images(path: str | Path) -> ImageSet:
    """Read training images from a folder of image files or one array file.

    Parameters
    ----------
    path : path
        A folder of image files (``IMAGE_SUFFIXES``, sorted by name, other files ignored), or one ``.pt`` /
        ``.npy`` file with an (n, C, H, W) array in [-1, 1] (C = 1 or 3), the layout of ``finextract.training``
        and of the samplers' output.

    Returns
    -------
    ImageSet
        The images at their native size, in [0, 1].

    Raises
    ------
    FileNotFoundError
        When ``path`` does not exist.
    ValueError
        For an empty folder, an unreadable file, a wrong array shape or values outside [-1, 1].
    """
    root = Path(path)
    if root.is_dir():
        files = sorted(p for p in root.iterdir() if p.is_file() and p.suffix.lower() in IMAGE_SUFFIXES)
        if not files:
            raise ValueError(f"{root} holds no image files (looked for {', '.join(IMAGE_SUFFIXES)})")
        return ImageSet([p.name for p in files], [_read_file(p) for p in files])
    if root.is_file() and root.suffix in (".pt", ".npy"):
        array = torch.load(root, map_location="cpu") if root.suffix == ".pt" else torch.from_numpy(np.load(root))
        images = _check_array(array, root)
        return ImageSet([f"{root.name}[{i}]" for i in range(len(images))], list(images))
    if root.is_file():
        raise ValueError(f"{root}: expected a folder of images or a .pt / .npy array file")
    raise FileNotFoundError(f"training images not found: {root}")


def _read_file(path: Path) -> torch.Tensor:
    """Read one image as (C, H, W) in [0, 1].

    Upright (EXIF orientation applied, as diffusers' DreamBooth scripts do); 16-bit greys are scaled by 65535,
    not clipped to 8 bits.
    """
    from PIL import Image, ImageOps, UnidentifiedImageError

    try:
        with Image.open(path) as raw:
            im = ImageOps.exif_transpose(raw)
            if im.mode.startswith("I;16") or im.mode == "I":
                pixels = np.asarray(im, dtype=np.float32) / 65535.0
            elif im.mode == "F":
                pixels = np.asarray(im, dtype=np.float32)
            else:
                mode = "L" if im.mode in ("1", "L") else "RGB"
                pixels = np.asarray(im.convert(mode), dtype=np.float32) / 255.0
    except (UnidentifiedImageError, OSError) as err:
        raise ValueError(f"cannot read {path} as an image: {err}") from None
    pixels = np.clip(pixels, 0.0, 1.0)
    return torch.from_numpy(pixels[None] if pixels.ndim == 2 else pixels.transpose(2, 0, 1).copy())


def _check_array(array: object, path: Path) -> tuple[torch.Tensor, ...]:
    if not isinstance(array, torch.Tensor) or array.ndim != 4 or array.shape[1] not in (1, 3) or len(array) == 0:
        got = tuple(array.shape) if isinstance(array, torch.Tensor) else type(array).__name__
        raise ValueError(f"{path}: expected an (n, C, H, W) array with C = 1 or 3 and n >= 1, got {got}")
    array = array.detach().float()
    if not torch.isfinite(array).all() or array.min() < -1.001 or array.max() > 1.001:
        raise ValueError(f"{path}: values must be finite and in [-1, 1] (the samplers' image range)")
    return ((array.clamp(-1, 1) + 1) / 2).unbind(0)
