"""The torch GE2E encoder against the ``resemblyzer`` wheel: mel front end, embeddings, gradients."""

import warnings

import numpy as np
import pytest
import torch

from de_antifake.encoder import MelFrontEnd, ResemblyzerEncoder, eer_threshold, slaney_mel_filterbank

with warnings.catch_warnings():
    warnings.simplefilter("ignore")  # webrtcvad 2.0.10 imports pkg_resources
    resemblyzer = pytest.importorskip("resemblyzer")
    from resemblyzer.audio import preprocess_wav, wav_to_mel_spectrogram


def _inputs(small_corpus):
    rng = np.random.default_rng(0)
    speech = preprocess_wav(small_corpus.utterances[0].wav)
    noise = (0.05 * rng.standard_normal(23_456)).astype(np.float32)
    return [speech, noise]


def test_mel_filterbank_equals_librosa():
    import librosa

    ours = slaney_mel_filterbank(16000, 400, 40)
    ref = librosa.filters.mel(sr=16000, n_fft=400, n_mels=40)
    np.testing.assert_allclose(ours, ref, rtol=1e-5, atol=1e-9)


def test_mel_front_end_equals_resemblyzer(small_corpus):
    front = MelFrontEnd()
    for wav in _inputs(small_corpus):
        ref = wav_to_mel_spectrogram(wav)
        ours = front(torch.from_numpy(wav)).numpy()
        assert ours.shape == ref.shape
        rel = np.max(np.abs(ours - ref)) / np.max(np.abs(ref))
        assert rel < 1e-4, rel


def test_embedding_equals_voice_encoder(small_corpus, ge2e_raw):
    # VoiceEncoder.embed_utterance embeds the samples as given: compare the bare network
    ge2e = ge2e_raw
    peer = resemblyzer.VoiceEncoder(device="cpu", verbose=False)
    for wav in _inputs(small_corpus):
        ref = peer.embed_utterance(wav)
        ours = ge2e.embed_utterance(wav, 16000)
        assert float(ref @ ours) >= 0.9999
        np.testing.assert_allclose(ours, ref, atol=2e-4)
    # the partial slicing is the peer's for short, exact and long inputs
    for n in (8_000, 16_000, 25_600, 41_000):
        ours = [(s.start, s.stop) for s in ge2e.partial_slices(n)]
        _, mel_slices = peer.compute_partial_slices(n, 1.3, 0.75)
        assert ours == [(s.start, s.stop) for s in mel_slices]


def test_gradient_reaches_the_waveform(small_corpus, ge2e):
    wav = torch.from_numpy(small_corpus.utterances[1].wav).requires_grad_(True)
    target = torch.from_numpy(ge2e.embed_utterance(small_corpus.utterances[-1].wav, 16000))
    (ge2e.embed(wav) @ target).backward()
    g = wav.grad
    assert torch.isfinite(g).all() and g.abs().max() > 0
    # the gradient is the derivative: a small step along it raises the score by about |g|^2 * h
    h = 1e-3 / float(g.norm())
    with torch.no_grad():
        up = float(ge2e.embed(wav + h * g) @ target) - float(ge2e.embed(wav) @ target)
    assert up == pytest.approx(h * float(g.norm()) ** 2, rel=0.2)


def test_batched_embedding_equals_single(small_corpus, ge2e):
    x = torch.from_numpy(np.stack([u.wav for u in small_corpus.utterances[:3]]))
    batch = ge2e.embed(x)
    for i in range(3):
        torch.testing.assert_close(batch[i], ge2e.embed(x[i]), atol=1e-5, rtol=1e-5)


def test_same_speaker_scores_higher(small_corpus, ge2e):
    emb = np.stack([ge2e.embed_utterance(u.wav, 16000) for u in small_corpus.utterances])
    lab = small_corpus.labels
    s = emb @ emb.T
    same = s[(lab[:, None] == lab[None]) & ~np.eye(len(lab), dtype=bool)]
    diff = s[lab[:, None] != lab[None]]
    assert same.mean() > diff.mean() + 0.05


def test_missing_weights_file_names_the_path(tmp_path):
    with pytest.raises(FileNotFoundError, match="nowhere.pt"):
        ResemblyzerEncoder.from_pretrained(tmp_path / "nowhere.pt")


def test_eer_threshold_separable_and_overlapping():
    thr, eer = eer_threshold([0.9, 0.8], [0.1, 0.2])
    assert eer == 0.0 and 0.2 < thr <= 0.8
    with pytest.raises(ValueError):
        eer_threshold([], [0.1])


def test_embed_takes_float64_and_numpy_as_float32(small_corpus, ge2e):
    wav = small_corpus.utterances[0].wav
    ref = ge2e.embed(torch.from_numpy(wav))
    x64 = torch.from_numpy(wav.astype(np.float64)).requires_grad_(True)
    e64 = ge2e.embed(x64)
    torch.testing.assert_close(e64, ref, atol=1e-6, rtol=1e-6)
    e64.sum().backward()  # the gradient reaches the float64 samples
    assert x64.grad is not None and x64.grad.dtype == torch.float64 and x64.grad.abs().max() > 0
    torch.testing.assert_close(ge2e.embed(wav.astype(np.float64)), ref, atol=1e-6, rtol=1e-6)
    rev = wav[::-1]  # a reversed view (negative strides) is read like its copy
    torch.testing.assert_close(ge2e.embed(rev), ge2e.embed(rev.copy()))


@pytest.mark.parametrize("bad, match", [
    (torch.zeros(16000, dtype=torch.int16), "integer"),
    (np.zeros(16000, dtype=np.int16), "integer"),
    (torch.tensor([0.1] * 8000 + [float("nan")] * 10), "NaN"),
    (torch.tensor([0.1] * 8000 + [float("inf")]), "NaN"),
    (torch.zeros(2, 0), "empty"),
    (torch.zeros(1, 2, 16000), "shape"),
    (torch.zeros(16000, dtype=torch.complex64), "complex"),
])
def test_embed_refuses_pcm_nan_empty_and_3d(ge2e, bad, match):
    with pytest.raises(ValueError, match=match):
        ge2e.embed(bad)


@pytest.mark.parametrize("rate", [0, 0.0, float("nan"), float("inf"), -1.3])
def test_partial_rate_must_be_positive(ge2e, rate):
    with pytest.raises(ValueError, match="rate"):
        ge2e.partial_slices(32000, rate=rate)
