"""Every purifier behind one interface: ``purify(wav, sr) -> wav`` of the same length.

Signal-processing baselines (the official ``time_defense`` family): AS (moving average), MS (moving
median), DS (down- then up-sampling), LPF and BPF (Butterworth, zero phase). Codecs (MP3, Opus, ...)
run through an ``ffmpeg`` binary when one is installed; :func:`available_codecs` says which are
skipped and why. AudioPure is :class:`~de_antifake.diffusion.DiffWavePurifier` at ``t`` in 2..5.
"""

from __future__ import annotations

import shutil
import subprocess
import tempfile
from pathlib import Path
from typing import Protocol, runtime_checkable

import numpy as np
from scipy import io as sio
from scipy import ndimage, signal

from de_antifake.audio import SAMPLE_RATE, as_mono

__all__ = ["AveragePurifier", "BandPassPurifier", "CodecPurifier", "DownsamplePurifier", "LowPassPurifier",
           "MedianPurifier", "Purifier", "available_codecs"]


@runtime_checkable
class Purifier(Protocol):
    """A purification defence: a name and ``purify(wav, sr)`` returning 16 kHz samples of the same length."""

    name: str

    def purify(self, wav, sr) -> np.ndarray:
        """Purified samples (float32, same length)."""
        ...


class AveragePurifier:
    """AS: centred moving average over ``width`` samples (default 3)."""

    name = "AS"

    def __init__(self, *, width: int = 3) -> None:
        if int(width) < 1:
            raise ValueError(f"width must be >= 1, got {width}")
        self.width = int(width)

    def purify(self, wav, sr) -> np.ndarray:
        """Moving average of the waveform."""
        x = as_mono(wav, sr)
        return ndimage.uniform_filter1d(x, self.width, mode="nearest").astype(np.float32)


class MedianPurifier:
    """MS: centred moving median over ``width`` samples (default 3)."""

    name = "MS"

    def __init__(self, *, width: int = 3) -> None:
        if int(width) < 1:
            raise ValueError(f"width must be >= 1, got {width}")
        self.width = int(width)

    def purify(self, wav, sr) -> np.ndarray:
        """Moving median of the waveform."""
        return ndimage.median_filter(as_mono(wav, sr), self.width, mode="nearest").astype(np.float32)


