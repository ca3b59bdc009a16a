"""Phoneme guidance: per-phoneme average magnitude spectra tiled by an alignment into ``text_spec``.

The STFT is the refiner's: ``n_fft = 510`` (256 bins), hop 128, periodic Hann window, centred frames,
so a waveform of ``128 * F`` samples has ``F + 1`` frames. An alignment is a list of ``(phone, frames)``
pairs; phonemes lose their stress digits and the pause labels of forced aligners (``sp``) read as ``sil``.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import numpy as np
import torch

from de_antifake.audio import _float_samples, _not_fitted
from de_antifake.corpus import HOP, _strip_stress, _word_list, pronounce

__all__ = ["MAX_UNCOVERED", "N_BINS", "N_FFT", "SILENCE_LABELS", "PhonemeSpectra", "alignment_from_intervals", "alignment_from_words",
           "stft"]

MAX_UNCOVERED = 2
"""STFT frames at the end of an utterance an alignment may leave uncovered (rounding of interval ends and the
extra centred frame); an alignment that stops earlier is refused, since its phones would not match the audio
(e.g. 10 ms alignment frames read as 128-sample frames)."""

N_FFT = 510
"""FFT length of the refiner's STFT."""
N_BINS = N_FFT // 2 + 1
"""Frequency bins of the refiner's STFT (256)."""


def stft(wav: torch.Tensor) -> torch.Tensor:
    """Complex STFT ``(..., 256, 1 + n // 128)`` of ``(..., n)`` waveforms (``n >= 256``, else ``ValueError``)."""
    shape = wav.shape
    if shape[-1] <= N_FFT // 2:  # the centred frames reflect-pad by 255 samples
        raise ValueError(f"a waveform of {shape[-1]} samples is too short for the refiner's STFT "
                         f"(at least {N_FFT // 2 + 1} samples, 16 ms)")
    x = wav.reshape(-1, shape[-1])
    spec = torch.stft(x, N_FFT, hop_length=HOP, window=torch.hann_window(N_FFT, periodic=True, dtype=x.dtype),
                      center=True, return_complex=True)
    return spec.reshape(*shape[:-1], *spec.shape[-2:])


def istft(spec: torch.Tensor, length: int) -> torch.Tensor:
    """Inverse of :func:`stft` to ``length`` samples."""
    shape = spec.shape
    x = spec.reshape(-1, *shape[-2:])
    wav = torch.istft(x, N_FFT, hop_length=HOP, window=torch.hann_window(N_FFT, periodic=True, dtype=x.real.dtype),
                      center=True, length=length)
    return wav.reshape(*shape[:-2], length)


SILENCE_LABELS = frozenset({"sil", "SIL", "sp", "SP"})
"""Labels read as silence (``sil``) in every alignment: Montreal Forced Aligner writes ``sp`` for short pauses.
``spn`` (spoken noise: a word the aligner did not know) is not silence and has no spectrum of its own."""


def _clean(alignment) -> list[tuple[str, int]]:
    out = []
    for item in alignment:
        if len(item) != 2:
            raise ValueError(f"an alignment entry must be (phone, frames), got {item!r}")
        p, d = item
        if int(d) != d or d < 1:
            raise ValueError(f"phone {p!r} has duration {d}; durations are whole frames >= 1")
        p = "sil" if p in SILENCE_LABELS else _strip_stress(str(p))
        out.append((p, int(d)))
    if not out:
        raise ValueError("the alignment is empty")
    return out


