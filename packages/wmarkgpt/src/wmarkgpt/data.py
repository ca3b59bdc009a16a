"""Procedural data for the three training stages, and readers for the official JSON layouts.

* Scenes: small canvases with 2-3 labelled coloured shapes and their boxes.
* Stage 1 (WQA-Position style): "Where is A relative to B?" answered from the box geometry with the
  official nine-word position vocabulary.
* Stage 2 (WQA-Synthetic style): a masked logo alpha-blended at a random position with weight
  ``w ~ U[0, 0.25]`` rounded to 0.01, brightness re-matched, ``gt_score = round(5 - 20 w, 2)``, a visibility
  label from the score, and a template description (position relative to the objects, appearance,
  visibility, impact).
* Stage 3 (WQA-Real style): a different generator - invisible frequency-domain marks (block DCT or
  Haar DWT) and visible semi-transparent text overlays - with its own description wording.
"""

from __future__ import annotations

import gzip
import json
import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import numpy as np
from icml25_shared.random import RandomStateLike, check_random_state
from icml25_shared.validation import Interval, Options, check_param, check_params

from wmarkgpt.scoring import VISIBILITY_LEVELS, check_visibility

__all__ = [
    "IMWM_PAYLOAD",
    "INVISIBLE_MARKS",
    "NATURAL_PHOTOS",
    "POSITION_VOCABULARY",
    "SYNTHETIC_VISIBILITY_BINS",
    "Sample",
    "Scene",
    "SceneObject",
    "UnknownVisibilityWarning",
    "WatermarkedImage",
    "describe_synthetic",
    "embed_watermark",
    "find_data_dir",
    "make_logo",
    "make_position_dataset",
    "make_real_style_dataset",
    "make_scene",
    "make_synthetic_dataset",
    "natural_cover",
    "read_qscore",
    "read_results",
    "read_wqa",
    "relative_position",
    "visibility_from_score",
]

POSITION_VOCABULARY: tuple[str, ...] = ("Top-left", "Top-right", "Bottom-left", "Bottom-right", "Center",
                                        "Middle-left", "Middle-right", "Middle-top", "Middle-bottom")
"""The answers of WQA-Position (its test split uses these nine, Bottom-right most often)."""

SYNTHETIC_VISIBILITY_BINS: tuple[float, ...] = (4.0, 3.0, 2.0, 1.0)
"""``gt_score`` thresholds: >= 4 invisible, >= 3 faint, >= 2 moderate, >= 1 visible, else obvious."""

DESCRIBE_QUESTION = "Describe the watermark in the image."
"""The question asked for a description (a short form of the official phrasings)."""

VISIBILITY_QUESTION = "How visible is the watermark in the image?"
"""The question of the short visibility-only answers mixed into stages 2 and 3."""

_COLORS = {"red": (220, 40, 40), "green": (40, 170, 60), "blue": (40, 70, 220), "yellow": (230, 210, 40),
           "purple": (150, 50, 180), "orange": (240, 140, 30)}
_SHAPES = ("square", "circle", "triangle")
_LOGOS = ("star", "ring", "cross", "diamond")
_POS_QUESTIONS = ("Where is the {p} relative to the {o}?", "Where does the {p} appear in relation to the {o}?",
                  "What is the position of the {p} compared to the {o}?")


@dataclass(frozen=True)
class SceneObject:
    """A labelled object of a scene.

    Attributes
    ----------
    name : str
        "<colour> <shape>", e.g. "red circle".
    box : tuple of 4 int
        ``(x1, y1, x2, y2)`` in pixels, end-exclusive.
    """

    name: str
    box: tuple[int, int, int, int]


@dataclass(frozen=True)
class Scene:
    """A cover image with its objects.

    Attributes
    ----------
    image : numpy.ndarray, shape (size, size, 3), uint8
        The pixels.
    objects : tuple of SceneObject
        The labelled objects, distinct names.
    """

    image: np.ndarray
    objects: tuple[SceneObject, ...]


@dataclass(frozen=True)
class WatermarkedImage:
    """A watermarked image with its labels.

    Attributes
    ----------
    image : numpy.ndarray, uint8
        The watermarked pixels.
    box : tuple of 4 int
        ``(x1, y1, x2, y2)`` of the watermark, end-exclusive; every changed pixel lies inside.
    weight : float
        The blending weight.
    gt_score : float
        ``round(5 - 20 * weight, 2)``: 5 for no watermark, lower is more visible.
    visibility : str
        The level of ``gt_score`` (see :func:`visibility_from_score`).
    """

    image: np.ndarray
    box: tuple[int, int, int, int]
    weight: float
    gt_score: float
    visibility: str


@dataclass(frozen=True)
class Sample:
    """One training or test item.

    Attributes
    ----------
    image : numpy.ndarray, uint8
        The image.
    question, answer : str
        The user's question and the reference answer.
    visibility : str or None
        The visibility label (None for position QA).
    gt_score : float or None
        The ground-truth visibility score (None for position QA).
    kind : str
        "position", "synthetic", "real-dct", "real-dwt", "real-text" (or another real mark's name).
    box : tuple of 4 int or None
        ``(x1, y1, x2, y2)`` of the watermark, end-exclusive (the whole image for marks spread over it;
        None for position QA).
    """

    image: np.ndarray
    question: str
    answer: str
    visibility: str | None
    gt_score: float | None
    kind: str
    box: tuple[int, int, int, int] | None = None


