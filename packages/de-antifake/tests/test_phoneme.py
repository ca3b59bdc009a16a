"""Phoneme guidance: text_spec shape and segments, determinism of the dictionary, alignments."""

import numpy as np
import pytest

from de_antifake.corpus import HOP, make_corpus, pronounce, read_textgrid
from de_antifake.phoneme import PhonemeSpectra, alignment_from_intervals, alignment_from_words, stft


@pytest.fixture(scope="module")
def spectra(small_corpus):
    return PhonemeSpectra().fit([(u.wav, u.alignment) for u in small_corpus.utterances])


def test_text_spec_shape_and_segments(spectra, small_corpus):
    align = small_corpus.utterances[0].alignment
    spec = spectra.text_spec(align)
    assert spec.shape == (256, sum(d for _, d in align))
    start = 0
    for phone, d in align:
        seg = spec[:, start:start + d]
        np.testing.assert_array_equal(seg, np.repeat(spectra.spectra_[phone][:, None], d, axis=1))
        start += d


def test_average_spectrum_is_the_mean_of_the_phone_frames(small_corpus, spectra):
    import torch

    frames = []
    for u in small_corpus.utterances:
        mag = stft(torch.as_tensor(u.wav, dtype=torch.float64)).abs().numpy()
        assert mag.shape[1] == len(u.wav) // HOP + 1 == sum(u.durations) + 1
        start = 0
        for i, (p, d) in enumerate(u.alignment):
            stop = mag.shape[1] if i == len(u.alignment) - 1 else start + d
            if p == "AH":
                frames.append(mag[:, start:stop])
            start += d
    if frames:
        np.testing.assert_allclose(spectra.spectra_["AH"], np.concatenate(frames, axis=1).mean(axis=1), rtol=1e-10)


def test_dictionary_is_identical_across_runs_for_a_fixed_seed():
    def build(seed):
        c = make_corpus(n_speakers=2, n_utterances=2, seconds=1.5, words_per_utterance=2, random_state=seed)
        return PhonemeSpectra().fit([(u.wav, u.alignment) for u in c.utterances]).spectra_

    a, b, other = build(11), build(11), build(12)
    assert list(a) == list(b) == sorted(a)
    for p in a:
        np.testing.assert_array_equal(a[p], b[p])
    assert any(p not in other or not np.array_equal(a[p], other[p]) for p in a)


def test_alignment_longer_than_audio_and_unknown_phone(spectra):
    with pytest.raises(ValueError, match="only 10"):
        spectra.text_spec_for([("sil", 20)], 10)
    assert spectra.text_spec_for([("sil", 8)], 10).shape == (256, 10)
    # an alignment that stops well before the end of the audio (e.g. 10 ms frames read as 8 ms) is refused
    with pytest.raises(ValueError, match="does not reach the end"):
        spectra.text_spec_for([("sil", 4)], 10)
    with pytest.raises(KeyError, match="ZZ"):
        spectra.text_spec([("ZZ", 3)])
    with pytest.raises(ValueError, match="whole frames"):
        spectra.text_spec([("sil", 0)])


def test_fit_refuses_an_alignment_that_stops_early(small_corpus):
    u = small_corpus.utterances[0]
    PhonemeSpectra().fit([(u.wav, u.alignment)])  # exact alignment: one extra centred frame
    with pytest.raises(ValueError, match="does not reach the end"):
        PhonemeSpectra().fit([(u.wav, u.alignment[:-2])])


def test_unfitted_raises():
    from sklearn.exceptions import NotFittedError

    with pytest.raises(NotFittedError):
        PhonemeSpectra().text_spec([("sil", 1)])


def test_words_and_missing_word():
    align = alignment_from_words(["water", "tree"], 100)
    assert sum(d for _, d in align) == 100 and [p for p, _ in align][1:5] == ["W", "AO", "T", "ER"]
    with pytest.raises(KeyError, match="qwzxv"):
        alignment_from_words(["water", "qwzxv"], 100)
    assert pronounce("Tree") == ["T", "R", "IY"]