class PhonemeSpectra:
    """Average magnitude spectrum (256 bins) of every phoneme seen in clean speech.

    Attributes
    ----------
    spectra_ : dict of str to numpy.ndarray
        Phone -> ``(256,)`` float64 mean magnitude, keys sorted.
    counts_ : dict of str to int
        Frames averaged per phone.

    Examples
    --------
    >>> from de_antifake.corpus import make_corpus
    >>> c = make_corpus(n_speakers=1, n_utterances=2, seconds=1.0, words_per_utterance=1)
    >>> ps = PhonemeSpectra().fit([(u.wav, u.alignment) for u in c.utterances])
    >>> phone = c.utterances[0].phones[1]
    >>> ps.text_spec([("sil", 3), (phone, 2)]).shape
    (256, 5)
    """

    def fit(self, data: Iterable[tuple[np.ndarray, Sequence[tuple[str, int]]]]) -> PhonemeSpectra:
        """Average the STFT magnitude frames of each phone over ``(wav, alignment)`` pairs.

        Each phone owns the frames ``[start, start + frames)`` of its alignment; the extra centred
        frame at the end (at most :data:`MAX_UNCOVERED` frames) belongs to the last phone.

        Raises
        ------
        ValueError
            When an alignment is longer than its audio or stops more than :data:`MAX_UNCOVERED` frames
            before its end.
        """
        sums: dict[str, np.ndarray] = {}
        counts: dict[str, int] = {}
        for wav, alignment in data:
            align = _clean(alignment)
            total = sum(d for _, d in align)
            mag = stft(torch.as_tensor(_float_samples(wav, name="wav", dtype=np.float64))).abs().numpy()
            if total > mag.shape[1]:
                raise ValueError(f"alignment covers {total} frames but the audio has {mag.shape[1]}")
            if mag.shape[1] - total > MAX_UNCOVERED:
                raise ValueError(f"alignment covers {total} frames of {HOP} samples but the audio has {mag.shape[1]}: "
                                 "it does not reach the end of the audio (frames must be 128-sample frames)")
            start = 0
            for i, (p, d) in enumerate(align):
                stop = mag.shape[1] if i == len(align) - 1 else start + d
                sums[p] = sums.get(p, 0.0) + mag[:, start:stop].sum(axis=1)
                counts[p] = counts.get(p, 0) + (stop - start)
                start += d
        if not counts:
            raise ValueError("no utterances to average")
        self.spectra_ = {p: sums[p] / counts[p] for p in sorted(sums)}
        self.counts_ = {p: counts[p] for p in sorted(counts)}
        return self

    def _check(self):
        if not hasattr(self, "spectra_"):
            raise _not_fitted("PhonemeSpectra is not fitted: call fit first")

    def text_spec(self, alignment: Sequence[tuple[str, int]]) -> np.ndarray:
        """Tile the phone spectra by the alignment: shape ``(256, sum of frames)``.

        Raises
        ------
        KeyError
            Naming a phone never seen in fit.
        """
        self._check()
        align = _clean(alignment)
        missing = sorted({p for p, _ in align} - set(self.spectra_))
        if missing:
            hint = ("; 'spn' is the aligner's spoken noise: rename it (e.g. to 'sil') or drop the word"
                    if "spn" in missing else "")
            raise KeyError(f"phones {missing} have no average spectrum (seen: {len(self.spectra_)} phones){hint}")
        return np.concatenate([np.repeat(self.spectra_[p][:, None], d, axis=1) for p, d in align], axis=1)

    def text_spec_for(self, alignment, n_frames: int) -> np.ndarray:
        """:meth:`text_spec` padded with ``sil`` to the ``n_frames`` STFT frames of an utterance.

        Raises
        ------
        ValueError
            When the alignment is longer than the audio, or stops more than :data:`MAX_UNCOVERED` frames
            before its end.
        """
        spec = self.text_spec(alignment)
        if spec.shape[1] > n_frames:
            raise ValueError(f"the alignment covers {spec.shape[1]} frames but the audio has only {n_frames}")
        if n_frames - spec.shape[1] > MAX_UNCOVERED:
            raise ValueError(f"the alignment covers {spec.shape[1]} frames of {HOP} samples but the audio has "
                             f"{n_frames}: it does not reach the end of the audio (frames must be 128-sample frames)")
        fill = self.spectra_.get("sil", spec[:, -1])
        if spec.shape[1] < n_frames:
            spec = np.concatenate([spec, np.repeat(fill[:, None], n_frames - spec.shape[1], axis=1)], axis=1)
        return spec


def alignment_from_words(words: Sequence[str], n_frames: int, *, lead: int = 8) -> list[tuple[str, int]]:
    """An even alignment of a transcript when no forced aligner is available.

    ``lead`` frames of ``sil`` open and close the utterance; the phones of the words (``cmudict``)
    share the remaining frames equally.

    Raises
    ------
    KeyError
        Naming a word missing from ``cmudict``.
    ValueError
        When the words do not fit (fewer frames than phones).
    """
    phones = [p for w in _word_list(words) for p in pronounce(w)]
    inner = n_frames - 2 * lead
    if not phones or inner < len(phones):
        raise ValueError(f"{len(phones)} phones do not fit in {n_frames} frames")
    base, extra = divmod(inner, len(phones))
    return [("sil", lead)] + [(p, base + (i < extra)) for i, p in enumerate(phones)] + [("sil", lead)]


def alignment_from_intervals(intervals: Sequence[tuple[str, float, float]]) -> list[tuple[str, int]]:
    """Convert ``(phone, start_s, end_s)`` intervals (a TextGrid tier) to ``(phone, frames)`` pairs.

    A gap before an interval (including before the first one) becomes ``sil``, so later phones keep
    their times.

    Raises
    ------
    ValueError
        When intervals overlap or run backwards.
    """
    out: list[tuple[str, int]] = []
    cursor, last_end = 0, 0.0
    for p, a, b in intervals:
        if b < a or a < last_end - 1e-6:
            raise ValueError(f"interval {p!r} ({a}, {b}) overlaps the previous one or runs backwards")
        last_end = b
        start, stop = int(round(a * 16000 / HOP)), int(round(b * 16000 / HOP))
        if start > cursor:
            out.append(("sil", start - cursor))
            cursor = start
        if stop > cursor:
            out.append((p, stop - cursor))
            cursor = stop
    return out
