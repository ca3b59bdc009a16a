"""LibriSpeech / VCTK folder readers on tiny fake folders with generated audio and MFA-style TextGrids."""

import numpy as np
import pytest
from scipy.io import wavfile

from de_antifake.corpus import _FRICATIVES, _STOPS, _VOICED, HOP
from de_antifake.datasets import PHONES, read_audio, read_librispeech, read_vctk
from de_antifake.phoneme import PhonemeSpectra

sf = pytest.importorskip("soundfile")


def _textgrid(path, phones, tier="phones"):
    """Write an MFA-style TextGrid: ``phones`` is a list of (label, start_s, end_s)."""
    end = phones[-1][2]
    items = "".join(f'            intervals [{i + 1}]:\n                xmin = {a}\n                xmax = {b}\n'
                    f'                text = "{lab}"\n' for i, (lab, a, b) in enumerate(phones))
    path.parent.mkdir(parents=True, exist_ok=True)
    head = (f'File type = "ooTextFile"\nObject class = "TextGrid"\n\nxmin = 0\nxmax = {end}\ntiers? <exists>\n'
            f'size = 2\nitem []:\n    item [1]:\n        class = "IntervalTier"\n        name = "words"\n'
            f'        xmin = 0\n        xmax = {end}\n        intervals: size = 1\n        intervals [1]:\n'
            f'            xmin = 0\n            xmax = {end}\n            text = "hi"\n'
            f'    item [2]:\n        class = "IntervalTier"\n        name = "{tier}"\n        xmin = 0\n'
            f'        xmax = {end}\n        intervals: size = {len(phones)}\n')
    path.write_text(head + items)


def _tone(n, f, sr, amp=0.3):
    return (amp * np.sin(2 * np.pi * f * np.arange(n) / sr)).astype(np.float32)


@pytest.fixture
def libri(tmp_path):
    root = tmp_path / "LibriSpeech"
    for spk, f0, stereo in (("19", 150.0, False), ("84", 220.0, True)):
        chapter = root / "dev-clean" / spk / "121"
        chapter.mkdir(parents=True)
        lines = []
        for u in range(2):
            x = _tone(HOP * 100, f0 * (u + 1), 16000)
            data = np.stack([x, 0.5 * x], axis=1) if stereo else x
            sf.write(chapter / f"{spk}-121-{u:04d}.flac", data, 16000, subtype="PCM_16")
            lines.append(f"{spk}-121-{u:04d} HELLO WORLD'S END")
            # MFA layout without the subset folder; 100 frames of 128 samples = 0.8 s
            _textgrid(tmp_path / "aligned" / spk / "121" / f"{spk}-121-{u:04d}.TextGrid",
                      [("", 0.0, 0.1), ("HH", 0.1, 0.2), ("AH0", 0.2, 0.5), ("sp", 0.5, 0.6), ("L", 0.6, 0.8)])
        (chapter / f"{spk}-121.trans.txt").write_text("\n".join(lines) + "\n")
    (root / "SPEAKERS.TXT").write_text(";ID  |SEX| SUBSET |MINUTES| NAME\n19   | F | dev-clean | 8.0 | A\n"
                                       "84   | M | dev-clean | 8.0 | B\n")
    return root


def test_phone_set_is_the_synthesisers():
    assert PHONES == set(_VOICED) | set(_FRICATIVES) | set(_STOPS) | {"sil"}


def test_librispeech_reads_audio_words_speakers_and_alignments(libri, tmp_path):
    c = read_librispeech(libri, alignments=tmp_path / "aligned")
    assert c.speaker_ids == ["19", "84"] and c.genders == ["F", "M"]
    assert [u.speaker for u in c.utterances] == [0, 0, 1, 1]
    assert c.utterances[0].words == ["HELLO", "WORLD'S", "END"]
    u = c.utterances[0]
    np.testing.assert_allclose(u.wav, _tone(HOP * 100, 150.0, 16000), atol=1 / 32768)
    # stereo (x, x/2) is averaged to 0.75 x
    np.testing.assert_allclose(c.utterances[2].wav, 0.75 * _tone(HOP * 100, 220.0, 16000), atol=2 / 32768)
    assert u.alignment == [("sil", 12), ("HH", 13), ("AH", 37), ("sil", 13), ("L", 25)]
    assert sum(u.durations) == len(u.wav) // HOP
    spectra = PhonemeSpectra().fit([(x.wav, x.alignment) for x in c.utterances])
    assert set(spectra.spectra_) == {"sil", "HH", "AH", "L"}


def test_librispeech_selection_and_crop(libri):
    c = read_librispeech(libri, speakers=["84"], max_per_speaker=1)
    assert c.speaker_ids == ["84"] and len(c.utterances) == 1 and c.utterances[0].speaker == 0
    assert c.utterances[0].alignment == []
    full = read_librispeech(libri)
    short = full.crop(0.5)
    assert short.waveforms().shape == (4, HOP * 62)
    with pytest.raises(ValueError, match="at least 2.0 s"):
        full.crop(2.0)
    with pytest.raises(ValueError, match=r"speakers \['7'\] not found"):
        read_librispeech(libri, speakers=["7"])
    one = read_librispeech(libri, subsets="dev-clean", speakers=84)  # a single name is not its characters
    assert one.speaker_ids == ["84"] and len(one.utterances) == 2
    with pytest.raises(ValueError, match="max_per_speaker"):
        read_librispeech(libri, max_per_speaker=0)


