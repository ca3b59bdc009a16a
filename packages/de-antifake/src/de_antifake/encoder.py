"""Speaker encoders with a differentiable front end: the pretrained GE2E model of ``resemblyzer``.

:class:`ResemblyzerEncoder` is a torch module of the same shape as ``resemblyzer.VoiceEncoder``
(3-layer LSTM of 256 units, a linear layer, ReLU, L2 normalisation, utterance embedding = normalised mean
of 160-frame partials) whose front end (:class:`MelFrontEnd`, a *power* mel spectrogram: 16 kHz, 25 ms
Hann window, 10 ms hop, 40 Slaney mels, centred frames with zero padding) is rebuilt in torch, so that
gradients reach the waveform. The weights are the ``pretrained.pt`` shipped in the ``resemblyzer`` wheel,
read from the installed package folder without importing it.
"""

from __future__ import annotations

import importlib.util
import math
import numbers
from pathlib import Path

import numpy as np
import torch
from torch import nn

from de_antifake.audio import SAMPLE_RATE, _own_torch_rng, as_mono

__all__ = ["LEVEL_DBFS", "MelFrontEnd", "ResemblyzerEncoder", "eer_threshold", "slaney_mel_filterbank",
           "speech_bounds"]

LEVEL_DBFS = -30.0
"""The loudness (dBFS, RMS relative to full scale) clips are brought to before embedding, as resemblyzer's
``preprocess_wav`` and the official chain do."""

SILENCE_DB = -40.0
"""Leading and trailing 10 ms frames quieter than this (dB below the loudest frame) are trimmed."""


