"""Shared fixtures: a small synthetic corpus and the pretrained GE2E encoder, built once per test run."""

import pytest


@pytest.fixture(scope="session")
def small_corpus():
    from de_antifake.corpus import make_corpus

    return make_corpus(n_speakers=4, n_utterances=3, seconds=1.5, words_per_utterance=2, random_state=3)


@pytest.fixture(scope="session")
def ge2e():
    from de_antifake.encoder import ResemblyzerEncoder

    return ResemblyzerEncoder.from_pretrained()


@pytest.fixture(scope="session")
def ge2e_raw():
    """The bare network (no loudness normalisation, no silence trimming), as resemblyzer's VoiceEncoder."""
    from de_antifake.encoder import ResemblyzerEncoder

    return ResemblyzerEncoder.from_pretrained(level_dbfs=None, trim_silence=False)
