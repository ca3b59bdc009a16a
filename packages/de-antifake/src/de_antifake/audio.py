"""Waveform validation, SNR and the spectral helpers every stage shares.

All stages work at 16 kHz mono. A waveform is always passed together with its sampling rate; a stereo
array of shape ``(2, n)`` or ``(n, 2)`` (the smaller axis being the channels) is averaged to mono.
"""

from __future__ import annotations

import functools
import importlib
import numbers

import numpy as np

__all__ = ["SAMPLE_RATE", "as_mono", "snr_db"]

SAMPLE_RATE = 16000
"""The sampling rate (Hz) every model of this package works at."""


def as_mono(wav, sr, *, name: str = "wav") -> np.ndarray:
    """Validate a waveform and its sampling rate; return float32 mono samples.

    Parameters
    ----------
    wav : array_like
        Samples, shape ``(n,)`` or a stereo ``(2, n)`` / ``(n, 2)`` array (channels are averaged).
    sr : int
        Sampling rate in Hz; must equal :data:`SAMPLE_RATE` (resample before calling).
    name : str, default "wav"
        The argument's name used in error messages.

    Returns
    -------
    numpy.ndarray
        Shape ``(n,)``, float32.

    Raises
    ------
    ValueError
        When ``sr`` is missing or not 16000, the samples are integers (PCM, e.g. ``int16``: scale
        them to [-1, 1] first), contain NaN or inf, or the array is empty or has more than two axes.

    Examples
    --------
    >>> import numpy as np
    >>> as_mono(np.ones((2, 4)), 16000).shape
    (4,)
    """
    if sr is None:
        raise ValueError(f"{name}: a sampling rate `sr` is required (this package works at {SAMPLE_RATE} Hz)")
    if not isinstance(sr, numbers.Integral) or isinstance(sr, bool):
        raise ValueError(f"{name}: sr must be an integer number of Hz, got {sr!r}")
    if int(sr) != SAMPLE_RATE:
        raise ValueError(f"{name}: sr={sr} Hz but the models work at {SAMPLE_RATE} Hz; resample first")
    raw = np.asarray(wav)
    if raw.dtype.kind in "iub":
        raise ValueError(f"{name}: integer samples (dtype {raw.dtype}) would be read as amplitudes up to "
                         f"{np.iinfo(raw.dtype).max if raw.dtype.kind != 'b' else 1}; scale PCM to [-1, 1] first, "
                         "e.g. wav.astype(np.float32) / 32768 for int16")
    arr = raw.astype(np.float64)
    if arr.ndim == 2:
        if min(arr.shape) > 2:
            raise ValueError(f"{name}: shape {arr.shape} is neither mono (n,) nor stereo (2, n) / (n, 2)")
        if max(arr.shape) <= 2:  # (2, 2), (1, 2), ...: either axis could hold the channels
            raise ValueError(f"{name}: shape {arr.shape} does not say which axis holds the channels; "
                             "pass mono (n,) samples")
        arr = arr.mean(axis=int(np.argmin(arr.shape)))
    elif arr.ndim != 1:
        raise ValueError(f"{name}: expected a 1-D waveform (or stereo 2-D), got shape {arr.shape}")
    if arr.size == 0:
        raise ValueError(f"{name}: the waveform is empty")
    bad = ~np.isfinite(arr)
    if bad.any():
        raise ValueError(f"{name}: {int(bad.sum())} samples are NaN or infinite (first at index {int(np.argmax(bad))})")
    return arr.astype(np.float32)


def _float_samples(wav, *, name: str, dtype=np.float32) -> np.ndarray:
    """Training inputs without a sampling rate: refuse integer PCM and NaN/inf samples, return ``dtype``."""
    raw = np.asarray(wav)
    if raw.dtype.kind in "iub":
        raise ValueError(f"{name}: integer samples (dtype {raw.dtype}) would be read as amplitudes far above 1; "
                         "scale PCM to [-1, 1] first, e.g. wav.astype(np.float32) / 32768 for int16")
    arr = raw.astype(dtype)
    bad = ~np.isfinite(arr)
    if bad.any():
        raise ValueError(f"{name}: {int(bad.sum())} samples are NaN or infinite")
    return arr


def _own_torch_rng(fn):
    """Run ``fn`` on a forked torch CPU generator, leaving the caller's global RNG as it was.

    Both a seeded fit and the random initial weights of every network ``fn`` builds draw from the fork.
    """

    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        import torch

        with torch.random.fork_rng(devices=[]):
            return fn(*args, **kwargs)

    return wrapper


def _trains(fn):
    """Run the training function ``fn`` with gradients on, whatever the caller's ``no_grad``/``inference_mode``."""

    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        import torch

        with torch.inference_mode(False), torch.enable_grad():
            return fn(*args, **kwargs)

    return wrapper


def _not_fitted(message: str) -> Exception:
    """Build ``sklearn.exceptions.NotFittedError(message)``, or an equivalent error without scikit-learn.

    scikit-learn is not a dependency; without it the error is a ``ValueError``/``AttributeError``
    subclass of the same name, as scikit-learn's is.
    """
    try:  # optional: scikit-learn's own class when it is installed
        NotFittedError = importlib.import_module("sklearn.exceptions").NotFittedError
    except ImportError:
        NotFittedError = type("NotFittedError", (ValueError, AttributeError), {"__module__": __name__})
    return NotFittedError(message)


def snr_db(reference, estimate) -> float:
    """Signal-to-noise ratio of ``estimate`` against ``reference`` in dB.

    Parameters
    ----------
    reference, estimate : array_like
        Same-length waveforms.

    Returns
    -------
    float
        ``10 log10(sum(reference^2) / sum((estimate - reference)^2))``; ``inf`` when they are equal.

    Examples
    --------
    >>> round(snr_db([1.0, -1.0], [1.1, -1.1]), 3)
    20.0
    """
    ref = np.asarray(reference, dtype=np.float64)
    est = np.asarray(estimate, dtype=np.float64)
    if ref.shape != est.shape:
        raise ValueError(f"snr_db: shapes differ, {ref.shape} vs {est.shape}")
    noise = float(np.sum((est - ref) ** 2))
    if noise == 0.0:
        return float("inf")
    return float(10.0 * np.log10(float(np.sum(ref**2)) / noise))