def test_textgrid_reader(tmp_path):
    tg = tmp_path / "a.TextGrid"
    tg.write_text('''File type = "ooTextFile"\nObject class = "TextGrid"\nitem [1]:\n class = "IntervalTier"\n'''
                  ''' name = "phones"\n intervals [1]:\n xmin = 0\n xmax = 0.08\n text = ""\n intervals [2]:\n'''
                  ''' xmin = 0.08\n xmax = 0.2\n text = "AH0"\n''')
    iv = read_textgrid(tg)
    assert iv == [("sil", 0.0, 0.08), ("AH", 0.08, 0.2)]
    assert alignment_from_intervals(iv) == [("sil", 10), ("AH", 15)]
    # a tier that starts late or skips time keeps its phones at their times (gaps become sil)
    assert alignment_from_intervals([("AH", 0.08, 0.2), ("T", 0.28, 0.3)]) == [("sil", 10), ("AH", 15),
                                                                               ("sil", 10), ("T", 3)]
    with pytest.raises(ValueError, match="overlaps"):
        alignment_from_intervals([("AH", 0.0, 0.2), ("T", 0.1, 0.3)])
    with pytest.raises(ValueError, match="words"):
        read_textgrid(tg, tier="words")
    with pytest.raises(FileNotFoundError, match="b.TextGrid"):
        read_textgrid(tmp_path / "b.TextGrid")


def test_too_short_clip_is_a_clear_error():
    import torch

    with pytest.raises(ValueError, match="too short"):
        stft(torch.zeros(255))
    assert stft(torch.zeros(256)).shape == (256, 3)


def test_aligner_pause_labels_read_as_silence_and_spoken_noise_is_named(spectra):
    np.testing.assert_array_equal(spectra.text_spec([("sp", 2), ("SIL", 1)]), spectra.text_spec([("sil", 3)]))
    with pytest.raises(KeyError, match="spoken noise"):
        spectra.text_spec([("sil", 2), ("spn", 3)])


def test_textgrid_short_format_and_utf16(tmp_path):
    short = ('File type = "ooTextFile"\nObject class = "TextGrid"\n\n0\n0.3\n<exists>\n2\n"IntervalTier"\n"words"\n'
             '0\n0.3\n1\n0\n0.3\n"a"\n"IntervalTier"\n"phones"\n0\n0.3\n3\n0\n0.08\n""\n0.08\n0.2\n"AH0"\n'
             '0.2\n0.3\n"sp"\n')
    tg = tmp_path / "short.TextGrid"
    tg.write_text(short)
    expect = [("sil", 0.0, 0.08), ("AH", 0.08, 0.2), ("sp", 0.2, 0.3)]
    assert read_textgrid(tg) == expect
    assert read_textgrid(tg, tier="words") == [("a", 0.0, 0.3)]
    wide = tmp_path / "wide.TextGrid"
    wide.write_bytes(short.encode("utf-16"))  # Praat writes UTF-16 (with a byte-order mark) for non-ASCII labels
    assert read_textgrid(wide) == expect
    with pytest.raises(ValueError, match=r"tiers: \['phones', 'words'\]"):
        read_textgrid(tg, tier="segments")
    broken = tmp_path / "broken.TextGrid"
    broken.write_text(short.rsplit("\n", 5)[0])
    with pytest.raises(ValueError, match="short text format"):
        read_textgrid(broken)
    binary = tmp_path / "bin.TextGrid"
    binary.write_bytes(b"ooBinaryFile\x08TextGrid\x00\x01")
    with pytest.raises(ValueError, match="not a Praat TextGrid in text format"):
        read_textgrid(binary)


