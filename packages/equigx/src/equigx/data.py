"""Synthetic 3-D graph sets with ground-truth motifs: Shapes and Spiral Noise.

Shapes: one regular motif (tetrahedron, cube, octahedron, square pyramid or triangular prism; unit edge,
random rotation, scale jitter) among uniform distractor points that keep a minimum distance from each
other and from the motif. Label = motif type; ground truth = the motif's nodes.

Decoy Shapes: the motif among decoys, jittered copies of randomly drawn motifs, instead of sparse distractors, so
that motif and background nodes have about the same number of neighbours and node degree cannot find the motif.

Spiral Noise: a left- or right-handed helix among distractors. Label = handedness (1 = right); ground
truth = the helix's nodes. Mirror images have opposite labels, so an E(3)-invariant read-out cannot
separate them: the model reads a pseudoscalar.
"""

from __future__ import annotations

import numpy as np
import torch
from icml25_shared.random import RandomStateLike, check_random_state

from equigx.graphs import Graphs

__all__ = ["MOTIFS", "helix", "make_decoy_shapes", "make_shapes", "make_spiral", "random_rotation"]


def _motifs() -> dict[str, np.ndarray]:
    s = np.sqrt
    tet = np.array([[1, 1, 1], [1, -1, -1], [-1, 1, -1], [-1, -1, 1]], float) / (2 * s(2))
    cube = np.array([[i, j, k] for i in (0, 1) for j in (0, 1) for k in (0, 1)], float) - 0.5
    octa = np.array([[1, 0, 0], [-1, 0, 0], [0, 1, 0], [0, -1, 0], [0, 0, 1], [0, 0, -1]], float) / s(2)
    pyr = np.array([[0.5, 0.5, 0], [0.5, -0.5, 0], [-0.5, 0.5, 0], [-0.5, -0.5, 0], [0, 0, 1 / s(2)]], float)
    tri = np.array([[1, 0, 0], [-0.5, s(3) / 2, 0], [-0.5, -s(3) / 2, 0]], float) / s(3)
    prism = np.concatenate([tri + [0, 0, -0.5], tri + [0, 0, 0.5]])
    return {"tetrahedron": tet, "cube": cube, "octahedron": octa, "square_pyramid": pyr, "triangular_prism": prism}


MOTIFS: dict[str, np.ndarray] = _motifs()


def random_rotation(random_state: RandomStateLike = None) -> np.ndarray:
    """A Haar-random rotation matrix (determinant +1).

    Parameters
    ----------
    random_state : None, int or numpy Generator
        Source of randomness.

    Returns
    -------
    numpy.ndarray, shape (3, 3)
        The rotation.
    """
    rng = check_random_state(random_state)
    q, r = np.linalg.qr(rng.normal(size=(3, 3)))
    q = q * np.sign(np.diag(r))
    if np.linalg.det(q) < 0:
        q[:, 0] = -q[:, 0]
    return q


def _add_distractors(core: np.ndarray, n: int, box: float, min_dist: float, rng: np.random.Generator) -> np.ndarray:
    points = [p for p in core]
    tries = 0
    while len(points) < len(core) + n:
        tries += 1
        if tries > 200 * (n + 1):
            raise RuntimeError("could not place the distractors; lower their number or min_dist")
        p = rng.uniform(-box, box, size=3)
        if np.min(np.linalg.norm(np.asarray(points) - p, axis=1)) >= min_dist:
            points.append(p)
    return np.asarray(points)


def _finish(pos_list: list[np.ndarray], masks: list[np.ndarray], labels: list[int], rng: np.random.Generator,
            dtype: torch.dtype) -> Graphs:
    # shuffle node order so that the motif is not always first
    out_pos, out_mask = [], []
    for pos, mask in zip(pos_list, masks, strict=True):
        order = rng.permutation(len(pos))
        out_pos.append(pos[order])
        out_mask.append(mask[order])
    attrs = [np.ones((len(p), 1)) for p in out_pos]
    return Graphs.from_list(out_pos, attrs, y=labels, node_mask=out_mask, dtype=dtype)