def speech_bounds(wav, *, silence_db: float = SILENCE_DB, frame: int = 160) -> tuple[int, int]:
    """Sample range from the first to the last 10 ms frame within ``silence_db`` of the loudest frame.

    The threshold is relative, so the range does not depend on the clip's level.

    Parameters
    ----------
    wav : array_like or torch.Tensor, shape (n,)
        One waveform.
    silence_db : float, default -40
        Frames whose RMS lies more than this many dB below the loudest frame's are silence.
    frame : int, default 160
        Frame length in samples (10 ms at 16 kHz).

    Returns
    -------
    (start, stop) : tuple of int
        ``wav[start:stop]`` is the clip without leading and trailing silence; ``(0, n)`` for a silent clip.

    Examples
    --------
    >>> import numpy as np
    >>> x = np.zeros(1600); x[480:800] = 0.5
    >>> speech_bounds(x), speech_bounds(0.01 * x)
    ((480, 800), (480, 800))
    """
    x = np.asarray(wav.detach().cpu() if isinstance(wav, torch.Tensor) else wav, dtype=np.float64).ravel()
    n = x.size
    n_frames = -(-n // frame)
    padded = np.zeros(n_frames * frame)
    padded[:n] = x
    rms = np.sqrt((padded.reshape(n_frames, frame) ** 2).mean(axis=1))
    peak = rms.max()
    if peak == 0.0:
        return 0, n
    loud = np.flatnonzero(rms >= peak * 10 ** (silence_db / 20))
    return int(loud[0] * frame), int(min(n, (loud[-1] + 1) * frame))


def _hz_to_mel(f):
    f = np.asarray(f, dtype=np.float64)
    f_sp, min_log_hz = 200.0 / 3, 1000.0
    logstep = math.log(6.4) / 27.0
    mel = f / f_sp
    return np.where(f >= min_log_hz, min_log_hz / f_sp + np.log(np.maximum(f, 1e-12) / min_log_hz) / logstep, mel)


def _mel_to_hz(m):
    m = np.asarray(m, dtype=np.float64)
    f_sp, min_log_hz = 200.0 / 3, 1000.0
    min_log_mel, logstep = min_log_hz / f_sp, math.log(6.4) / 27.0
    return np.where(m >= min_log_mel, min_log_hz * np.exp(logstep * (m - min_log_mel)), f_sp * m)


def slaney_mel_filterbank(sr: int, n_fft: int, n_mels: int, *, fmin: float = 0.0, fmax: float | None = None) -> np.ndarray:
    """Triangular mel filters on the Slaney scale with Slaney area normalisation.

    This is the filterbank ``librosa.filters.mel`` builds with its defaults (``htk=False``, ``norm="slaney"``).

    Parameters
    ----------
    sr : int
        Sampling rate in Hz.
    n_fft : int
        FFT length; the filters have ``n_fft // 2 + 1`` columns.
    n_mels : int
        Number of filters.
    fmin, fmax : float
        Band edges in Hz (``fmax`` defaults to ``sr / 2``).

    Returns
    -------
    numpy.ndarray
        Shape ``(n_mels, n_fft // 2 + 1)``, float32.

    Examples
    --------
    >>> slaney_mel_filterbank(16000, 400, 40).shape
    (40, 201)
    """
    fmax = sr / 2.0 if fmax is None else float(fmax)
    if not 0 <= fmin < fmax <= sr / 2.0:
        raise ValueError(f"need 0 <= fmin < fmax <= sr/2, got fmin={fmin}, fmax={fmax}, sr={sr}")
    fftfreqs = np.fft.rfftfreq(n=n_fft, d=1.0 / sr)
    mel_f = _mel_to_hz(np.linspace(_hz_to_mel(fmin), _hz_to_mel(fmax), n_mels + 2))
    fdiff = np.diff(mel_f)
    ramps = np.subtract.outer(mel_f, fftfreqs)
    lower = -ramps[:-2] / fdiff[:-1, None]
    upper = ramps[2:] / fdiff[1:, None]
    weights = np.maximum(0.0, np.minimum(lower, upper))
    weights *= (2.0 / (mel_f[2:] - mel_f[:-2]))[:, None]
    return weights.astype(np.float32)


class MelFrontEnd(nn.Module):
    """Differentiable power mel spectrogram (not log), the input of the GE2E encoder.

    Parameters
    ----------
    sample_rate : int, default 16000
        Sampling rate in Hz.
    window_ms, hop_ms : float, default 25 and 10
        Window length (also the FFT length) and hop in milliseconds.
    n_mels : int, default 40
        Mel channels.
    pad_mode : {"constant", "reflect"}, default "constant"
        Padding of the centred frames (``librosa`` >= 0.10 pads with zeros; older versions reflect).
    """

    def __init__(self, *, sample_rate: int = SAMPLE_RATE, window_ms: float = 25.0, hop_ms: float = 10.0,
                 n_mels: int = 40, pad_mode: str = "constant") -> None:
        super().__init__()
        if pad_mode not in ("constant", "reflect"):
            raise ValueError(f"pad_mode must be 'constant' or 'reflect', got {pad_mode!r}")
        self.sample_rate = int(sample_rate)
        self.n_fft = int(self.sample_rate * window_ms / 1000)
        self.hop = int(self.sample_rate * hop_ms / 1000)
        self.pad_mode = pad_mode
        self.window: torch.Tensor
        self.filters: torch.Tensor
        self.register_buffer("window", torch.hann_window(self.n_fft, periodic=True), persistent=False)
        fb = slaney_mel_filterbank(self.sample_rate, self.n_fft, n_mels)
        self.register_buffer("filters", torch.from_numpy(fb), persistent=False)

    def forward(self, wav: torch.Tensor) -> torch.Tensor:
        """Mel power spectrogram.

        Parameters
        ----------
        wav : torch.Tensor
            Shape ``(batch, n)`` or ``(n,)``.

        Returns
        -------
        torch.Tensor
            Shape ``(batch, 1 + n // hop, n_mels)``.
        """
        squeeze = wav.dim() == 1
        x = wav.unsqueeze(0) if squeeze else wav
        spec = torch.stft(x, self.n_fft, hop_length=self.hop, window=self.window.to(x.dtype), center=True,
                          pad_mode=self.pad_mode, return_complex=True)
        mel = torch.matmul(self.filters.to(x.dtype), spec.real**2 + spec.imag**2).transpose(1, 2)
        return mel[0] if squeeze else mel


def _as_wave_tensor(wav, dtype: torch.dtype, *, name: str = "wav", device: torch.device | None = None) -> torch.Tensor:
    """Validate the input of a differentiable ``embed``: ``(n,)`` or ``(batch, n)`` real samples, cast to ``dtype``.

    A tensor keeps its autograd graph (the cast is differentiable); an array is converted. Integer PCM,
    complex samples, NaN or inf, empty waveforms and more than two axes raise ``ValueError``.
    """
    x = wav if isinstance(wav, torch.Tensor) else torch.from_numpy(np.ascontiguousarray(wav))
    if x.is_complex():
        raise ValueError(f"{name}: complex samples (dtype {x.dtype}); pass real waveforms")
    if not x.is_floating_point():
        raise ValueError(f"{name}: integer samples (dtype {x.dtype}) would be read as amplitudes far above 1; "
                         "scale PCM to [-1, 1] first, e.g. wav.float() / 32768 for int16")
    if x.dim() not in (1, 2):
        raise ValueError(f"{name}: expected shape (n,) or (batch, n), got shape {tuple(x.shape)}")
    if x.numel() == 0:
        raise ValueError(f"{name}: the waveform is empty (shape {tuple(x.shape)})")
    if x.device.type != "meta" and not bool(torch.isfinite(x.detach()).all()):  # meta tensors hold no values
        raise ValueError(f"{name}: {int((~torch.isfinite(x.detach())).sum())} samples are NaN or infinite")
    return x.to(device=device, dtype=dtype)


def _resemblyzer_weights() -> Path:
    spec = importlib.util.find_spec("resemblyzer")
    if spec is None or not spec.submodule_search_locations:
        raise ImportError("the pretrained GE2E weights come with the `resemblyzer` wheel: "
                          "pip install 'de-antifake[resemblyzer]' (or pass weights=<path to pretrained.pt>)")
    return Path(next(iter(spec.submodule_search_locations))) / "pretrained.pt"


class ResemblyzerEncoder(nn.Module):
    """The GE2E speaker encoder of ``resemblyzer`` as a differentiable torch module.

    Parameters
    ----------
    hidden_size, embedding_size, num_layers : int
        LSTM width, embedding size and depth (256, 256, 3 for the pretrained weights).
    partial_frames : int, default 160
        Frames (10 ms each) per partial utterance.
    pad_mode : {"constant", "reflect"}, default "constant"
        Padding of the mel front end's centred frames.
    level_dbfs : float or None, default -30
        ``embed`` scales each clip to this RMS level (dBFS) first, as the official chain does with
        resemblyzer's ``normalize_volume``, so that a clip and a quieter copy get the same embedding;
        None feeds the samples as given (the bare network, as ``VoiceEncoder`` after your own
        preprocessing). The gain is part of the differentiable graph.
    trim_silence : bool, default True
        ``embed`` drops each clip's leading and trailing silence first (:func:`speech_bounds`, a
        level-independent threshold 40 dB below the loudest 10 ms frame), as the official chain trims
        silences before embedding; False keeps them.

    Notes
    -----
    Build a pretrained one with :meth:`from_pretrained`; a freshly constructed module has random
    weights (used in tests and to train a small d-vector model).

    Examples
    --------
    >>> import torch
    >>> enc = ResemblyzerEncoder(hidden_size=8, embedding_size=4, num_layers=1)
    >>> wav = torch.randn(2, 16000, requires_grad=True)
    >>> e = enc.embed(wav)
    >>> tuple(e.shape), bool(torch.allclose(e.norm(dim=1), torch.ones(2)))
    ((2, 4), True)
    """

    def __init__(self, *, hidden_size: int = 256, embedding_size: int = 256, num_layers: int = 3,
                 partial_frames: int = 160, pad_mode: str = "constant", level_dbfs: float | None = LEVEL_DBFS,
                 trim_silence: bool = True) -> None:
        super().__init__()
        from icml25_shared.validation import Interval, check_param

        check_param("level_dbfs", level_dbfs, [Interval(float, None, 0.0), None], owner=type(self).__name__)
        check_param("trim_silence", trim_silence, ["boolean"], owner=type(self).__name__)
        self.level_dbfs = None if level_dbfs is None else float(level_dbfs)
        self.trim_silence = bool(trim_silence)
        self.front = MelFrontEnd(pad_mode=pad_mode)
        self.partial_frames = int(partial_frames)
        self.lstm = nn.LSTM(40, hidden_size, num_layers, batch_first=True)
        self.linear = nn.Linear(hidden_size, embedding_size)
        self.relu = nn.ReLU()

    @classmethod
    @_own_torch_rng
    def from_pretrained(cls, weights: str | Path | None = None, *, pad_mode: str = "constant",
                        level_dbfs: float | None = LEVEL_DBFS, trim_silence: bool = True) -> ResemblyzerEncoder:
        """Load the GE2E weights (``checkpoint["model_state"]``) of the ``resemblyzer`` wheel.

        Parameters
        ----------
        weights : path, optional
            A ``pretrained.pt`` file; by default the one inside the installed ``resemblyzer`` package.
        pad_mode : str, default "constant"
            See :class:`MelFrontEnd`.
        level_dbfs, trim_silence
            The loudness normalisation and silence trimming of ``embed`` (see the class).

        Returns
        -------
        ResemblyzerEncoder
            In eval mode, parameters frozen (``requires_grad=False``); gradients still reach the input.

        Raises
        ------
        FileNotFoundError
            Naming the path when the weights file does not exist.
        """
        path = _resemblyzer_weights() if weights is None else Path(weights)
        if not path.is_file():
            raise FileNotFoundError(f"speaker-encoder weights not found: {path}")
        state = torch.load(path, map_location="cpu", weights_only=True)
        state = state.get("model_state", state)
        model = cls(pad_mode=pad_mode, level_dbfs=level_dbfs, trim_silence=trim_silence)
        wanted = {k: v for k, v in state.items() if k.startswith(("lstm.", "linear."))}
        missing = set(model.state_dict()) - set(wanted)
        if missing:
            raise ValueError(f"{path} is not a GE2E VoiceEncoder checkpoint: missing {sorted(missing)[:4]}")
        model.load_state_dict(wanted, strict=True)
        model.eval()
        for p in model.parameters():
            p.requires_grad_(False)
        return model

    def forward(self, mels: torch.Tensor) -> torch.Tensor:
        """Embeddings of a batch of partial mel spectrograms ``(batch, frames, 40)`` -> ``(batch, d)``."""
        _, (hidden, _) = self.lstm(mels)
        raw = self.relu(self.linear(hidden[-1]))
        return raw / (raw.pow(2).sum(dim=1, keepdim=True) + 1e-24).sqrt()  # finite gradient at 0

    def partial_slices(self, n_samples: int, *, rate: float = 1.3, min_coverage: float = 0.75) -> list[slice]:
        """Frame ranges of the partial utterances of an ``n_samples``-long waveform.

        Parameters
        ----------
        n_samples : int
            Waveform length.
        rate : float, default 1.3
            Partials per second.
        min_coverage : float, default 0.75
            The last partial is kept only if this share of it lies inside the waveform.

        Returns
        -------
        list of slice
            Frame slices, each ``partial_frames`` long.
        """
        if not 0 < min_coverage <= 1:
            raise ValueError(f"min_coverage must be in (0, 1], got {min_coverage}")
        if isinstance(rate, bool) or not (isinstance(rate, numbers.Real) and math.isfinite(rate) and rate > 0):
            raise ValueError(f"rate must be a finite number of partials per second > 0, got {rate!r}")
        hop = self.front.hop
        n_frames = int(np.ceil((n_samples + 1) / hop))
        step = int(np.round((self.front.sample_rate / rate) / hop))
        if not 0 < step <= self.partial_frames:
            raise ValueError(f"rate={rate} gives a partial step of {step} frames; need 1..{self.partial_frames}")
        steps = max(1, n_frames - self.partial_frames + step + 1)
        slices = [slice(i, i + self.partial_frames) for i in range(0, steps, step)]
        last = slices[-1]
        coverage = (n_samples - last.start * hop) / (self.partial_frames * hop)
        if coverage < min_coverage and len(slices) > 1:
            slices = slices[:-1]
        return slices

    def embed(self, wav: torch.Tensor, *, rate: float = 1.3, min_coverage: float = 0.75) -> torch.Tensor:
        """Utterance embeddings of equal-length waveforms, differentiable in the samples.

        Each clip is first trimmed of leading and trailing silence and brought to ``level_dbfs`` (unless
        those are turned off, see the class).

        Parameters
        ----------
        wav : torch.Tensor or array_like
            Shape ``(batch, n)`` or ``(n,)``, 16 kHz floating-point samples (float64 is cast to the
            model's dtype; gradients still reach the input).
        rate, min_coverage : float
            See :meth:`partial_slices`.

        Returns
        -------
        torch.Tensor
            Shape ``(batch, d)`` (or ``(d,)``), unit norm, in the model's dtype: the normalised mean of the
            partial embeddings.

        Raises
        ------
        ValueError
            For integer (PCM) or complex samples, NaN or inf, an empty waveform or more than two axes.
        """
        wav = _as_wave_tensor(wav, self.linear.weight.dtype, device=self.linear.weight.device)
        squeeze = wav.dim() == 1
        x = wav.unsqueeze(0) if squeeze else wav
        if self.trim_silence:  # first trim, then measure the level of what is left
            bounds = [speech_bounds(row) for row in x]
            if len(set(bounds)) > 1:  # clips of different speech lengths: one at a time
                emb = torch.cat([self._embed_equal(self._level(row[a:b][None]), rate, min_coverage)
                                 for row, (a, b) in zip(x, bounds, strict=True)])
                return emb[0] if squeeze else emb
            a, b = bounds[0]
            x = x[:, a:b]
        emb = self._embed_equal(self._level(x), rate, min_coverage)
        return emb[0] if squeeze else emb

    def _level(self, x: torch.Tensor) -> torch.Tensor:
        """Scale each row to ``level_dbfs`` RMS (silent rows stay silent)."""
        if self.level_dbfs is None:
            return x
        rms = x.pow(2).mean(dim=-1, keepdim=True).sqrt()
        gain = 10 ** (self.level_dbfs / 20) / rms.clamp(min=1e-12)
        return torch.where(rms > 0, x * gain, x)

    def _embed_equal(self, x: torch.Tensor, rate: float, min_coverage: float) -> torch.Tensor:
        slices = self.partial_slices(x.shape[-1], rate=rate, min_coverage=min_coverage)
        need = slices[-1].stop * self.front.hop
        if need >= x.shape[-1]:
            x = nn.functional.pad(x, (0, need - x.shape[-1]))
        mel = self.front(x)
        parts = torch.stack([mel[:, s] for s in slices], dim=1)  # (B, P, F, 40)
        b, p = parts.shape[:2]
        emb = self(parts.reshape(b * p, *parts.shape[2:])).reshape(b, p, -1).mean(dim=1)
        return emb / (emb.pow(2).sum(dim=1, keepdim=True) + 1e-24).sqrt()

    @torch.no_grad()
    def embed_utterance(self, wav, sr) -> np.ndarray:
        """Embedding of one waveform as a numpy array (the analogue of ``VoiceEncoder.embed_utterance``).

        Parameters
        ----------
        wav : array_like
            Samples (stereo is averaged).
        sr : int
            Sampling rate; must be 16000.

        Returns
        -------
        numpy.ndarray
            Shape ``(d,)``, float32, unit norm.
        """
        x = torch.from_numpy(as_mono(wav, sr))
        return self.embed(x).cpu().numpy()


def eer_threshold(genuine, impostor) -> tuple[float, float]:
    """Equal-error-rate threshold of cosine scores.

    Parameters
    ----------
    genuine, impostor : array_like
        Scores of same-speaker and different-speaker trials.

    Returns
    -------
    threshold : float
        The score at which the false-accept and false-reject rates are closest (accept when ``>=``).
    eer : float
        The mean of the two rates there.

    Examples
    --------
    >>> eer_threshold([0.9, 0.8, 0.7], [0.1, 0.2, 0.75])
    (0.75, 0.3333333333333333)
    """
    g = np.asarray(genuine, dtype=np.float64).ravel()
    i = np.asarray(impostor, dtype=np.float64).ravel()
    if g.size == 0 or i.size == 0:
        raise ValueError("eer_threshold needs at least one genuine and one impostor score")
    if not (np.isfinite(g).all() and np.isfinite(i).all()):
        raise ValueError("eer_threshold: scores contain NaN or inf (a NaN score is neither accepted nor rejected)")
    best: tuple[tuple[float, float], float, float] | None = None
    for thr in np.unique(np.concatenate([g, i])):
        frr, far = float(np.mean(g < thr)), float(np.mean(i >= thr))
        key = (abs(far - frr), thr)
        if best is None or key < best[0]:
            best = (key, float(thr), (far + frr) / 2)
    assert best is not None  # g and i are non-empty
    return best[1], best[2]
