"""The synthesiser's input checks: durations are whole frames."""

import numpy as np
import pytest

from de_antifake.corpus import HOP, SpeakerParams, synthesize

VOICE = SpeakerParams(f0=120.0, formant_scale=1.0, tilt=0.5, jitter=0.01, shimmer=0.05, breathiness=0.1)


@pytest.mark.parametrize("durations, match", [([2.5], "whole"), ([np.nan], "whole"), ([0], "at least one")])
def test_durations_must_be_whole_positive_frames(durations, match):
    # a fractional duration was floored: the audio then no longer matched the caller's alignment
    with pytest.raises(ValueError, match=match):
        synthesize(["AH"], durations, VOICE, random_state=0)


def test_integral_floats_and_numpy_ints_are_frames():
    a = synthesize(["sil", "AH"], [2.0, np.int64(3)], VOICE, random_state=0)
    b = synthesize(["sil", "AH"], [2, 3], VOICE, random_state=0)
    assert a.shape == (5 * HOP,) and np.array_equal(a, b)
    with pytest.raises(ValueError, match="no phonemes"):
        synthesize([], [], VOICE)