def test_crop_cuts_the_alignment_at_the_same_frame(libri, tmp_path):
    c = read_librispeech(libri, alignments=tmp_path / "aligned").crop(0.4)
    assert c.utterances[0].alignment == [("sil", 12), ("HH", 13), ("AH", 25)]
    PhonemeSpectra().fit([(u.wav, u.alignment) for u in c.utterances])


def test_librispeech_errors_name_the_path(libri, tmp_path):
    with pytest.raises(FileNotFoundError, match="nowhere"):
        read_librispeech(tmp_path / "nowhere")
    with pytest.raises(ValueError, match="pass the folder above the subsets"):
        read_librispeech(libri / "dev-clean")
    with pytest.raises(FileNotFoundError, match="alignment folder not found"):
        read_librispeech(libri, alignments=tmp_path / "missing")
    trans = libri / "dev-clean" / "84" / "121" / "84-121.trans.txt"
    trans.write_text("84-121-0000 HELLO\n")
    with pytest.raises(ValueError, match=r"no transcript line for .*84-121-0001\.flac"):
        read_librispeech(libri)


def test_textgrid_errors(libri, tmp_path):
    grid = tmp_path / "aligned" / "84" / "121" / "84-121-0001.TextGrid"
    _textgrid(grid, [("", 0.0, 0.1), ("ə", 0.1, 0.5), ("spn", 0.5, 0.8)])
    with pytest.raises(ValueError, match=r"84-121-0001\.TextGrid: phones \['spn', 'ə'\] are not in the ARPAbet"):
        read_librispeech(libri, alignments=tmp_path / "aligned")
    _textgrid(grid, [("", 0.0, 0.1), ("AH", 0.1, 0.9)])  # 0.9 s for 0.8 s of audio
    with pytest.raises(ValueError, match="covers 112 frames"):
        read_librispeech(libri, alignments=tmp_path / "aligned")
    _textgrid(grid, [("", 0.0, 0.1), ("AH", 0.1, 0.5)])  # stops 0.3 s early
    with pytest.raises(ValueError, match="does not belong to this audio"):
        read_librispeech(libri, alignments=tmp_path / "aligned")
    _textgrid(grid, [("", 0.0, 0.1), ("AH", 0.1, 0.8)], tier="84 - phones")  # MFA 1.x multi-speaker tier name
    c = read_librispeech(libri, alignments=tmp_path / "aligned")
    assert c.utterances[3].alignment == [("sil", 12), ("AH", 88)]
    _textgrid(grid, [("", 0.0, 0.1), ("AH", 0.1, 0.8)], tier="words2")
    with pytest.raises(ValueError, match="no tier named 'phones'"):
        read_librispeech(libri, alignments=tmp_path / "aligned")
    grid.unlink()
    with pytest.raises(FileNotFoundError, match=r"no TextGrid for .*84-121-0001\.flac"):
        read_librispeech(libri, alignments=tmp_path / "aligned")
    c = read_librispeech(libri, alignments=tmp_path / "aligned", on_missing_alignment="skip")
    assert len(c.utterances) == 3


def test_vctk_092_flac_is_resampled_and_averaged(tmp_path):
    root = tmp_path / "VCTK"
    for spk in ("p225", "p226"):
        (root / "wav48_silence_trimmed" / spk).mkdir(parents=True)
        (root / "txt" / spk).mkdir(parents=True)
        for u in (1, 2):
            x = _tone(48000, 300.0, 48000)
            sf.write(root / "wav48_silence_trimmed" / spk / f"{spk}_{u:03d}_mic1.flac", np.stack([x, x], 1), 48000)
            sf.write(root / "wav48_silence_trimmed" / spk / f"{spk}_{u:03d}_mic2.flac", 0 * x, 48000)
            (root / "txt" / spk / f"{spk}_{u:03d}.txt").write_text("Please call Stella.\n")
    (root / "speaker-info.txt").write_text("ID  AGE  GENDER  ACCENTS  REGION\np225  23  F  English  South\n"
                                           "p226  22  M  English  Surrey\n")
    c = read_vctk(root)
    assert c.speaker_ids == ["p225", "p226"] and c.genders == ["F", "M"] and len(c.utterances) == 4
    assert c.utterances[0].words == ["PLEASE", "CALL", "STELLA"]
    w = c.utterances[0].wav
    assert w.shape == (16000,)
    np.testing.assert_allclose(w[1000:15000], _tone(16000, 300.0, 16000)[1000:15000], atol=2e-3)
    assert np.abs(read_vctk(root, mic="mic2").utterances[0].wav).max() == 0
    (root / "txt" / "p226" / "p226_002.txt").unlink()
    with pytest.raises(ValueError, match=r"no transcript for .*p226_002_mic1\.flac"):
        read_vctk(root)
    with pytest.raises(FileNotFoundError, match="neither"):
        read_vctk(tmp_path)