def make_shapes(n_graphs: int, *, n_distractors: tuple[int, int] = (10, 20), box: float = 2.0,
                min_dist: float = 0.9, scale_jitter: float = 0.05, motifs: tuple[str, ...] | None = None,
                random_state: RandomStateLike = None, dtype: torch.dtype = torch.float32) -> Graphs:
    """Shapes: a rotated regular motif among distractors; label = motif, ground truth = motif nodes.

    Parameters
    ----------
    n_graphs : int
        Number of graphs; labels cycle through the motifs.
    n_distractors : (int, int), default (10, 20)
        Inclusive range of the number of distractor points.
    box : float, default 2.0
        Distractors are uniform in ``[-box, box]^3``.
    min_dist : float, default 0.9
        Minimum distance of a distractor to every other point (motif edges have length 1).
    scale_jitter : float, default 0.05
        The motif is scaled by a uniform factor in ``1 +- scale_jitter``.
    motifs : tuple of str, optional
        Names from ``MOTIFS`` (default all five).
    random_state : None, int or numpy Generator
        Source of randomness.
    dtype : torch.dtype, default torch.float32
        Floating dtype.

    Returns
    -------
    Graphs
        With ``y`` (motif index) and ``node_mask`` (motif nodes).
    """
    names = tuple(MOTIFS) if motifs is None else tuple(motifs)
    unknown = [m for m in names if m not in MOTIFS]
    if unknown:
        raise ValueError(f"unknown motif(s) {unknown}; known: {sorted(MOTIFS)}")
    if n_graphs < 1:
        raise ValueError(f"n_graphs must be positive, got {n_graphs}")
    rng = check_random_state(random_state)
    pos_list, masks, labels = [], [], []
    for g in range(n_graphs):
        label = g % len(names)
        core = MOTIFS[names[label]] * rng.uniform(1 - scale_jitter, 1 + scale_jitter)
        core = core @ random_rotation(rng).T + rng.uniform(-0.5, 0.5, size=3)
        n = int(rng.integers(n_distractors[0], n_distractors[1] + 1))
        pos = _add_distractors(core, n, box, min_dist, rng)
        pos_list.append(pos)
        masks.append(np.arange(len(pos)) < len(core))
        labels.append(label)
    return _finish(pos_list, masks, labels, rng, dtype)


def make_decoy_shapes(n_graphs: int, *, n_decoys: tuple[int, int] = (2, 3), jitter: float = 0.2,
                      decoy_scale: float = 0.8, separation: float = 3.2, box: float = 4.0, scale_jitter: float = 0.05,
                      random_state: RandomStateLike = None, dtype: torch.dtype = torch.float32) -> Graphs:
    """Shapes with degree-matched backgrounds: the class motif among decoy clusters; ground truth = motif nodes.

    Each decoy is a motif of a uniformly drawn type (possibly the class's own), rotated, with independent
    Gaussian noise of standard deviation ``jitter`` on every coordinate: it keeps the motif's size, point
    count and density (hence about the same node degrees at a cutoff of 1.5) but not its regular geometry.
    Clusters lie ``separation`` apart (centre to centre), so no edge of a 1.5 cutoff joins two clusters.

    Parameters
    ----------
    n_graphs : int
        Number of graphs; labels cycle through the five motifs.
    n_decoys : (int, int), default (2, 3)
        Inclusive range of the number of decoy clusters.
    jitter : float, default 0.2
        Noise on the decoys' coordinates (motif edges have length 1).
    decoy_scale : float, default 0.8
        Decoys are shrunk by this factor before the noise, so that the noise does not push their neighbours out
        of the cutoff (which would make them sparser than the motif).
    separation : float, default 3.2
        Minimum distance between cluster centres.
    box : float, default 4.0
        Cluster centres are uniform in ``[-box, box]^3``.
    scale_jitter : float, default 0.05
        Every cluster is scaled by a uniform factor in ``1 +- scale_jitter``.
    random_state : None, int or numpy Generator
        Source of randomness.
    dtype : torch.dtype, default torch.float32
        Floating dtype.

    Returns
    -------
    Graphs
        With ``y`` (motif index) and ``node_mask`` (the class motif's nodes).
    """
    if n_graphs < 1:
        raise ValueError(f"n_graphs must be positive, got {n_graphs}")
    rng = check_random_state(random_state)
    names = tuple(MOTIFS)
    pos_list, masks, labels = [], [], []
    for g in range(n_graphs):
        label = g % len(names)
        n = int(rng.integers(n_decoys[0], n_decoys[1] + 1))
        centres: list[np.ndarray] = []
        while len(centres) < n + 1:
            c = rng.uniform(-box, box, size=3)
            if all(np.linalg.norm(c - d) >= separation for d in centres):
                centres.append(c)
        clusters = []
        for k, centre in enumerate(centres):
            kind = names[label] if k == 0 else names[int(rng.integers(len(names)))]
            points = MOTIFS[kind] * rng.uniform(1 - scale_jitter, 1 + scale_jitter)
            if k:
                points = points * decoy_scale + rng.normal(scale=jitter, size=points.shape)
            clusters.append(points @ random_rotation(rng).T + centre)
        pos_list.append(np.concatenate(clusters))
        masks.append(np.arange(len(pos_list[-1])) < len(clusters[0]))
        labels.append(label)
    return _finish(pos_list, masks, labels, rng, dtype)


