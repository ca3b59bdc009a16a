"""Level-invariant embeddings and protection: a quiet copy of a clip is the same voice."""

import numpy as np
import pytest
import torch

from de_antifake import attackvc
from de_antifake.encoder import ResemblyzerEncoder, speech_bounds


@pytest.mark.parametrize("scale", [0.1, 0.03])
def test_a_quieter_copy_gets_the_same_embedding(small_corpus, ge2e, ge2e_raw, scale):
    wav = small_corpus.utterances[0].wav
    loud = ge2e.embed_utterance(wav, 16000)
    assert float(loud @ ge2e.embed_utterance(scale * wav, 16000)) >= 0.99
    # the bare network is level-dependent: this is what the default front end removes
    assert float(ge2e_raw.embed_utterance(wav, 16000) @ ge2e_raw.embed_utterance(scale * wav, 16000)) < 0.9


def test_leading_and_trailing_silence_is_trimmed(small_corpus, ge2e, ge2e_raw):
    wav = small_corpus.utterances[1].wav
    a, b = speech_bounds(wav)
    padded = np.concatenate([np.zeros(8000, np.float32), wav[a:b], np.zeros(16000, np.float32)])
    assert speech_bounds(padded) == (8000, 8000 + b - a)
    assert speech_bounds(0.01 * padded) == speech_bounds(padded)  # the threshold is relative
    e = ge2e.embed_utterance(wav[a:b], 16000)
    assert float(e @ ge2e.embed_utterance(padded, 16000)) >= 0.999
    raw = ge2e_raw.embed_utterance(wav[a:b], 16000)
    assert float(raw @ ge2e_raw.embed_utterance(padded, 16000)) < float(e @ ge2e.embed_utterance(padded, 16000))


def test_batches_of_different_speech_lengths_embed_row_by_row(small_corpus, ge2e):
    wav = small_corpus.utterances[2].wav
    batch = np.stack([wav, np.concatenate([np.zeros(4000, np.float32), wav[:-4000]])])
    together = ge2e.embed(torch.from_numpy(batch))
    alone = torch.stack([ge2e.embed(torch.from_numpy(row)) for row in batch])
    assert torch.allclose(together, alone, atol=1e-6)


def test_the_attack_works_on_quiet_clips(small_corpus, ge2e):
    wav, other = small_corpus.utterances[0].wav, small_corpus.utterances[3].wav
    target = ge2e.embed_utterance(other, 16000)
    moved = {}
    for scale in (1.0, 0.1):
        x = (scale * wav).astype(np.float32)
        adv = attackvc(x, target, eps=0.01, encoder=ge2e, iters=10)
        before, after = ge2e.embed_utterance(x, 16000) @ target, ge2e.embed_utterance(adv, 16000) @ target
        moved[scale] = float(after - before)
    assert moved[1.0] > 0.05
    assert moved[0.1] == pytest.approx(moved[1.0], abs=0.03)  # the raw network left quiet clips where they were


def test_bad_inputs_are_named(small_corpus, ge2e):
    wav = small_corpus.utterances[0].wav
    with pytest.raises(ValueError, match="target embeddings have 8 values but the encoder embeds into 256"):
        attackvc(wav, np.ones(8), eps=0.01, encoder=ge2e, iters=1)
    with pytest.raises(ValueError, match="level_dbfs"):
        ResemblyzerEncoder(hidden_size=4, embedding_size=4, num_layers=1, level_dbfs=6.0)
    with pytest.raises(TypeError, match="trim_silence"):
        ResemblyzerEncoder(hidden_size=4, embedding_size=4, num_layers=1, trim_silence="yes")


def test_clips_too_short_for_the_zero_phase_filters_are_named():
    from de_antifake import BandPassPurifier, LowPassPurifier

    for purifier, padlen in ((LowPassPurifier(), 21), (BandPassPurifier(), 27)):  # scipy's sosfiltfilt padlen
        with pytest.raises(ValueError, match=f"{type(purifier).__name__}: a waveform of {padlen} samples is too short"):
            purifier.purify(np.zeros(padlen, np.float32), 16000)
        assert purifier.purify(np.zeros(padlen + 1, np.float32), 16000).shape == (padlen + 1,)