def test_vctk_080_wav_and_read_audio(tmp_path):
    root = tmp_path / "VCTK-Corpus"
    (root / "wav48" / "p225").mkdir(parents=True)
    (root / "txt" / "p225").mkdir(parents=True)
    wavfile.write(root / "wav48" / "p225" / "p225_001.wav", 48000, (_tone(4800, 500.0, 48000) * 32767).astype(np.int16))
    (root / "txt" / "p225" / "p225_001.txt").write_text("Ask her.")
    c = read_vctk(root)
    assert c.utterances[0].wav.shape == (1600,) and c.utterances[0].wav.dtype == np.float32
    assert 0.25 < np.abs(c.utterances[0].wav).max() < 0.35
    with pytest.raises(FileNotFoundError, match="nope.flac"):
        read_audio(tmp_path / "nope.flac")
    bad = tmp_path / "nan.wav"
    wavfile.write(bad, 16000, np.array([0.0, np.nan], np.float32))
    with pytest.raises(ValueError, match="NaN"):
        read_audio(bad)


def test_flac_without_soundfile_names_the_extra(libri, monkeypatch):
    import sys

    monkeypatch.setitem(sys.modules, "soundfile", None)  # import soundfile -> ImportError
    with pytest.raises(ImportError, match=r"de-antifake\[data\]"):
        read_librispeech(libri)


def test_same_utterance_in_two_formats_is_refused(libri):
    # a chapter converted to WAV beside its FLAC files would otherwise give every utterance twice
    chapter = libri / "dev-clean" / "19" / "121"
    data, sr = sf.read(chapter / "19-121-0000.flac")
    wavfile.write(chapter / "19-121-0000.wav", sr, data.astype(np.float32))
    with pytest.raises(ValueError, match="19-121-0000"):
        read_librispeech(libri)


def test_crop_reindexes_speakers_it_drops(libri):
    # speaker "5" has only a 0.3 s utterance: after crop(0.5) the labels must still be 0..k-1
    chapter = libri / "dev-clean" / "5" / "9"
    chapter.mkdir(parents=True)
    sf.write(chapter / "5-9-0000.flac", _tone(4800, 300.0, 16000), 16000, subtype="PCM_16")
    (chapter / "5-9.trans.txt").write_text("5-9-0000 HI\n")
    full = read_librispeech(libri)
    assert full.speaker_ids == ["19", "5", "84"]
    short = full.crop(0.5)
    assert short.speaker_ids == ["19", "84"] and short.genders == ["F", "M"]
    assert sorted(set(short.labels.tolist())) == [0, 1]
    assert [short.speaker_ids[u.speaker] for u in short.utterances] == [p.parts[-3] for p in short.paths]


def test_vctk_092_textgrids_named_without_the_mic_suffix(tmp_path):
    # alignments of VCTK are often named <spk>_<utt>.TextGrid, as the transcripts are
    root = tmp_path / "VCTK"
    (root / "wav48_silence_trimmed" / "p225").mkdir(parents=True)
    (root / "txt" / "p225").mkdir(parents=True)
    for mic in ("mic1", "mic2"):
        sf.write(root / "wav48_silence_trimmed" / "p225" / f"p225_001_{mic}.flac", _tone(48000, 300.0, 48000), 48000)
    (root / "txt" / "p225" / "p225_001.txt").write_text("Please call Stella.\n")
    _textgrid(tmp_path / "aligned" / "p225" / "p225_001.TextGrid", [("", 0.0, 0.2), ("P", 0.2, 0.5), ("IY1", 0.5, 1.0)])
    for mic in ("mic1", "mic2"):
        c = read_vctk(root, mic=mic, alignments=tmp_path / "aligned")
        assert c.utterances[0].alignment == [("sil", 25), ("P", 37), ("IY", 63)]


def test_max_per_speaker_counts_aligned_utterances_when_skipping(libri, tmp_path):
    (tmp_path / "aligned" / "84" / "121" / "84-121-0000.TextGrid").unlink()
    c = read_librispeech(libri, alignments=tmp_path / "aligned", on_missing_alignment="skip", max_per_speaker=1)
    assert c.speaker_ids == ["19", "84"]  # 84's first utterance has no TextGrid: its second one is taken
    assert [p.name for p in c.paths] == ["19-121-0000.flac", "84-121-0001.flac"]
    assert len(read_librispeech(libri, max_per_speaker=1).utterances) == 2


def test_mfa1_speaker_tier_name_is_found_in_utf16_textgrids(libri, tmp_path):
    grid = tmp_path / "aligned" / "84" / "121" / "84-121-0001.TextGrid"
    _textgrid(grid, [("", 0.0, 0.1), ("AH", 0.1, 0.8)], tier="84 - phones")
    grid.write_bytes(grid.read_text().replace('"hi"', '"héllo"').encode("utf-16"))  # Praat: non-ASCII labels
    c = read_librispeech(libri, alignments=tmp_path / "aligned")
    assert c.utterances[3].alignment == [("sil", 12), ("AH", 88)]
