"""Input checks shared by the solver, the accounting and the mechanism."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from icml25_shared.validation import Interval, check_param

_CHUNK_ROWS = 1 << 16


def as_numpy(array: Any, *, name: str) -> np.ndarray:
    """A numpy view of a numpy array or torch tensor (moved to CPU, detached)."""
    if hasattr(array, "detach") and hasattr(array, "cpu"):
        array = array.detach().cpu().numpy()
    out = np.asarray(array)
    if out.dtype == object or not (np.issubdtype(out.dtype, np.floating) or np.issubdtype(out.dtype, np.integer)):
        raise TypeError(f"{name} must be a real numeric array or tensor, got dtype {out.dtype}")
    return out


def check_differences(differences: Any) -> np.ndarray:
    """Validate outcome differences; return a 2-D (n, d) array (1-D input is one difference).

    The array keeps its dtype (float32 stays float32) so that a large d is not copied; every reduction
    done on it is accumulated in float64.
    """
    diffs = as_numpy(differences, name="differences")
    if diffs.ndim == 1:
        diffs = diffs[None, :]
    if diffs.ndim != 2:
        raise ValueError(f"differences must have shape (n_differences, dim) or (dim,), got shape {diffs.shape}")
    n, d = diffs.shape
    if n == 0 or d == 0:
        raise ValueError(f"differences must be non-empty, got shape {diffs.shape}")
    if np.issubdtype(diffs.dtype, np.integer):
        diffs = diffs.astype(np.float64)
    sq = row_sq_norms(diffs)
    if not np.all(np.isfinite(sq)):
        bad = np.flatnonzero(~np.isfinite(sq))[:5].tolist()
        raise ValueError(f"differences must be finite; rows {bad} contain NaN or inf (or overflow when squared)")
    if np.any(sq == 0):
        bad = np.flatnonzero(sq == 0)[:5].tolist()
        raise ValueError(
            f"differences rows {bad} are all zero; a zero difference needs no noise, drop it before "
            "calling (every row must be a non-zero outcome difference)"
        )
    return diffs


def row_sq_norms(diffs: np.ndarray) -> np.ndarray:
    """Squared Euclidean norm of each row, accumulated in float64 chunk by chunk."""
    return np.diag(gram(diffs)).copy()


def gram(diffs: np.ndarray) -> np.ndarray:
    """Diffs @ diffs.T in float64, streaming over columns so a float32 (n, 10^6) input is never copied whole."""
    n, d = diffs.shape
    if diffs.dtype == np.float64:
        return diffs @ diffs.T
    out = np.zeros((n, n))
    for start in range(0, d, _CHUNK_ROWS):
        block = np.asarray(diffs[:, start : start + _CHUNK_ROWS], dtype=np.float64)
        out += block @ block.T
    return out


def check_budgets(budgets: Any, n: int) -> np.ndarray:
    """Broadcast budgets to shape (n,), all positive and finite."""
    arr = np.asarray(as_numpy(budgets, name="budgets"), dtype=np.float64)
    if arr.ndim == 0:
        arr = np.full(n, float(arr))
    if arr.shape != (n,):
        raise ValueError(
            f"budgets must be a scalar or have shape ({n},) to match {n} differences, got shape {arr.shape}"
        )
    if not np.all(np.isfinite(arr)) or np.any(arr <= 0):
        raise ValueError(f"budgets must be positive and finite, got min {arr.min()!r}, max {arr.max()!r}")
    return arr


def check_positive(value: Any, *, name: str, allow_inf: bool = False, owner: str | None = None) -> float:
    """A positive (finite unless ``allow_inf``) real: TypeError for a non-number, ValueError out of range."""
    high = None if allow_inf else math.inf
    check_param(name, value, [Interval(float, 0, high, closed="neither")], owner=owner)
    return float(value)


def check_delta(delta: Any, *, owner: str | None = None) -> float:
    """A delta in the open interval (0, 1)."""
    check_param("delta", delta, [Interval(float, 0, 1, closed="neither")], owner=owner)
    return float(delta)


def check_steps(steps: Any, *, name: str = "steps", owner: str | None = None) -> int:
    """A positive int (a number of composed releases, rounds or steps)."""
    check_param(name, steps, [Interval(int, 1, None)], owner=owner)
    return int(steps)