_LONG = '''File type = "ooTextFile"
Object class = "TextGrid"

xmin = 0
xmax = 0.3
tiers? <exists>
size = 3
item []:
    item [1]:
        class = "IntervalTier"
        name = "words"
        xmin = 0
        xmax = 0.3
        intervals: size = 2
        intervals [1]:
            xmin = 0
            xmax = 0.1
            text = "say ""hi"" name = "
        intervals [2]:
            xmin = 0.1
            xmax = 0.3
            text = "1990"
    item [2]:
        class = "TextTier"
        name = "clicks"
        xmin = 0
        xmax = 0.3
        points: size = 1
        points [1]:
            number = 0.15
            mark = "click"
    item [3]:
        class = "IntervalTier"
        name = "phones"
        xmin = 0
        xmax = 0.3
        intervals: size = 2
        intervals [1]:
            xmin = 0
            xmax = 0.08
            text = ""
        intervals [2]:
            xmin = 0.08
            xmax = 0.3
            text = "AH0"
'''


def test_textgrid_labels_are_read_whole_in_either_format_and_point_tiers_are_refused(tmp_path):
    short = ('File type = "ooTextFile"\nObject class = "TextGrid"\n\n0\n0.3\n<exists>\n3\n"IntervalTier"\n"words"\n'
             '0\n0.3\n2\n0\n0.1\n"say ""hi"" name = "\n0.1\n0.3\n"1990"\n"TextTier"\n"clicks"\n0\n0.3\n1\n0.15\n'
             '"click"\n"IntervalTier"\n"phones"\n0\n0.3\n2\n0\n0.08\n""\n0.08\n0.3\n"AH0"\n')
    for name, text in (("long", _LONG), ("short", short), ("crlf", _LONG.replace("\n", "\r\n"))):
        tg = tmp_path / f"{name}.TextGrid"
        tg.write_bytes(text.encode("utf-8-sig"))  # a byte-order mark, as some editors write
        # a doubled quote is one quote, 'name = ' inside a label starts no tier, digits of a word are kept
        assert read_textgrid(tg, tier="words") == [('say "hi" name =', 0.0, 0.1), ("1990", 0.1, 0.3)], name
        assert read_textgrid(tg) == [("sil", 0.0, 0.08), ("AH", 0.08, 0.3)], name
        with pytest.raises(ValueError, match="'clicks' is a point tier"):
            read_textgrid(tg, tier="clicks")


def test_textgrid_times_must_run_forwards_and_latin1_files_are_read(tmp_path):
    def grid(intervals, label="AH0"):
        body = "".join(f" intervals [{i + 1}]:\n xmin = {a}\n xmax = {b}\n text = \"{lab}\"\n"
                       for i, (lab, a, b) in enumerate(intervals))
        return ('File type = "ooTextFile"\nObject class = "TextGrid"\nitem [1]:\n class = "IntervalTier"\n'
                f' name = "phones"\n{body}')

    tg = tmp_path / "t.TextGrid"
    for bad, where in (([("", 0, 0.08), ("AH0", 0.2, 0.1)], "interval 1"),     # ends before it starts
                       ([("", -0.05, 0.08)], "interval 0"),                     # before 0 s
                       ([("", 0, 0.2), ("AH0", 0.1, 0.3)], "interval 1"),       # overlaps the previous one
                       ([("AH0", 0.2, 0.3), ("", 0, 0.2)], "interval 1")):      # out of order
        tg.write_text(grid(bad))
        with pytest.raises(ValueError, match=f"{where} .* does not run forwards"):
            read_textgrid(tg)
    tg.write_text(grid([("", 0, 0.08), ("AH0", 0.08, 0.2), ("T", 0.25, 0.3)]))  # a gap is allowed
    assert read_textgrid(tg)[-1] == ("T", 0.25, 0.3)
    # Praat writes ISO Latin-1 where every character fits: the word reads as written, not as U+FFFD
    words = ('File type = "ooTextFile"\nObject class = "TextGrid"\nitem [1]:\n class = "IntervalTier"\n'
             ' name = "words"\n intervals [1]:\n xmin = 0\n xmax = 0.3\n text = "caf\u00e9"\n')
    tg.write_bytes(words.encode("latin-1"))
    assert read_textgrid(tg, tier="words") == [("caf\u00e9", 0.0, 0.3)]