def helix(n_points: int, *, handed: int = 1, radius: float = 1.0, turn: float = np.pi / 3,
          rise: float = 0.35) -> np.ndarray:
    """Points on a helix, centred; ``handed=+1`` right-handed, ``-1`` its mirror image.

    Parameters
    ----------
    n_points : int
        Number of points.
    handed : {1, -1}, default 1
        Handedness.
    radius : float, default 1.0
        Helix radius.
    turn : float, default pi / 3
        Angle between consecutive points (radians).
    rise : float, default 0.35
        Height between consecutive points.

    Returns
    -------
    numpy.ndarray, shape (n_points, 3)
        The points.
    """
    t = np.arange(n_points) * turn
    pts = np.stack([radius * np.cos(t), handed * radius * np.sin(t), rise * np.arange(n_points)], axis=1)
    return pts - pts.mean(axis=0)


def make_spiral(n_graphs: int, *, helix_points: tuple[int, int] = (7, 9), n_distractors: tuple[int, int] = (8, 14),
                box: float = 2.5, min_dist: float = 0.9, random_state: RandomStateLike = None,
                dtype: torch.dtype = torch.float32) -> Graphs:
    """Spiral Noise: a left- or right-handed helix among distractors; label 1 = right-handed.

    Parameters
    ----------
    n_graphs : int
        Number of graphs; labels alternate.
    helix_points : (int, int), default (7, 9)
        Inclusive range of helix lengths.
    n_distractors : (int, int), default (8, 14)
        Inclusive range of distractor counts.
    box : float, default 2.5
        Distractors are uniform in ``[-box, box]^3``.
    min_dist : float, default 0.9
        Minimum distance of a distractor to every other point (helix steps are about 1.06).
    random_state : None, int or numpy Generator
        Source of randomness.
    dtype : torch.dtype, default torch.float32
        Floating dtype.

    Returns
    -------
    Graphs
        With ``y`` (handedness) and ``node_mask`` (helix nodes).
    """
    if n_graphs < 1:
        raise ValueError(f"n_graphs must be positive, got {n_graphs}")
    rng = check_random_state(random_state)
    pos_list, masks, labels = [], [], []
    for g in range(n_graphs):
        label = g % 2
        core = helix(int(rng.integers(helix_points[0], helix_points[1] + 1)), handed=1 if label else -1)
        core = core @ random_rotation(rng).T
        n = int(rng.integers(n_distractors[0], n_distractors[1] + 1))
        pos = _add_distractors(core, n, box, min_dist, rng)
        pos_list.append(pos)
        masks.append(np.arange(len(pos)) < len(core))
        labels.append(label)
    return _finish(pos_list, masks, labels, rng, dtype)
