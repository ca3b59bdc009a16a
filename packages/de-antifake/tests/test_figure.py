"""The demo's spectrogram figure: one dB scale for every panel, labelled axes, a colour bar, no overlaps."""

import matplotlib

matplotlib.use("Agg")

import numpy as np  # noqa: E402
import pytest  # noqa: E402

from de_antifake.experiments import _spectrogram_figure, spectrogram_db  # noqa: E402


def test_spectrogram_db_is_absolute():
    t = np.arange(16000) / 16000
    sine = np.sin(2 * np.pi * 1000 * t)
    assert spectrogram_db(sine).max() == pytest.approx(-3.0, abs=1.5)  # full scale, not normalised per clip
    assert spectrogram_db(0.1 * sine).max() == pytest.approx(spectrogram_db(sine).max() - 20, abs=0.01)
    assert spectrogram_db(np.zeros(4000)).min() == -100.0


def test_panels_share_one_scale_and_are_labelled():
    rng = np.random.default_rng(0)
    clips = {"clean": 0.3 * rng.standard_normal(16000), "quiet": 0.003 * rng.standard_normal(16000),
             "protected": 0.3 * rng.standard_normal(16000)}
    fig = _spectrogram_figure(clips, caption="3 clips, seed 0")
    fig.canvas.draw()
    panels = [ax for ax in fig.axes if ax.images]
    assert len(panels) == 3 and len(fig.axes) == 4  # three spectrograms and one colour bar
    assert len({ax.images[0].get_clim() for ax in panels}) == 1  # one shared scale
    assert all(ax.get_xlabel() == "time (s)" for ax in panels) and panels[0].get_ylabel() == "frequency (kHz)"
    assert "dB" in fig.axes[-1].get_ylabel()
    renderer = fig.canvas.get_renderer()
    boxes = [t.get_window_extent(renderer) for ax in fig.axes
             for t in (ax.title, ax.xaxis.label, ax.yaxis.label) if t.get_text()]
    boxes.append(fig._suptitle.get_window_extent(renderer))
    assert not any(a.overlaps(b) for i, a in enumerate(boxes) for b in boxes[i + 1:])