def _check_size(size: int, minimum: int = 16, owner: str | None = None) -> int:
    check_param("size", size, [Interval(int, minimum, None)], owner=owner)
    return int(size)


def make_scene(*, size: int = 32, n_objects: int = 2, random_state: RandomStateLike = None) -> Scene:
    """A textured background with ``n_objects`` non-overlapping coloured shapes.

    Parameters
    ----------
    size : int, default 32
        Side in pixels (>= 16).
    n_objects : int, default 2
        Objects, 2 to 4.
    random_state : None, int or Generator
        Source of the layout.

    Returns
    -------
    Scene
        The image and its objects.
    """
    size = _check_size(size, owner="make_scene")
    check_param("n_objects", n_objects, [Interval(int, 2, 4)], owner="make_scene")
    rng = check_random_state(random_state)
    base = rng.integers(60, 200, size=3)
    yy, xx = np.mgrid[0:size, 0:size] / size
    grad = (rng.uniform(-30, 30) * xx + rng.uniform(-30, 30) * yy)[..., None]
    img = np.clip(base[None, None, :] + grad + rng.normal(0, 6, (size, size, 3)), 0, 255)
    objects: list[SceneObject] = []
    names: set[str] = set()
    tries = 0
    while len(objects) < n_objects:
        tries += 1
        if tries > 500:
            raise RuntimeError("could not place the objects; use a larger size")
        s = int(rng.integers(size // 5, size // 3 + 1))
        x1, y1 = int(rng.integers(0, size - s + 1)), int(rng.integers(0, size - s + 1))
        box = (x1, y1, x1 + s, y1 + s)
        if any(_overlap(box, o.box) for o in objects):
            continue
        color = str(rng.choice(list(_COLORS)))
        shape = str(rng.choice(_SHAPES))
        name = f"{color} {shape}"
        if name in names:
            continue
        names.add(name)
        mask = _shape_mask(shape, s)
        region = img[y1:y1 + s, x1:x1 + s]
        region[mask] = np.array(_COLORS[color], dtype=np.float64)
        objects.append(SceneObject(name, box))
    return Scene(np.rint(img).astype(np.uint8), tuple(objects))


def _overlap(a: tuple[int, int, int, int], b: tuple[int, int, int, int]) -> bool:
    return a[0] < b[2] and b[0] < a[2] and a[1] < b[3] and b[1] < a[3]


def _shape_mask(shape: str, s: int) -> np.ndarray:
    yy, xx = (np.mgrid[0:s, 0:s] + 0.5) / s
    if shape == "square":
        return np.ones((s, s), dtype=bool)
    if shape == "circle":
        return (xx - 0.5) ** 2 + (yy - 0.5) ** 2 <= 0.25
    return yy >= 2 * np.abs(xx - 0.5)  # triangle, apex up


def relative_position(box: Sequence[float], reference: Sequence[float]) -> str:
    """Where ``box`` lies relative to ``reference``, in the WQA-Position vocabulary.

    The centre of ``box`` is compared with the reference box split into thirds along each axis: left /
    middle / right and top / middle / bottom; the middle of both is "Center".

    Parameters
    ----------
    box, reference : sequence of 4 float
        ``(x1, y1, x2, y2)`` boxes with ``x2 > x1`` and ``y2 > y1`` (image y grows downwards).

    Returns
    -------
    str
        One of ``POSITION_VOCABULARY``.

    Examples
    --------
    >>> relative_position((0, 0, 4, 4), (10, 10, 20, 20))
    'Top-left'
    >>> relative_position((12, 24, 18, 30), (10, 10, 20, 20))
    'Middle-bottom'
    """
    for name, b in (("box", box), ("reference", reference)):
        if len(b) != 4 or not (b[2] > b[0] and b[3] > b[1]):
            raise ValueError(f"{name} must be (x1, y1, x2, y2) with x2 > x1 and y2 > y1, got {tuple(b)}")
    cx, cy = (box[0] + box[2]) / 2, (box[1] + box[3]) / 2
    w, h = reference[2] - reference[0], reference[3] - reference[1]
    col = "left" if cx < reference[0] + w / 3 else "right" if cx > reference[2] - w / 3 else "middle"
    row = "top" if cy < reference[1] + h / 3 else "bottom" if cy > reference[3] - h / 3 else "middle"
    if row == "middle" and col == "middle":
        return "Center"
    if row == "middle":
        return f"Middle-{col}"
    if col == "middle":
        return f"Middle-{row}"
    return f"{row.capitalize()}-{col}"


def make_logo(kind: str, size: int, *, color: tuple[int, int, int] = (255, 255, 255)
              ) -> tuple[np.ndarray, np.ndarray]:
    """A procedural logo and its mask.

    Parameters
    ----------
    kind : {"star", "ring", "cross", "diamond"}
        The glyph.
    size : int
        Side in pixels (>= 4).
    color : tuple of 3 int, default white
        Logo colour.

    Returns
    -------
    logo : numpy.ndarray, shape (size, size, 3), uint8
    mask : numpy.ndarray, shape (size, size), bool
        True where the logo is drawn.
    """
    if kind not in _LOGOS:
        raise ValueError(f"kind must be one of {_LOGOS}, got {kind!r}")
    if size < 4:
        raise ValueError(f"size must be >= 4, got {size}")
    yy, xx = (np.mgrid[0:size, 0:size] + 0.5) / size - 0.5
    r = np.hypot(xx, yy)
    if kind == "ring":
        mask = (r <= 0.48) & (r >= 0.28)
    elif kind == "cross":
        mask = (np.abs(xx) <= 0.12) | (np.abs(yy) <= 0.12)
    elif kind == "diamond":
        mask = np.abs(xx) + np.abs(yy) <= 0.48
    else:
        ang = np.arctan2(yy, xx)
        mask = r <= 0.2 + 0.28 * (np.cos(5 * ang) * 0.5 + 0.5)
    logo = np.zeros((size, size, 3), dtype=np.uint8)
    logo[:] = np.asarray(color, dtype=np.uint8)
    return logo, mask


def visibility_from_score(gt_score: float, *, bins: Sequence[float] = SYNTHETIC_VISIBILITY_BINS) -> str:
    """The visibility level of a ``gt_score``.

    Parameters
    ----------
    gt_score : float
        Score in [0, 5], higher = less visible.
    bins : sequence of 4 float, default ``SYNTHETIC_VISIBILITY_BINS``
        Decreasing lower bounds of invisible, faint, moderate and visible.

    Returns
    -------
    str
        One of ``VISIBILITY_LEVELS``.
    """
    if len(bins) != 4 or any(a <= b for a, b in zip(bins, bins[1:], strict=False)):
        raise ValueError(f"bins must be 4 strictly decreasing thresholds, got {tuple(bins)}")
    if not np.isfinite(gt_score):
        raise ValueError(f"gt_score must be finite, got {gt_score}")
    for level, lower in zip(VISIBILITY_LEVELS, bins, strict=False):
        if gt_score >= lower:
            return level
    return VISIBILITY_LEVELS[-1]


def embed_watermark(cover: np.ndarray, logo: np.ndarray, mask: np.ndarray, *, weight: float,
                    position: tuple[int, int] | None = None, rematch: Literal["box", "global"] = "box",
                    random_state: RandomStateLike = None) -> WatermarkedImage:
    """Alpha-blend a masked logo into a cover and re-match the mean brightness.

    Inside the mask, ``out = (1 - weight) * cover + weight * logo``. The re-match then restores the cover's
    mean brightness: ``rematch="box"`` shifts only the pixels of the logo's box (so every changed pixel stays
    inside the returned box), ``rematch="global"`` shifts the whole image as the official script does.
    Values are rounded (not truncated) to uint8, so ``weight=0`` returns the cover bit for bit.

    Parameters
    ----------
    cover : numpy.ndarray, shape (H, W, 3), uint8
        The cover image.
    logo : numpy.ndarray, shape (h, w, 3), uint8
        The logo, no larger than the cover.
    mask : numpy.ndarray, shape (h, w), bool
        Where the logo is drawn (at least one True).
    weight : float
        Blending weight in [0, 1] (the synthetic set draws it from U[0, 0.25]).
    position : tuple of 2 int, optional
        ``(x, y)`` of the logo's top-left corner; drawn uniformly when None.
    rematch : {"box", "global"}, default "box"
        Where the brightness re-match is applied.
    random_state : None, int or Generator
        Source of the position.

    Returns
    -------
    WatermarkedImage
        The image, the logo's box, ``weight``, ``gt_score = round(5 - 20 weight, 2)`` and its level.

    Raises
    ------
    ValueError
        On bad shapes or dtypes, an empty mask, a weight outside [0, 1], or a logo that does not fit.

    Examples
    --------
    >>> import numpy as np
    >>> from wmarkgpt.data import embed_watermark, make_logo
    >>> cover = np.full((16, 16, 3), 100, dtype=np.uint8)
    >>> logo, mask = make_logo("ring", 6)
    >>> wm = embed_watermark(cover, logo, mask, weight=0.2, position=(2, 3))
    >>> wm.box, wm.gt_score, wm.visibility
    ((2, 3, 8, 9), 1.0, 'visible')
    """
    if not isinstance(cover, np.ndarray) or cover.ndim != 3 or cover.shape[2] != 3 or cover.dtype != np.uint8:
        raise ValueError("cover must be an (H, W, 3) uint8 array")
    if not isinstance(logo, np.ndarray) or logo.ndim != 3 or logo.shape[2] != 3 or logo.dtype != np.uint8:
        raise ValueError("logo must be an (h, w, 3) uint8 array")
    mask = np.asarray(mask)
    if mask.shape != logo.shape[:2] or mask.dtype != bool:
        raise ValueError(f"mask must be a bool array of shape {logo.shape[:2]}, got {mask.shape} {mask.dtype}")
    if not mask.any():
        raise ValueError("mask is empty: nothing to embed")
    check_params({"weight": weight, "rematch": rematch},
                 {"weight": [Interval(float, 0.0, 1.0)], "rematch": [Options(str, {"box", "global"})]},
                 owner="embed_watermark")
    H, W = cover.shape[:2]
    h, w = mask.shape
    if h > H or w > W:
        raise ValueError(f"logo {h}x{w} does not fit the cover {H}x{W}")
    if position is None:
        rng = check_random_state(random_state)
        position = (int(rng.integers(0, W - w + 1)), int(rng.integers(0, H - h + 1)))
    x, y = int(position[0]), int(position[1])
    if not (0 <= x <= W - w and 0 <= y <= H - h):
        raise ValueError(f"position {(x, y)} puts the {h}x{w} logo outside the {H}x{W} cover")
    out = cover.astype(np.float64)
    region = out[y:y + h, x:x + w]
    region[mask] = (1.0 - weight) * region[mask] + weight * logo[mask].astype(np.float64)
    target = cover.astype(np.float64).mean()
    sel = np.zeros((H, W), dtype=bool)
    sel[y:y + h, x:x + w] = True
    if rematch == "global":
        sel[:] = True
    result = out
    last_gap = np.inf
    for _ in range(64):  # clipping at 0/255 loses part of a shift; re-apply on what is left
        result = np.clip(np.rint(out), 0, 255)
        gap = target - result.mean()
        if abs(gap) < 0.5 or weight == 0 or abs(gap) >= abs(last_gap):
            break
        last_gap = gap
        out = result.copy()
        out[sel] += gap * out.size / (sel.sum() * 3)
    score = round(5 - 20 * float(weight), 2)
    return WatermarkedImage(result.astype(np.uint8), (x, y, x + w, y + h), float(weight), score,
                            visibility_from_score(score))


def _nearest_relation(box: tuple[int, int, int, int], objects: Sequence[SceneObject]) -> str:
    inside = [o for o in objects if _overlap(box, o.box)]
    if inside:
        return f"overlapping the {inside[0].name}"
    cx, cy = (box[0] + box[2]) / 2, (box[1] + box[3]) / 2
    near = min(objects, key=lambda o: ((o.box[0] + o.box[2]) / 2 - cx) ** 2 + ((o.box[1] + o.box[3]) / 2 - cy) ** 2)
    return f"{relative_position(box, near.box).lower()} of the {near.name}"


_APPEARANCE = {"invisible": "it is completely transparent and cannot be seen",
               "faint": "it is highly transparent with a faint outline",
               "moderate": "it is semi transparent with a clear outline",
               "visible": "it is clearly visible with strong contrast",
               "obvious": "it is opaque and very prominent"}
_IMPACT = {"invisible": "it does not affect the image content",
           "faint": "it barely affects the image content",
           "moderate": "it slightly covers the image content",
           "visible": "it covers part of the image content",
           "obvious": "it seriously damages the image content"}


def describe_synthetic(logo_kind: str, box: tuple[int, int, int, int], objects: Sequence[SceneObject],
                       visibility: str, size: int) -> str:
    """The template description of a synthetic watermark.

    Parameters
    ----------
    logo_kind : str
        The logo's glyph.
    box : tuple of 4 int
        The watermark's box.
    objects : sequence of SceneObject
        The scene's objects (at least one).
    visibility : str
        One of ``VISIBILITY_LEVELS``.
    size : int
        The image side.

    Returns
    -------
    str
        "The watermark is a <glyph> logo in the <region> of the image, <relation>. ... The watermark
        visibility is: <level>."
    """
    check_visibility(visibility)
    if not objects:
        raise ValueError("objects is empty")
    region = relative_position(box, (0, 0, size, size)).lower()
    if visibility == "invisible":
        return ("The watermark is not visible in the image. "
                f"{_APPEARANCE[visibility].capitalize()}, and {_IMPACT[visibility]}. "
                f"The watermark visibility is: {visibility}.")
    return (f"The watermark is a {logo_kind} logo in the {region} of the image, {_nearest_relation(box, objects)}. "
            f"{_APPEARANCE[visibility].capitalize()}, and {_IMPACT[visibility]}. "
            f"The watermark visibility is: {visibility}.")


def _short_answer(visibility: str) -> str:
    return f"The watermark visibility is: {visibility}."


def make_position_dataset(n: int, *, size: int = 32, random_state: RandomStateLike = None) -> list[Sample]:
    """Stage-1 items: one position question per scene, answered in ``POSITION_VOCABULARY``.

    Parameters
    ----------
    n : int
        Items (>= 1).
    size : int, default 32
        Image side.
    random_state : None, int or Generator
        Source of scenes and questions.

    Returns
    -------
    list of Sample
        ``kind="position"``.
    """
    _check_n(n, owner="make_position_dataset")
    rng = check_random_state(random_state)
    out = []
    for _ in range(n):
        scene = make_scene(size=size, n_objects=int(rng.integers(2, 4)), random_state=rng)
        i, j = rng.choice(len(scene.objects), size=2, replace=False)
        p, o = scene.objects[int(i)], scene.objects[int(j)]
        q = str(rng.choice(_POS_QUESTIONS)).format(p=p.name, o=o.name)
        out.append(Sample(scene.image, q, relative_position(p.box, o.box), None, None, "position"))
    return out


def make_synthetic_dataset(n: int, *, size: int = 32, max_weight: float = 0.25, short_answer_rate: float = 0.25,
                           random_state: RandomStateLike = None) -> list[Sample]:
    """Stage-2 items: scenes with a blended logo, ``w ~ U[0, max_weight]`` rounded to 0.01.

    Parameters
    ----------
    n : int
        Items (>= 1).
    size : int, default 32
        Image side.
    max_weight : float, default 0.25
        Upper end of the weight distribution, in [0, 0.25] (above it ``gt_score = 5 - 20 w`` leaves [0, 5]).
    short_answer_rate : float, default 0.25
        Share of items asking only for the visibility (answer "The watermark visibility is: <level>.").
    random_state : None, int or Generator
        Source of everything.

    Returns
    -------
    list of Sample
        ``kind="synthetic"``.
    """
    check_params({"n": n, "size": size, "max_weight": max_weight, "short_answer_rate": short_answer_rate,
                  "random_state": random_state},
                 {"n": [Interval(int, 1, None)], "size": [Interval(int, 16, None)],
                  "max_weight": [Interval(float, 0.0, 0.25)], "short_answer_rate": [Interval(float, 0.0, 1.0)],
                  "random_state": ["random_state"]}, owner="make_synthetic_dataset")
    rng = check_random_state(random_state)
    out = []
    for _ in range(n):
        scene = make_scene(size=size, n_objects=2, random_state=rng)
        kind = str(rng.choice(_LOGOS))
        side = int(rng.integers(size // 3, size // 2 + 1))
        picked = rng.choice([[255, 255, 255], [0, 0, 0], [255, 230, 0]])
        tone = (int(picked[0]), int(picked[1]), int(picked[2]))
        logo, mask = make_logo(kind, side, color=tone)
        weight = float(np.round(rng.uniform(0.0, max_weight), 2))
        wm = embed_watermark(scene.image, logo, mask, weight=weight, random_state=rng)
        if rng.random() < short_answer_rate:
            q, a = VISIBILITY_QUESTION, _short_answer(wm.visibility)
        else:
            q, a = DESCRIBE_QUESTION, describe_synthetic(kind, wm.box, scene.objects, wm.visibility, size)
        out.append(Sample(wm.image, q, a, wm.visibility, wm.gt_score, "synthetic", wm.box))
    return out


_TEXT_APPEARANCE = {"invisible": "no trace of a mark can be found and the picture looks natural",
                    "faint": "a pale text mark is barely noticeable",
                    "moderate": "a translucent text mark can be noticed",
                    "visible": "a text mark is easy to see",
                    "obvious": "a bold text mark dominates the picture"}


def _dct_mark(img: np.ndarray, rng: np.random.Generator, strength: float) -> np.ndarray:
    from scipy.fft import dctn, idctn

    out = img.astype(np.float64)
    H, W = img.shape[:2]
    for by in range(0, H - H % 8, 8):
        for bx in range(0, W - W % 8, 8):
            for c in range(3):
                blk = dctn(out[by:by + 8, bx:bx + 8, c], norm="ortho")
                blk[2:5, 2:5] += strength * rng.choice([-1.0, 1.0], size=(3, 3))
                out[by:by + 8, bx:bx + 8, c] = idctn(blk, norm="ortho")
    return np.clip(np.rint(out), 0, 255).astype(np.uint8)


def _dwt_mark(img: np.ndarray, rng: np.random.Generator, strength: float) -> np.ndarray:
    x = img.astype(np.float64)
    H, W = (img.shape[0] // 2) * 2, (img.shape[1] // 2) * 2
    a, b = x[0:H:2, 0:W:2], x[0:H:2, 1:W:2]
    c, d = x[1:H:2, 0:W:2], x[1:H:2, 1:W:2]
    ll, hh = (a + b + c + d) / 2, (a - b - c + d) / 2
    lh, hl = (a - b + c - d) / 2, (a + b - c - d) / 2
    hh = hh + strength * rng.choice([-1.0, 1.0], size=hh.shape)
    out = x.copy()
    out[0:H:2, 0:W:2] = (ll + lh + hl + hh) / 2
    out[0:H:2, 1:W:2] = (ll - lh + hl - hh) / 2
    out[1:H:2, 0:W:2] = (ll + lh - hl - hh) / 2
    out[1:H:2, 1:W:2] = (ll - lh - hl + hh) / 2
    return np.clip(np.rint(out), 0, 255).astype(np.uint8)


def _text_mark(img: np.ndarray, rng: np.random.Generator, alpha: float) -> tuple[np.ndarray, tuple[int, int, int, int]]:
    from PIL import Image, ImageDraw

    size = img.shape[0]
    layer = Image.new("L", (size, size), 0)
    draw = ImageDraw.Draw(layer)
    text = str(rng.choice(["WM", "(c)", "MARK", "AI"]))
    x, y = int(rng.integers(0, size // 2)), int(rng.integers(0, size - 10))
    draw.text((x, y), text, fill=255)
    m = np.asarray(layer, dtype=np.float64)[..., None] / 255.0
    tone = 255.0 if img.mean() < 128 else 0.0
    out = img.astype(np.float64) * (1 - alpha * m) + tone * alpha * m
    ys, xs = np.nonzero(m[..., 0] > 0)
    box = (int(xs.min()), int(ys.min()), int(xs.max()) + 1, int(ys.max()) + 1) if xs.size else (0, 0, 1, 1)
    return np.clip(np.rint(out), 0, 255).astype(np.uint8), box


NATURAL_PHOTOS: tuple[str, ...] = ("astronaut", "coffee", "chelsea", "rocket", "cat", "camera", "moon", "coins",
                                   "clock", "hubble_deep_field")
"""``skimage.data`` photographs used as natural covers (bundled in the scikit-image wheel; grey ones as RGB)."""

INVISIBLE_MARKS: tuple[str, ...] = ("dct", "dwt", "dwtDct", "dwtDctSvd", "rivaGan")
"""Invisible marks of :func:`make_real_style_dataset`: the hand-rolled block-DCT and Haar-DWT sign marks,
and the three methods of the ``invisible-watermark`` package (images of at least 256 x 256)."""

IMWM_PAYLOAD = b"wmgp"
"""The 32-bit payload the ``invisible-watermark`` marks embed (decodable from the images)."""

_photo_cache: dict[str, np.ndarray] = {}
_rivagan_loaded = False


def natural_cover(size: int, *, random_state: RandomStateLike = None) -> np.ndarray:
    """A random square crop of a ``skimage.data`` photograph, resized to ``size`` (needs scikit-image).

    Parameters
    ----------
    size : int
        Output side (>= 16).
    random_state : None, int or Generator
        Photograph, crop side (between ``size`` and the photo's shorter side, at least 64) and position.

    Returns
    -------
    numpy.ndarray, shape (size, size, 3), uint8
        The cover.

    Raises
    ------
    ImportError
        Naming the extra when scikit-image is missing.
    """
    from PIL import Image

    size = _check_size(size, owner="natural_cover")
    rng = check_random_state(random_state)
    name = str(rng.choice(NATURAL_PHOTOS))
    if name not in _photo_cache:
        try:
            import skimage.data
        except ImportError as err:
            raise ImportError("natural covers come from scikit-image's bundled photographs: "
                              "pip install 'wmarkgpt[real]'") from err
        photo = np.asarray(getattr(skimage.data, name)())
        _photo_cache[name] = np.repeat(photo[..., None], 3, axis=2) if photo.ndim == 2 else photo[..., :3]
    photo = _photo_cache[name]
    h, w = photo.shape[:2]
    side = int(rng.integers(min(max(size, 64), min(h, w)), min(h, w) + 1))
    y, x = int(rng.integers(0, h - side + 1)), int(rng.integers(0, w - side + 1))
    crop = Image.fromarray(np.ascontiguousarray(photo[y:y + side, x:x + side]).astype(np.uint8), "RGB")
    return np.asarray(crop.resize((size, size), Image.Resampling.LANCZOS), dtype=np.uint8)


def _imwm_mark(img: np.ndarray, method: str) -> np.ndarray:
    """Embed :data:`IMWM_PAYLOAD` with the ``invisible-watermark`` method (RGB in, RGB out)."""
    global _rivagan_loaded
    if min(img.shape[:2]) < 256:
        raise ValueError(f"the invisible-watermark mark {method!r} needs images of at least 256 x 256; "
                         f"got {img.shape[0]} x {img.shape[1]} (pass size >= 256)")
    try:
        from imwatermark import WatermarkEncoder
    except ImportError as err:
        raise ImportError(f"the {method!r} mark comes from invisible-watermark: pip install 'wmarkgpt[real]'") from err
    if method == "rivaGan" and not _rivagan_loaded:
        WatermarkEncoder.loadModel()
        _rivagan_loaded = True
    encoder = WatermarkEncoder()
    encoder.set_watermark("bytes", IMWM_PAYLOAD)
    bgr = np.ascontiguousarray(img[..., ::-1])
    return np.ascontiguousarray(encoder.encode(bgr, method)[..., ::-1]).astype(np.uint8)


def make_real_style_dataset(n: int, *, size: int = 32, short_answer_rate: float = 0.25,
                            covers: str = "scenes", marks: Sequence[str] = ("dct", "dwt", "text"),
                            random_state: RandomStateLike = None) -> list[Sample]:
    """Stage-3 items from a different generator: invisible marks and visible text overlays.

    With the default ``marks``, a third of the items carry an invisible mark (block-DCT mid-band or
    Haar-DWT HH sign pattern, ``gt_score`` in [4, 5]); the rest a text overlay with opacity
    ``alpha ~ U[0.05, 0.95]`` and ``gt_score = round(5 - 5 alpha, 2)`` clipped at 0, whose level follows
    ``visibility_from_score``. Other invisible marks are drawn uniformly from those named; the marks of
    the ``invisible-watermark`` package (DWT-DCT, DWT-DCT-SVD, the RivaGAN ONNX encoder) embed
    :data:`IMWM_PAYLOAD` and get ``gt_score = 5 - min(1, mean |change| / 3)``.

    Parameters
    ----------
    n : int
        Items (>= 1).
    size : int, default 32
        Image side (>= 16; >= 256 with an ``invisible-watermark`` mark).
    short_answer_rate : float, default 0.25
        Share of visibility-only questions.
    covers : {"scenes", "photos"}, default "scenes"
        Procedural scenes with labelled shapes, or crops of natural photographs (:func:`natural_cover`,
        needs scikit-image; descriptions then name no objects).
    marks : sequence of str, default ("dct", "dwt", "text")
        Marks to draw from: any of :data:`INVISIBLE_MARKS` and "text".
    random_state : None, int or Generator
        Source of everything.

    Returns
    -------
    list of Sample
        ``kind`` "real-<mark>" (e.g. "real-dct", "real-rivaGan", "real-text").

    Raises
    ------
    ValueError
        On an unknown mark or cover, no mark, or an ``invisible-watermark`` mark below 256 x 256.
    ImportError
        Naming the ``real`` extra when scikit-image or invisible-watermark is missing.
    """
    check_params({"n": n, "size": size, "short_answer_rate": short_answer_rate, "covers": covers,
                  "random_state": random_state},
                 {"n": [Interval(int, 1, None)], "size": [Interval(int, 16, None)],
                  "short_answer_rate": [Interval(float, 0.0, 1.0)], "covers": [Options(str, {"scenes", "photos"})],
                  "random_state": ["random_state"]}, owner="make_real_style_dataset")
    marks = tuple(marks) if not isinstance(marks, str) else (marks,)
    unknown = sorted(set(marks) - set(INVISIBLE_MARKS) - {"text"})
    if unknown or not marks:
        raise ValueError(f"make_real_style_dataset: marks must be a non-empty subset of "
                         f"{(*INVISIBLE_MARKS, 'text')}; got {marks!r}")
    invisible = [m for m in INVISIBLE_MARKS if m in marks]
    if size < 256 and set(invisible) - {"dct", "dwt"}:
        raise ValueError(f"make_real_style_dataset: the invisible-watermark marks need size >= 256; got {size}")
    rng = check_random_state(random_state)
    out = []
    for _ in range(n):
        if covers == "scenes":
            scene = make_scene(size=size, n_objects=2, random_state=rng)
            cover, objects = scene.image, scene.objects
        else:
            cover, objects = natural_cover(size, random_state=rng), ()
        u = rng.random()
        if invisible and (u < 1 / 3 or "text" not in marks):
            if invisible == ["dct", "dwt"]:  # the original draw, kept for reproducibility
                strength = float(rng.uniform(1.0, 3.0))
                mark = "dct" if rng.random() < 0.5 else "dwt"
            else:
                mark = str(rng.choice(invisible))
                strength = float(rng.uniform(1.0, 3.0))
            if mark in ("dct", "dwt"):
                image = (_dct_mark if mark == "dct" else _dwt_mark)(cover, rng, strength)
                score = round(5.0 - strength / 3.0, 2)
            else:
                image = _imwm_mark(cover, mark)
                change = float(np.abs(image.astype(np.float64) - cover.astype(np.float64)).mean())
                score = round(5.0 - min(1.0, change / 3.0), 2)
            kind, box, vis = f"real-{mark}", (0, 0, size, size), "invisible"
            text = (f"No watermark can be seen in the picture; {_TEXT_APPEARANCE[vis]}, and the content is "
                    f"intact. The watermark visibility is: {vis}.")
        else:
            alpha = float(rng.uniform(0.05, 0.95))
            image, box = _text_mark(cover, rng, alpha)
            score = max(0.0, round(5.0 - 5.0 * alpha, 2))
            vis = visibility_from_score(score)
            if vis == "invisible":
                vis = "faint"  # a drawn text overlay is never labelled invisible
            kind = "real-text"
            where = relative_position(box, (0, 0, size, size)).lower()
            relation = f", {_nearest_relation(box, objects)}" if objects else ""
            text = (f"A text watermark is placed in the {where} of the picture{relation}; "
                    f"{_TEXT_APPEARANCE[vis]}. The watermark visibility is: {vis}.")
        if rng.random() < short_answer_rate:
            q, a = VISIBILITY_QUESTION, _short_answer(vis)
        else:
            q, a = DESCRIBE_QUESTION, text
        out.append(Sample(image, q, a, vis, score, kind, box))
    return out


def _check_n(n: int, owner: str | None = None) -> None:
    check_param("n", n, [Interval(int, 1, None)], owner=owner)


def _load_json(path: str | Path) -> Any:
    p = Path(path)
    if not p.is_file():
        raise FileNotFoundError(f"{str(p)!r} does not exist")
    opener = gzip.open if p.suffix == ".gz" else open
    with opener(p, "rt", encoding="utf-8") as fh:
        return json.load(fh)


def read_wqa(path: str | Path) -> list[dict[str, Any]]:
    """Read a WQA label or answer file (a list of records with ``image`` and ``conversations``).

    A ``visibility`` that is one of the five levels up to case and surrounding whitespace ("Faint ",
    "INVISIBLE") is normalised to the lower-case level; any other value is kept as it is and reported
    in one :class:`UnknownVisibilityWarning` (count and examples), since it can match no label exactly.

    Parameters
    ----------
    path : str or path
        ``.json`` or ``.json.gz``.

    Returns
    -------
    list of dict
        The records (copies whose ``visibility`` is normalised where it was a level).

    Raises
    ------
    ValueError
        When the layout is not a list of such records or a ``visibility`` is not a str.

    Warns
    -----
    UnknownVisibilityWarning
        When some ``visibility`` values are not levels.
    """
    import warnings

    data = _load_json(path)
    if not isinstance(data, list):
        raise ValueError(f"{path}: expected a list of records, got {type(data).__name__}")
    unknown: dict[str, int] = {}
    out = []
    for i, rec in enumerate(data):
        if not isinstance(rec, dict) or "image" not in rec or not isinstance(rec.get("conversations"), list):
            raise ValueError(f"{path}: record {i} lacks image/conversations")
        if "visibility" in rec:
            vis = rec["visibility"]
            if not isinstance(vis, str):
                raise ValueError(f"{path}: record {i} ({rec['image']}): visibility must be a str, got "
                                 f"{type(vis).__name__}")
            level = vis.strip().lower()
            if level in VISIBILITY_LEVELS:
                rec = {**rec, "visibility": level}
            else:
                unknown[vis] = unknown.get(vis, 0) + 1
        out.append(rec)
    if unknown:
        examples = ", ".join(f"{k!r} x{v}" for k, v in sorted(unknown.items(), key=lambda kv: -kv[1])[:5])
        warnings.warn(f"{path}: {sum(unknown.values())} of {len(out)} records have a visibility that is not one of "
                      f"{', '.join(VISIBILITY_LEVELS)} ({examples}); they are kept as they are",
                      UnknownVisibilityWarning, stacklevel=2)
    return out


class UnknownVisibilityWarning(UserWarning):
    """Records whose ``visibility`` is not one of the five levels (reported by :func:`read_wqa`)."""


def read_results(path: str | Path) -> dict[str, dict[str, Any]]:
    """Read an official per-item result file (``{image: {BLEU_1, ROUGE_L, LLM_SCORE, ...}}``).

    Parameters
    ----------
    path : str or path
        ``.json`` or ``.json.gz``.

    Returns
    -------
    dict
        The mapping.
    """
    data = _load_json(path)
    if not isinstance(data, dict) or not all(isinstance(v, dict) and "BLEU_1" in v for v in data.values()):
        raise ValueError(f"{path}: expected {{image: {{BLEU_1, ROUGE_L, LLM_SCORE}}}}")
    return data


def read_qscore(path: str | Path) -> dict[str, dict[str, Any]]:
    """Read an official visibility-score file (``{image: {gt_score, logits, predict_score}}``).

    Parameters
    ----------
    path : str or path
        ``.json`` or ``.json.gz``.

    Returns
    -------
    dict
        The mapping.
    """
    data = _load_json(path)
    if not isinstance(data, dict) or not all(isinstance(v, dict) and {"gt_score", "logits"} <= set(v)
                                             for v in data.values()):
        raise ValueError(f"{path}: expected {{image: {{gt_score, logits, predict_score}}}}")
    return data


_FILES: dict[str, Any] = {"labels": "WQA-Real_test.json.gz",
          "WMarkGPT-7B": ("WQA-Real_wmarkgpt-7b.json.gz", "WQA-Real_wmarkgpt-7b-result.json.gz"),
          "Qwen2-VL-7B": ("WQA-Real_qwen2-vl-7b-instruct.json.gz", "WQA-Real_qwen2-vl-7b-instruct-result.json.gz"),
          "qscore-real": "WQA-Real_wmarkgpt_qscore.json.gz",
          "qscore-synthetic": "WQA-Synthetic_wmarkgpt_qscore.json.gz"}


def find_data_dir() -> Path:
    """The folder of the shipped official files: ``$WMARKGPT_DATA``, else the checkout's ``tests/data``.

    The checkout is found from the installed source (an editable install) or, for a regular install,
    from the current directory: the repository root, as after the README's install commands.

    Returns
    -------
    pathlib.Path
        The folder.

    Raises
    ------
    FileNotFoundError
        When neither holds the WQA-Real labels.
    """
    env = os.environ.get("WMARKGPT_DATA")
    candidates = [Path(env)] if env else []
    candidates.append(Path(__file__).resolve().parents[2] / "tests" / "data")
    candidates.append(Path.cwd() / "packages" / "wmarkgpt" / "tests" / "data")
    for folder in candidates:
        if (folder / _FILES["labels"]).is_file():
            return folder
    raise FileNotFoundError("the official WQA-Real files were not found; set WMARKGPT_DATA to a folder holding "
                            f"{_FILES['labels']} and the answer files (see DATA.md of the repository)")