class DownsamplePurifier:
    """DS: resample to ``rate`` Hz (default 8000) and back (polyphase, scipy)."""

    name = "DS"

    def __init__(self, *, rate: int = 8000) -> None:
        if not 0 < int(rate) < SAMPLE_RATE:
            raise ValueError(f"rate must be in (0, {SAMPLE_RATE}), got {rate}")
        self.rate = int(rate)

    def purify(self, wav, sr) -> np.ndarray:
        """Down- and up-sampled waveform."""
        x = as_mono(wav, sr)
        g = np.gcd(self.rate, SAMPLE_RATE)
        low = signal.resample_poly(x, self.rate // g, SAMPLE_RATE // g)
        return signal.resample_poly(low, SAMPLE_RATE // g, self.rate // g)[: len(x)].astype(np.float32)


class LowPassPurifier:
    """LPF: zero-phase Butterworth low-pass (``cutoff`` Hz, default 4000; ``order`` 6)."""

    name = "LPF"

    def __init__(self, *, cutoff: float = 4000.0, order: int = 6) -> None:
        if not 0 < cutoff < SAMPLE_RATE / 2:
            raise ValueError(f"cutoff must be in (0, {SAMPLE_RATE // 2}) Hz, got {cutoff}")
        self.sos = signal.butter(order, cutoff, btype="lowpass", fs=SAMPLE_RATE, output="sos")

    def purify(self, wav, sr) -> np.ndarray:
        """Low-passed waveform."""
        return _zero_phase(self.sos, as_mono(wav, sr), type(self).__name__)


class BandPassPurifier:
    """BPF: zero-phase Butterworth band-pass (default 300..4000 Hz, order 4)."""

    name = "BPF"

    def __init__(self, *, low: float = 300.0, high: float = 4000.0, order: int = 4) -> None:
        if not 0 < low < high < SAMPLE_RATE / 2:
            raise ValueError(f"need 0 < low < high < {SAMPLE_RATE // 2}, got {low}, {high}")
        self.sos = signal.butter(order, [low, high], btype="bandpass", fs=SAMPLE_RATE, output="sos")

    def purify(self, wav, sr) -> np.ndarray:
        """Band-passed waveform."""
        return _zero_phase(self.sos, as_mono(wav, sr), type(self).__name__)


_CODECS = {"MP3": ("libmp3lame", "mp3"), "OPUS": ("libopus", "ogg"), "AAC": ("aac", "m4a"),
           "SPEEX": ("libspeex", "ogg"), "AMR": ("libopencore_amrnb", "amr")}


def available_codecs() -> dict[str, str | None]:
    """Codec name -> ``None`` when usable, else the reason it is skipped."""
    exe = shutil.which("ffmpeg")
    if exe is None:
        return {name: "no ffmpeg binary on PATH" for name in _CODECS}
    try:
        listing = subprocess.run([exe, "-hide_banner", "-encoders"], capture_output=True, text=True, timeout=30).stdout
    except (OSError, subprocess.SubprocessError) as err:
        return {name: f"ffmpeg failed: {err}" for name in _CODECS}
    return {name: None if enc in listing else f"ffmpeg has no {enc} encoder" for name, (enc, _) in _CODECS.items()}


class CodecPurifier:
    """Encode and decode with a lossy codec through ``ffmpeg`` (``bitrate`` default ``"16k"``).

    Raises
    ------
    RuntimeError
        At construction, with the reason, when the codec is not available here.
    """

    def __init__(self, codec: str = "MP3", *, bitrate: str = "16k") -> None:
        codec = codec.upper()
        if codec not in _CODECS:
            raise ValueError(f"codec must be one of {sorted(_CODECS)}, got {codec!r}")
        reason = available_codecs()[codec]
        if reason is not None:
            raise RuntimeError(f"codec {codec} unavailable: {reason}")
        self.name, self.codec, self.bitrate = codec, codec, bitrate

    def purify(self, wav, sr) -> np.ndarray:
        """Round trip through the codec (resampled to 8 kHz for AMR by ffmpeg and back)."""
        x = as_mono(wav, sr)
        enc, ext = _CODECS[self.codec]
        with tempfile.TemporaryDirectory() as tmp:
            src, mid, dst = Path(tmp, "in.wav"), Path(tmp, f"mid.{ext}"), Path(tmp, "out.wav")
            sio.wavfile.write(src, SAMPLE_RATE, np.clip(x, -1, 1))
            extra = ["-ar", "8000"] if self.codec == "AMR" else []
            subprocess.run(["ffmpeg", "-y", "-loglevel", "error", "-i", str(src), "-c:a", enc, "-b:a", self.bitrate,
                            *extra, str(mid)], check=True, timeout=120)
            subprocess.run(["ffmpeg", "-y", "-loglevel", "error", "-i", str(mid), "-ar", str(SAMPLE_RATE), "-ac", "1",
                            "-f", "wav", "-c:a", "pcm_f32le", str(dst)], check=True, timeout=120)
            _, y = sio.wavfile.read(dst)
        y = np.asarray(y, dtype=np.float32)
        out = np.zeros_like(x)
        out[: min(len(x), len(y))] = y[: len(x)]
        return out


def _zero_phase(sos: np.ndarray, x: np.ndarray, owner: str) -> np.ndarray:
    """``sosfiltfilt`` with scipy's default padding, naming a clip too short for it."""
    from scipy import signal

    padlen = 3 * (2 * len(sos) + 1 - min((sos[:, 2] == 0).sum(), (sos[:, 5] == 0).sum()))
    if x.size <= padlen:
        raise ValueError(f"{owner}: a waveform of {x.size} samples is too short for the zero-phase filter "
                         f"(it needs more than {padlen} samples, {padlen / 16:.1f} ms)")
    return signal.sosfiltfilt(sos, x).astype(np.float32)
